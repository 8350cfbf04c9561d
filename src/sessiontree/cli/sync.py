"""``sync``: push the config root into the store; a rerun sends only what is new."""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sessiontree.cli.main import Env
from sessiontree.cli.output import console, emit_json, format_size, get_env, json_option
from sessiontree.errors import Refused
from sessiontree.storage.atomic import write_atomically

if TYPE_CHECKING:
    from rich.console import Console

    from sessiontree.sync.push import SyncReport


@click.command()
@click.option(
    "--machine",
    metavar="NAME",
    help="The label this machine syncs under (default: the host name). Each label has "
    "an id of its own, kept in sessiontree's state folder: the id is the identity.",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Keep following: push what the client appends, within a second, until Ctrl+C.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=0.5,
    show_default=True,
    help="With --watch: seconds between looks at the root.",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Mask the secrets found (API keys, tokens, private keys, passwords) in what is "
    "stored: a redacted line is then no longer byte for byte the local one.",
)
@click.option(
    "--wait-index",
    is_flag=True,
    help="Index what is stored for search before returning. By default a sync of 64 MB "
    "or more stores the lines first and leaves an indexer running after it (search "
    "finds those sessions once it is done; the next sync goes on if it stops).",
)
@json_option
def sync(
    machine: str | None,
    watch: bool,
    interval: float,
    redact: bool,
    wait_index: bool,
    as_json: bool,
) -> None:
    """Push this config root into the store (--store DSN, else $SESSIONTREE_STORE).

    Every transcript and subagent line byte for byte (torn last lines too, once no
    client holds the session), tool results, file-history backups (stored once per
    content) and history.jsonl (each line once across machines), with each session's
    title, project, git remote, machine and user. A rerun sends only what was appended;
    a file truncated or rewritten starts a new generation and the old one is kept.
    Deleting a local file never deletes anything from the store. Every line sent is
    scanned for secrets a tool printed (API keys, tokens, private keys, passwords): how
    many and where is reported (`sessiontree secrets` lists them, masked); --redact
    masks them in what is stored. A big sync leaves its search indexing to an indexer
    that runs on after it (--wait-index waits for it). --json prints what this run
    added: {files, records, bytes, blobs, seconds, secrets, redacted, indexing}."""
    env = get_env()
    if env.store is None:
        raise click.UsageError("sync needs a store: give --store DSN or set $SESSIONTREE_STORE")
    from sessiontree.cli.stored import store_connection
    from sessiontree.storage.skeleton_cache import SkeletonCache
    from sessiontree.storage.store.archive import Machine
    from sessiontree.sync.pull import heads_file, load_heads
    from sessiontree.sync.push import INDEX_LATER_BYTES, state_key, sync_root

    label = machine or socket.gethostname() or "localhost"
    who = Machine(machine_id(env, label, default=machine is None), label, _os_user())
    state = env.state_dir / f"sync-{state_key(env.store, env.layout.root, who.machine_id)}.msgpack"
    out = None if as_json else console(env)
    cache = None if env.cache_dir is None else SkeletonCache(env.cache_dir)
    heads = load_heads(heads_file(env.state_dir, env.store, env.layout.root))
    later = None if watch or wait_index else INDEX_LATER_BYTES
    with store_connection(env, write=True) as conn:
        rounds = 0
        while True:
            # (watching, the files beside the transcripts are looked at every 10 s)
            beside = not watch or rounds % max(1, round(10 / interval)) == 0
            rounds += 1
            if out is not None and out.is_terminal and not watch:
                report = _with_progress(out, lambda p: sync_root(conn, who, env.layout,
                    state_file=state, progress=p, redact=redact, index_dsn=env.store,
                    skeleton_cache=cache, heads=heads, index_later_from=later))  # fmt: skip
            else:
                report = sync_root(
                    conn, who, env.layout, state_file=state, artifacts=beside, redact=redact,
                    index_dsn=env.store, skeleton_cache=cache, heads=heads,
                    index_later_from=later, leftovers=beside,
                )  # fmt: skip
            if not watch:
                break
            if report.records and out is not None:
                out.print(f"{time.strftime('%H:%M:%S')} +{report.records} line(s)")
            try:
                time.sleep(interval)
            except KeyboardInterrupt:
                return
        indexer = None
        if report.unindexed_sources:
            from sessiontree.sync.indexing import catch_up, start_catch_up

            root = str(env.layout.root.resolve())
            if wait_index:  # (an indexer an earlier sync left holds the root: wait for it)
                catch_up(conn, who.machine_id, root, redact=redact, skeleton_cache=cache,
                         dsn=env.store)  # fmt: skip
            else:
                env.state_dir.mkdir(parents=True, exist_ok=True)
                indexer = start_catch_up(
                    env.store, who.machine_id, root, redact=redact,
                    cache_dir=None if cache is None else cache.folder,
                    log=env.state_dir / "indexing.log",
                )  # fmt: skip
    if as_json:
        indexing = None
        if indexer is not None:
            indexing = {"sources": report.unindexed_sources, "bytes": report.unindexed_bytes,
                        "pid": indexer}  # fmt: skip
        emit_json({**report.as_json(), "indexing": indexing})
        return
    assert out is not None
    out.print(
        f"synced {env.layout.root} as {label}: {report.files} file(s), "
        f"{report.records} line(s), {format_size(report.bytes)}, {report.blobs} new blob(s) "
        f"in {report.seconds:.2f} s"
    )
    if indexer is not None:
        out.print(
            f"indexing {report.unindexed_sources} file(s), {format_size(report.unindexed_bytes)},"
            f" for search in the background (pid {indexer}): until it is done, search may "
            "miss them (sync --wait-index waits)",
            markup=False,
        )
    for rel in report.rewritten:
        out.print(f"  {rel}: rewritten since the last sync; a new generation, the old kept")
    if report.secrets:
        done = "masked in the store (--redact)" if report.redacted else "sent as they are"
        out.print(f"{report.secrets} secret(s) found in what was sent, {done}:", markup=False)
        for place in report.secret_places[:10]:
            out.print(f"  {place.path}:{place.line} {place.kind} {place.masked}", markup=False)
        if len(report.secret_places) > 10 or report.secrets > len(report.secret_places):
            out.print("  … (sessiontree secrets lists them all)", markup=False)
        if not report.redacted:
            out.print("  sync --redact masks them in what is stored", markup=False)


def _with_progress(
    out: Console, run: Callable[[Callable[[int, int], None]], SyncReport]
) -> SyncReport:
    """``run`` with a progress bar in bytes on the terminal (gone when done), redrawn as
    the sync advances (at most ten times a second), not by a thread: a big sync forks
    (:func:`~sessiontree.storage.forked.may_fork`)."""
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

    progress = Progress(
        *Progress.get_default_columns(), DownloadColumn(), TransferSpeedColumn(), console=out,
        transient=True, auto_refresh=False,
    )  # fmt: skip
    with progress:
        task = progress.add_task("syncing", total=None)
        drawn = 0.0

        def advance(done: int, total: int) -> None:
            nonlocal drawn
            progress.update(task, completed=done, total=total)
            if (now := time.monotonic()) - drawn >= 0.1:
                progress.refresh()
                drawn = now

        return run(advance)


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def machine_id(env: Env, label: str, *, default: bool) -> str:
    """The id this machine syncs under: one minted once and kept in the state folder
    (``machine.json``), for the default label and for each ``--machine`` label."""
    path = env.state_dir / "machine.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.with_suffix(".lock")):  # (two first syncs must not mint two ids)
        return _machine_id(path, label, default=default)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _machine_id(path: Path, label: str, *, default: bool) -> str:
    try:
        known = json.loads(path.read_text())
    except FileNotFoundError:
        known = {}
    except (OSError, ValueError) as exc:
        raise Refused(f"{path}: cannot read this machine's id ({exc})") from None
    if not isinstance(known, dict):
        known = {}
    key = "default" if default else f"label:{label}"
    value = known.get(key)
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value))
        except ValueError:
            pass
    minted = str(uuid.uuid4())
    known[key] = minted
    write_atomically(path, json.dumps(known, indent=2).encode() + b"\n")
    return minted


def known_machine_ids(env: Env) -> set[str]:
    """Every id this machine has synced under (none minted here)."""
    try:
        known = json.loads((env.state_dir / "machine.json").read_text())
    except (OSError, ValueError):
        return set()
    return {v for v in known.values() if isinstance(v, str)} if isinstance(known, dict) else set()
