"""``history``: what was typed, pastes expanded."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from sessiontree.cli.output import console, emit_json, get_env, json_option
from sessiontree.history.log import iter_history
from sessiontree.views.text import printable
from sessiontree.views.times import iso_time, local_time


@click.command()
@click.option("--project", type=click.Path(path_type=Path), help="Only prompts typed in PATH.")
@click.option("--search", "text", help="Only prompts containing TEXT (case-insensitive).")
@json_option
def history(project: Path | None, text: str | None, as_json: bool) -> None:
    """What you typed, across projects, with pasted texts expanded."""
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
    for entry in entries:
        when = local_time(entry.timestamp)
        # A pasted log's escapes are shown, never sent to the terminal (--json: as typed).
        out.print(f"[dim]{when}[/] {escape(printable(entry.project or ''))}")
        out.print(f"  {escape(printable(entry.text))}")
