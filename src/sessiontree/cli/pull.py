"""``sessiontree pull SESSION [--project PATH]``: a stored session written where the
client looks for it, so that ``claude --resume`` goes on with it here."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sessiontree.cli.output import console, emit_json, format_size, get_env, json_option
from sessiontree.errors import Ambiguous, DataError, Refused
from sessiontree.views.text import printable

if TYPE_CHECKING:
    from sessiontree.catalog.stored import StoredInfo
    from sessiontree.storage.layout import Layout

#: A session the store saw grow this recently on another machine may still be written
#: there: two clients going on with one session on two machines would diverge.
LIVE_SECONDS = 10 * 60


@click.command()
@click.argument("session", metavar="SESSION")
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Put the session under this project folder (absolute or relative to here) and "
    "rewrite the paths its lines name under the old one (cwd, checkpoints, tool inputs).",
)
@click.option("--machine", metavar="NAME", help="The session as this machine synced it.")
@click.option(
    "--force",
    is_flag=True,
    help="Pull even when a client may still be writing the session (here, or on the "
    "machine that synced it in the last ten minutes).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@json_option
def pull(
    session: str,
    project: Path | None,
    machine: str | None,
    force: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Write a stored session (--store) into this config root (--root) where the client
    looks for it: its transcript, subagents, tool results and the backups its
    checkpoints name, each file safely (temp file, fsync, rename; mtime the last
    record's time). --project PATH moves it to another project folder, the paths under
    the old one rewritten (those lines the only difference, counted in --json). A copy
    here the store's version goes on from is fast-forwarded; one that went on beyond it
    is left (sync it); if both went on, pull refuses. --json:
    {sessionId, machine, path, project, originalProject, action, lines, rewritten,
    bytes, files}."""
    env = get_env(reads_store=True)
    if env.store is None:
        raise click.UsageError("pull needs a store: give --store DSN or set $SESSIONTREE_STORE")
    from sessiontree.cli.stored import run_connection
    from sessiontree.cli.sync import known_machine_ids
    from sessiontree.lifecycle.live import live_session_ids
    from sessiontree.storage.store.connect import failures_as_store_errors
    from sessiontree.storage.store.reads import last_grown
    from sessiontree.sync.pull import apply_pull, plan_pull

    conn = run_connection(env)
    with failures_as_store_errors(env.store):
        found = _newest(conn, session, machine)
    source = found.source
    where = None if project is None else str(project.expanduser().resolve())
    here = _local_copy(env.layout, found.info.sessionId) if where is None else None
    if here is not None:
        where = here[1]
    with failures_as_store_errors(env.store):
        plan = plan_pull(conn, source, env.layout, cwd=found.info.cwd, project=where,
                         target=None if here is None else here[0])  # fmt: skip
        age = last_grown(conn, source)
    sid = plan.session_id
    if plan.action == "diverged":
        raise Refused(
            f"{sid} went on both here ({socket.gethostname()}) and on {found.machine}: "
            "pull overwrites neither "
            f"({printable(str(plan.transcript))} differs from the store's copy)"
        )
    if not force and plan.action in ("new", "fast-forward"):
        if sid in live_session_ids(env.layout):
            raise Refused(f"a client here holds {sid} open: pull would write under it (--force)")
        elsewhere = source.machine_id not in known_machine_ids(env)
        if elsewhere and age < LIVE_SECONDS:
            said = (
                f"{found.machine} synced {sid} {age / 60:.0f} min ago: a client there may "
                "still be writing it"
            )
            if as_json or dry_run or not sys.stdin.isatty():
                if not dry_run:
                    raise Refused(f"{said} (--force pulls anyway)")
            elif not click.confirm(f"{said}. Pull anyway?", default=False, err=True):
                raise click.exceptions.Exit(1)
    if not dry_run and plan.action in ("new", "fast-forward"):
        with failures_as_store_errors(env.store):
            apply_pull(conn, source, env.layout, plan)
    if as_json:
        emit_json({**plan.as_json(), "dryRun": dry_run})
        return
    out = console(env)
    verb = {"new": "wrote", "fast-forward": "fast-forwarded"}.get(plan.action)
    if verb is None:
        said = {
            "up-to-date": "already here as the store has it",
            "local-ahead": "here it went on beyond the store's copy: sync it",
        }[plan.action]
        out.print(printable(f"{sid}: {said} ({plan.transcript})"), markup=False)
        return
    verb = f"would have {verb}" if dry_run else verb
    moved = f", {plan.rewritten} line(s) moved to {plan.project}" if plan.rewritten else ""
    out.print(
        printable(f"{verb} {plan.transcript}: {plan.lines} line(s), {format_size(plan.bytes)}"
                  f"{moved}; {len(plan.files) - 1} file(s) beside it"),
        markup=False,
    )  # fmt: skip
    if not dry_run:
        out.print(printable(f"resume it with: cd {plan.project} && claude --resume {sid}"),
                  markup=False)  # fmt: skip


def _newest(conn: Any, ref: str, machine: str | None) -> StoredInfo:
    """The stored session ``ref`` names; when several machines synced it (one pulled it
    from another and went on), the copy the store took lines of last: the one that went
    on furthest in time."""
    from sessiontree.catalog.stored import list_stored_sessions, resolve_stored
    from sessiontree.storage.store.reads import last_grown

    try:
        return resolve_stored(conn, ref, machine=machine)
    except Ambiguous as exc:
        rows = [
            r
            for r in list_stored_sessions(conn, machine=machine)
            if r.info.sessionId == ref.lower() or r.info.sessionId.startswith(ref.lower())
        ]
        if not rows or len({r.info.sessionId for r in rows}) > 1:
            raise exc from None
        return min(rows, key=lambda r: last_grown(conn, r.source))


def _local_copy(layout: Layout, session_id: str) -> tuple[Path, str | None] | None:
    """A copy of the session here, and the project folder it ran in (None: none here):
    pulled again, it goes on where it is, moved from wherever the store's copy ran."""
    from sessiontree.catalog.index import read_session_info

    for transcript in sorted(layout.projects_dir.glob(f"*/{session_id}.jsonl")):
        try:
            return transcript, read_session_info(transcript).cwd
        except (OSError, DataError):
            continue
    return None
