"""``doctor``: what is wrong with a store or a session (the library's checks, printed)."""

from __future__ import annotations

import click
from rich.markup import escape

from sessiontree.cli.output import (
    console,
    emit_json,
    get_env,
    json_option,
    progress_callback,
    resolve,
)
from sessiontree.doctor import StoreCheck, check_store, check_transcript
from sessiontree.views.text import printable


@click.command()
@click.argument("session", required=False, metavar="[SESSION]")
@json_option
def doctor(session: str | None, as_json: bool) -> None:
    """Check transcripts for torn lines, bad JSON, broken links, missing backups and
    files that hold no conversation (without SESSION, also stale sessions/<pid>.json
    entries and missing pastes)."""
    env = get_env()
    if session is None:
        with progress_callback(env, "checking") as report:
            found = check_store(env.layout, cache_file=env.cache_file, on_progress=report)
    else:
        path = resolve(env, session)
        found = StoreCheck((path,), tuple(check_transcript(path, layout=env.layout)))
    if as_json:
        emit_json(found.as_json())
    else:
        out = console(env)
        for p in found.problems:
            where = f"{p.path}:{p.line}" if p.line else p.path
            # A file's name or a line's text may hold escapes: shown, never acted on.
            out.print(
                f"[yellow]{p.kind}[/] {escape(printable(where))}: {escape(printable(p.detail))}"
            )
        out.print(
            f"{len(found.transcripts)} transcript(s) checked, {len(found.problems)} problem(s)"
        )
    if not found.ok:
        raise SystemExit(1)
