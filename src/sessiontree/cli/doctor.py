"""``doctor``: what is wrong with a store or a session (the library's checks, printed)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

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
from sessiontree.model.records import Problem
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
        shown, not_sessions = _for_people(found.problems)
        for item in shown:
            if isinstance(item, str):
                out.print(f"  … {escape(printable(item))}")
                continue
            where = f"{item.path}:{item.line}" if item.line else item.path
            # A file's name or a line's text may hold escapes: shown, never acted on.
            detail = f"{escape(printable(where))}: {escape(printable(item.detail))}"
            out.print(f"[yellow]{item.kind}[/] {detail}")
        tally = f"{len(found.transcripts)} transcript(s) checked, {len(found.problems)} problem(s)"
        if not_sessions:
            tally += (
                f" ({not_sessions} in the lines of files that hold no conversation, not listed:"
                " --json lists them)"
            )
        out.print(tally)
    if not found.ok:
        raise SystemExit(1)


#: Problems of one kind in one file listed for people; the rest are counted in a line.
SHOWN_PER_KIND = 10


def _for_people(problems: Sequence[Problem]) -> tuple[list[Problem | str], int]:
    """What ``doctor`` prints for people, in order: each problem, but none of the lines of
    a file that holds no conversation (a binary file would be a line per line: that it
    is no transcript is said once), and of one kind in one file only the first
    :data:`SHOWN_PER_KIND`, then ``N more KIND in PATH``; and how many were left out
    for holding no conversation. ``--json`` lists them all."""
    not_sessions = {p.path for p in problems if p.kind == "not-a-session"}
    counts = Counter((p.path, p.kind) for p in problems)
    seen: Counter[tuple[str, str]] = Counter()
    shown: list[Problem | str] = []
    hidden = 0
    for p in problems:
        if p.path in not_sessions and p.line is not None:
            hidden += 1
            continue
        key = (p.path, p.kind)
        seen[key] += 1
        if seen[key] <= SHOWN_PER_KIND:
            shown.append(p)
        if seen[key] == SHOWN_PER_KIND and counts[key] > SHOWN_PER_KIND:
            more = counts[key] - SHOWN_PER_KIND
            shown.append(f"{more} more {p.kind} in {p.path} (--json lists them)")
    return shown, hidden
