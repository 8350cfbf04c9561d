"""A byte count for people, one rule for every face (the CLI's tables and lines, the web
viewer's pages): powers of 1024, named ``B``, ``KB``, ``MB``, ``GB`` as the Claude Code
client names them (``81.8 KB`` is 81.8 × 1024 bytes)."""

from __future__ import annotations


def format_size(n: int) -> str:
    """A byte count for people: ``512 B``, ``1.5 KB``, ``3.2 MB``."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
