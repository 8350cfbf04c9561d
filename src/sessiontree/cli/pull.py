"""``sessiontree pull SESSION [--project PATH]``: a stored session written where the
client looks for it, so that ``claude --resume`` goes on with it here."""

from __future__ import annotations

import socket
import sys
import uuid
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sessiontree.cli.output import (
    console,
    emit_json,
    format_size,
    get_env,
    json_option,
    progress_bytes,
)
from sessiontree.errors import DataError, Refused
from sessiontree.views.text import printable

if TYPE_CHECKING:
    from sessiontree.catalog.stored import StoredInfo
    from sessiontree.cli.main import Env
    from sessiontree.storage.layout import Layout
    from sessiontree.sync.pull import PullPlan

#: A session the store saw grow this recently on another machine may still be written
#: there: two clients going on with one session on two machines would diverge.
LIVE_SECONDS = 10 * 60


@click.command()
@click.argument("session", metavar="[SESSION]", required=False)
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Put the session under this project folder (absolute or relative to here) and "
    "rewrite the paths its lines name under the old one (cwd, checkpoints, tool inputs).",
)
@click.option(
    "--project-of",
    "project_of",
    metavar="SESSION",
    help="Pull every stored session of the project SESSION ran in.",
)
@click.option("--all", "everything", is_flag=True, help="Pull every stored session.")
@click.option("--machine", metavar="NAME", help="The sessions as this machine synced them.")
@click.option("--since", metavar="DATE", help="With --all: sessions active since DATE.")
@click.option(
    "--force",
    is_flag=True,
    help="Pull even when a client may still be writing the session (here, or on the "
    "machine that synced it in the last ten minutes).",
)
@click.option(
    "--fork",
    "as_fork",
    is_flag=True,
    help="When the session went on both here and elsewhere, write the store's version "
    'beside it as a fork: a new session id, forkedFrom, a "(Branch)" title.',
)
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@json_option
def pull(
    session: str | None,
    project: Path | None,
    project_of: str | None,
    everything: bool,
    machine: str | None,
    since: str | None,
    force: bool,
    as_fork: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Write a stored session (--store) into this config root (--root) where the client
    looks for it: its transcript, subagents, tool results and the backups its
    checkpoints name, each file safely (temp file, fsync, rename; mtime the last
    record's time). --project PATH moves it to another project folder, the paths under
    the old one rewritten (those lines the only difference, counted in --json). A copy
    here the store's version goes on from is fast-forwarded; one that went on beyond it
    is left (sync it); if both went on, pull refuses (--fork writes the store's
    version beside it as a fork, with a new session id). --json:
    {sessionId, machine, path, project, originalProject, action, lines, rewritten,
    bytes, files}. With --project-of SESSION or --all, many sessions (each as alone;
    one refused is skipped, said why) and the history lines typed in them, each once:
    {sessions, skipped, history}."""
    env = get_env(reads_store=True)
    if env.store is None:
        raise click.UsageError("pull needs a store: give --store DSN or set $SESSIONTREE_STORE")
    if sum(x is not None and x is not False for x in (session, project_of, everything)) != 1:
        raise click.UsageError("give one of SESSION, --project-of SESSION or --all")
    if since is not None and not everything:
        raise click.UsageError("--since goes with --all")
    from sessiontree.catalog.stored import resolve_stored
    from sessiontree.cli.stored import run_connection
    from sessiontree.storage.store.connect import failures_as_store_errors

    conn = run_connection(env)
    where = None if project is None else str(project.expanduser().resolve())
    if session is not None:
        with failures_as_store_errors(env.store):
            found = resolve_stored(conn, session, machine=machine)
        plan = _pull_one(env, conn, found, where, force=force, dry_run=dry_run, ask=not as_json,
                         as_fork=as_fork)  # fmt: skip
        _say_one(env, plan, dry_run=dry_run, as_json=as_json)
        return
    if as_fork:
        raise click.UsageError("--fork goes with one SESSION")
    with failures_as_store_errors(env.store):
        chosen = _many(conn, project_of, machine=machine, since=since)
    _pull_many(env, conn, chosen, where, force=force, dry_run=dry_run, as_json=as_json)


def _pull_one(
    env: Env,
    conn: Any,
    found: StoredInfo,
    where: str | None,
    *,
    force: bool,
    dry_run: bool,
    ask: bool,
    as_fork: bool = False,
) -> PullPlan:
    """Plan a session's pull, check it may go ahead (refused: diverged, or a client may
    still write it), write it (unless ``dry_run``); the plan."""
    from sessiontree.cli.sync import known_machine_ids
    from sessiontree.lifecycle.live import live_session_ids
    from sessiontree.storage.store.connect import failures_as_store_errors
    from sessiontree.storage.store.reads import held_open, last_grown
    from sessiontree.sync.pull import (
        apply_pull,
        heads_file,
        keep_heads,
        plan_pull,
        pull_as_fork,
    )

    assert env.store is not None
    source = found.source
    here = _local_copy(env.layout, found.info.sessionId) if where is None else None
    if here is not None:
        where = here[1]
    with failures_as_store_errors(env.store):
        plan = plan_pull(conn, source, env.layout, cwd=found.info.cwd, project=where,
                         target=None if here is None else here[0])  # fmt: skip
        age = last_grown(conn, source)
        held = held_open(conn, found.info.sessionId)
    sid = plan.session_id
    if plan.action == "diverged" and as_fork:
        if not dry_run:
            with failures_as_store_errors(env.store):
                made = pull_as_fork(conn, source, plan, new_session_id=str(uuid.uuid4()),
                                    title=found.info.title)  # fmt: skip
            plan.forked_as, plan.transcript = made.session_id, made.path
        plan.action = "forked"
        return plan
    if plan.action == "diverged":
        raise Refused(
            f"{sid} went on both here ({socket.gethostname()}) and on {found.machine}: "
            "pull overwrites neither "
            f"({printable(str(plan.transcript))} differs from the store's copy)"
        )
    if not force and plan.action in ("new", "fast-forward"):
        if sid in live_session_ids(env.layout):
            raise Refused(f"a client here holds {sid} open: pull would write under it (--force)")
        here_ids = known_machine_ids(env)
        holders = [h for h in held if h.machine_id not in here_ids]
        elsewhere = source.machine_id not in here_ids
        said = None
        if holders:
            said = (
                f"a client on {holders[0].machine} held {sid} open when it last synced "
                f"({_ago(holders[0].seconds_ago)}): it may still be writing it"
            )
        elif elsewhere and age < LIVE_SECONDS:
            said = (
                f"{found.machine} synced {sid} {age / 60:.0f} min ago: a client there may "
                "still be writing it"
            )
        if said is not None:
            if not ask or dry_run or not sys.stdin.isatty():
                if not dry_run:
                    raise Refused(f"{said} (--force pulls anyway)")
            elif not click.confirm(f"{said}. Pull anyway?", default=False, err=True):
                raise click.exceptions.Exit(1)
    if not dry_run and plan.action in ("new", "fast-forward"):
        with failures_as_store_errors(env.store):
            heads = apply_pull(conn, source, env.layout, plan)
        keep_heads(heads_file(env.state_dir, env.store, env.layout.root), heads)
    return plan


def _ago(seconds: float) -> str:
    if seconds < 90:
        return "just now"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h ago"
    return f"{seconds / 86400:.0f} days ago"


def _say_one(env: Env, plan: PullPlan, *, dry_run: bool, as_json: bool) -> None:
    if as_json:
        emit_json({**plan.as_json(), "dryRun": dry_run})
        return
    out = console(env)
    sid = plan.session_id
    if plan.action == "forked":
        said = "would write" if dry_run else f"wrote the store's version as {plan.forked_as}:"
        out.print(printable(f"{sid} went on both here and on {plan.machine}; {said} "
                            f"{plan.transcript} (a fork)"), markup=False)  # fmt: skip
        return
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


def _many(
    conn: Any, project_of: str | None, *, machine: str | None, since: str | None
) -> list[StoredInfo]:
    """The sessions ``--project-of`` (the project ``project_of`` ran in) or ``--all``
    (active since ``since``) names: each once, its copy synced last."""
    from sessiontree.catalog.stored import list_stored_sessions, resolve_stored
    from sessiontree.storage.store.reads import last_grown

    rows = list_stored_sessions(conn, machine=machine)
    if project_of is not None:
        cwd = resolve_stored(conn, project_of, machine=machine).info.cwd
        rows = [r for r in rows if r.info.cwd == cwd]
    if since is not None:
        from sessiontree.catalog.usage import parse_since

        try:
            bound = parse_since(since, today=date.today()).isoformat()
        except Refused as exc:
            raise click.BadParameter(str(exc), param_hint="--since") from exc
        rows = [r for r in rows if (r.info.updatedAt or "")[:10] >= bound]
    newest: dict[str, StoredInfo] = {}
    for row in sorted(rows, key=lambda r: -last_grown(conn, r.source)):
        newest[row.info.sessionId] = row  # (the one grown last wins)
    return sorted(newest.values(), key=lambda r: r.info.sessionId)


def _pull_many(
    env: Env,
    conn: Any,
    chosen: list[StoredInfo],
    where: str | None,
    *,
    force: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Pull each of ``chosen`` (a refusal skips it, said why), then the history lines
    typed in those pulled, each once; progress in MB on a terminal."""
    from sessiontree.storage.store.connect import failures_as_store_errors
    from sessiontree.sync.pull import merge_history

    assert env.store is not None
    out = console(env)
    total = sum(r.info.sizeBytes or 0 for r in chosen)
    plans: list[PullPlan] = []
    skipped: list[dict[str, str]] = []
    done = 0
    with progress_bytes(env, "pulling") as report:
        for row in chosen:
            try:
                plans.append(_pull_one(env, conn, row, where, force=force, dry_run=dry_run,
                                       ask=False))  # fmt: skip
            except Refused as exc:
                skipped.append({"sessionId": row.info.sessionId, "reason": str(exc)})
            done += row.info.sizeBytes or 0
            report(done, total)
    pulled = {p.session_id: p for p in plans if p.action in ("new", "fast-forward", "up-to-date")}
    with failures_as_store_errors(env.store):
        history = merge_history(conn, env.layout, pulled, dry_run=dry_run)
    if as_json:
        emit_json({"sessions": [{**p.as_json(), "dryRun": dry_run} for p in plans],
                   "skipped": skipped, "history": history})  # fmt: skip
        return
    for plan in plans:
        _say_one(env, plan, dry_run=dry_run, as_json=False)
    for skip in skipped:
        out.print(printable(f"skipped {skip['sessionId']}: {skip['reason']}"), markup=False)
    out.print(f"{len(plans)} session(s), {len(skipped)} skipped; {history} history line(s)"
              + (" would be added" if dry_run else " added"), markup=False)  # fmt: skip


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
