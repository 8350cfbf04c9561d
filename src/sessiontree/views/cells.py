"""Text cut to a number of terminal cells (a wide character takes two), for the tables
and lines that fit the console. Only the outputs for people import it (rich)."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size


def fit(text: str, cells: int) -> str:
    """Plain ``text`` cut to ``cells`` terminal cells, its end replaced by ``…`` when cut."""
    if cell_len(text) <= cells:
        return text
    return set_cell_size(text, max(cells - 1, 0)) + "…"


def fit_left(text: str, cells: int) -> str:
    """``text`` cut to ``cells`` terminal cells from its start (``…`` first): what a
    path shows of itself when cut, its last folders and its name (from a ``/`` when
    one is kept: ``…/weather-cli``, not ``…ts/weather-cli``)."""
    if cell_len(text) <= cells:
        return text
    kept = ""
    for char in reversed(text):
        if cell_len(char + kept) > cells - 1:
            break
        kept = char + kept
    slash = kept.find("/", 1)
    return "…" + (kept[slash:] if slash > 0 else kept)
