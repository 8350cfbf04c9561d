"""Thin I/O: where files are (layout) and how JSON Lines are read and appended (jsonl)."""
