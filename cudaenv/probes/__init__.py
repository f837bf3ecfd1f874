"""Probes: each reads one part of the machine through a Host (``probe_*``) beside pure parsers (``parse_*``): one
module per fact (platform, nvidia, visibility, cudnn, python, torch and its child, env, the package databases,
ld.so.conf, site-packages, the calling process), toolkit discovery in ``toolkits/``, paths as the inspected system
writes them (``paths``), and ``collect``, which runs them all into a Snapshot. Only a capability's service imports
them."""
