"""Renderers: pure functions from snapshots, findings and plans to text, JSON or Markdown."""
