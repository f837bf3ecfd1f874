"""Probes: each reads one part of the machine through a Host (``probe_*``) beside pure parsers (``parse_*``)."""
