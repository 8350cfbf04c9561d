"""``history``: what was typed, pastes expanded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from sessiontree.cli.output import console, emit_json, get_env, json_option
from sessiontree.history.log import HistoryEntry, iter_history
from sessiontree.views.text import printable
from sessiontree.views.times import iso_time, local_time

if TYPE_CHECKING:
    from rich.console import Console


@click.command()
@click.option("--project", type=click.Path(path_type=Path), help="Only prompts typed in PATH.")
@click.option("--search", "text", help="Only prompts containing TEXT (case-insensitive).")
@json_option
def history(project: Path | None, text: str | None, as_json: bool) -> None:
    """What you typed, across projects, newest first, with pasted texts expanded: each
    prompt on one line with its session and project (--json: oldest first, whole)."""
    env = get_env(reads_store=True)
    where = str(project.resolve()) if project else None
    if env.store is not None:
        from sessiontree.cli.stored import stored_history

        lines, paste = stored_history(env)
        entries = list(iter_history(None, project=where, search=text, lines=lines, paste=paste))
    else:
        entries = list(iter_history(env.layout, project=where, search=text))
    if as_json:
        emit_json([{**e.as_json(), "time": iso_time(e.timestamp)} for e in entries])
        return
    out = console(env)
    if not entries:
        out.print("no history entries" + (" matching" if text else ""))
        return
    _print_table(out, entries)


#: The characters of a session id shown.
_SHORT_ID = 8
#: Entries printed per write.
_BATCH = 256


def _print_table(out: Console, entries: list[HistoryEntry]) -> None:
    """The entries newest first (the log's order reversed, for equal times), one line
    each: when, the session (short id), the project (its end, when cut) and what was
    typed on one line, cut to the room left with an ellipsis (``--json`` has it whole).
    A pasted log's escapes are shown, never sent to the terminal (--json: as typed)."""
    from rich.cells import cell_len, set_cell_size

    from sessiontree.views.cells import fit, fit_left

    # (by time, then the later in the log first: what was appended last)
    order = sorted(range(len(entries)), key=lambda i: (entries[i].timestamp or 0, i))
    newest = [entries[i] for i in reversed(order)]
    rows = [
        (
            local_time(e.timestamp),
            printable(e.session_id or "")[:_SHORT_ID],
            " ".join(printable(e.project or "").split()),
            " ".join(printable(e.text[:2000]).split()),
        )
        for e in newest
    ]
    names = ("time", "session", "project", "prompt")
    natural = [
        max([cell_len(name), *(cell_len(row[i]) for row in rows)]) for i, name in enumerate(names)
    ]
    room = max(out.width - natural[0] - natural[1] - 2 * 3, 20)
    project = min(natural[2], max(10, room // 3))
    widths = [natural[0], natural[1], project, max(room - project, 10)]
    cut = (fit, fit, fit_left, fit)

    def line(cells: tuple[str, ...]) -> str:
        shown = [
            set_cell_size(c(cell, w), w) for c, cell, w in zip(cut, cells, widths, strict=True)
        ]
        return "  ".join(shown).rstrip()

    # Lines, not a rich Table: a history of thousands is printed as it is laid out, a
    # batch at a time (a reader gone, `| head`, is seen at the next write).
    out.print(line(names), markup=False)
    for at in range(0, len(rows), _BATCH):
        out.print("\n".join(line(row) for row in rows[at : at + _BATCH]), markup=False)
