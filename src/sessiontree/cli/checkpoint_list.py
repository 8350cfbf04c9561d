"""``checkpoints``: a session's file checkpoints, per prompt."""

from __future__ import annotations

import click
from rich.markup import escape

from sessiontree.checkpoints.read import checkpoint_as_json, outside_project, read_checkpoints
from sessiontree.cli.output import console, emit_json, get_env, json_option
from sessiontree.cli.read import open_session, session_argument
from sessiontree.views.text import printable
from sessiontree.views.times import local_time


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
    for row in rows:
        when = local_time(row["timestamp"])
        out.print(f"[bold]{escape(row['messageId'][:8])}[/] {escape(when)}")
        for path, backup in row["files"].items():
            if "damage" in backup:  # shown quoted: a newline in it must not fake a row
                out.print(f"  [red]! damaged, never restored:[/] {escape(backup['damage'])}")
                continue
            name = backup["backupFileName"] or "(did not exist)"
            note = ""
            if outside_project(path, [transcript.cwd] if transcript.cwd else []):
                note = "  [yellow](outside the project: restore skips it unless --allow-outside)[/]"
            shown = f"{escape(printable(path))}  v{backup['version']}  {escape(printable(name))}"
            out.print(f"  {shown}{note}")
