"""``prompts`` for people: the number of each active-path prompt, and text made safe."""

from __future__ import annotations

import io

from rich.console import Console

from sessiontree.views.terminal import render_prompts


def _row(text: str, number: int | None) -> dict[str, object]:
    return {
        "uuid": "85015099-1e4a-4000-8000-000000000002",
        "text": text,
        "timestamp": "2026-01-01T00:00:01Z",
        "onActivePath": number is not None,
        "checkpoint": False,
        "compacted": False,
        "number": number,
    }


def test_rows_show_their_number_and_escape_what_acts_on_a_terminal() -> None:
    out = Console(width=100, record=True, color_system=None, file=io.StringIO())
    rows = [_row("red \x1b[31mtext\x1b]0;title\x07 [bold]x[/]\u202eevil", 1), _row("old", None)]
    render_prompts(out, rows)
    shown = out.export_text()
    lines = shown.splitlines()
    assert lines[1].split()[:3] == ["1", "●", "85015099"]
    assert lines[2].split()[:2] == ["○", "85015099"]
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "\\x1b[31mtext\\x1b]0;title\\x07 [bold]x[/]\\u202eevil" in shown
