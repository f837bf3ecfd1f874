"""Typed access to the facts tables in data/ (drivers, torch variants, architectures)."""
