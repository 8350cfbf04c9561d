"""``checkpoints``: a session's file checkpoints, per prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from sessiontree.checkpoints.read import checkpoint_as_json, outside_project, read_checkpoints
from sessiontree.cli.output import console, emit_json, get_env, json_option
from sessiontree.cli.read import open_session, session_argument
from sessiontree.views.text import printable
from sessiontree.views.times import local_time

if TYPE_CHECKING:
    from rich.console import Console


@click.command()
@session_argument
@json_option
def checkpoints(session: str, as_json: bool) -> None:
    """File checkpoints per prompt (snapshots with deltas folded in), oldest first."""
    transcript = open_session(session)
    rows = [checkpoint_as_json(c) for c in read_checkpoints(transcript)]
    if as_json:
        emit_json([{**row, "sessionId": transcript.session_id} for row in rows])
        return
    out = console(get_env(reads_store=True))
    if not rows:
        out.print("no file checkpoints in this session")
    cwd = [transcript.cwd] if transcript.cwd else []
    for row in rows:
        when = local_time(row["timestamp"])
        out.print(f"[bold]{escape(row['messageId'][:8])}[/] {escape(when)}")
        _print_files(out, row["files"], cwd)


#: What a file outside the project says (``restore`` leaves it alone).
_OUTSIDE = "(outside the project: restore skips it unless --allow-outside)"


def _print_files(out: Console, files: dict[str, dict[str, Any]], cwd: list[str]) -> None:
    """A checkpoint's files, a line each, fitting the console: the file (its end, when
    cut: ``…/src/a.py``), its version and its backup (whole: the name ``restore`` reads);
    a file outside the project says so after them, a damaged entry on a line of its own."""
    from rich.cells import cell_len
    from rich.padding import Padding
    from rich.table import Table

    from sessiontree.views.cells import fit, fit_left

    entries = [
        (
            printable(path),
            f"v{b['version']}",
            printable(b["backupFileName"] or "(did not exist)"),
            outside_project(path, cwd) is not None,
        )
        for path, b in files.items()
        if "damage" not in b
    ]
    if entries:
        version = max(cell_len(e[1]) for e in entries)
        backup = max(cell_len(e[2]) for e in entries)
        any_outside = any(e[3] for e in entries)
        # the file and the note (when a file is outside) share what is left, the file first
        room = max(out.width - 2 - version - backup - 2 * (3 if any_outside else 2), 12)
        file_width = min(room, max(cell_len(e[0]) for e in entries))
        table = Table(box=None, pad_edge=False, show_header=False)
        table.add_column(no_wrap=True, width=file_width)
        table.add_column(no_wrap=True, width=version)
        table.add_column(no_wrap=True, width=backup)
        note_width = max(room - file_width, 12)
        if any_outside:
            table.add_column(no_wrap=True, width=min(note_width, cell_len(_OUTSIDE)))
        for path, shown_version, name, away in entries:
            cells = [escape(fit_left(path, file_width)), escape(shown_version), escape(name)]
            if any_outside:
                cells.append(f"[yellow]{escape(fit(_OUTSIDE, note_width))}[/]" if away else "")
            table.add_row(*cells)
        out.print(Padding(table, (0, 0, 0, 2), expand=False))
    for backup_entry in files.values():
        if "damage" in backup_entry:  # shown quoted: a newline in it must not fake a row
            damage = escape(backup_entry["damage"])
            out.print(f"  [red]! damaged, never restored:[/] {damage}", soft_wrap=False)
