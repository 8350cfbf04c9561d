"""``sync``: a config root pushed into the store, and what has changed since, only.

What goes up (the byte-level work is :mod:`sessiontree.storage.store.archive`'s):

- every transcript (``projects/<project>/<session>.jsonl``, old-style ``agent-*.jsonl``
  beside them) and every subagent transcript (``<session>/subagents/agent-*.jsonl``),
  line by line, byte for byte, with the skeleton the engine's scan makes of each line;
- the files beside them: ``tool-results/*``, subagents' ``.meta.json``, every
  ``file-history/<session>/`` backup and the ``paste-cache/`` texts history names, as
  content-addressed blobs (one copy per content across every machine);
- ``history.jsonl``, merged: each line once, whichever machine typed it;
- each session's facts: its listing row as the engine reads it (title, prompts, dates,
  counts), its git remote (when its project is a repository here), the client version
  its last records name, and the machine and user that synced it.

A file whose size, mtime and inode are those of its last complete push is not looked at
again (a cache in sessiontree's state folder, one per store, root and machine): a rerun
with nothing new is a ``stat`` a file. Nothing local is ever changed, and a file
deleted here is never deleted from the store.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from sessiontree.catalog.index import read_session_info
from sessiontree.errors import DataError, Refused, StoreError
from sessiontree.lifecycle.live import live_session_ids
from sessiontree.model.conversation import is_subagent_name
from sessiontree.model.secrets import redact as redact_secrets
from sessiontree.model.secrets import secrets_by_line
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.forked import ChildFailed, ForkedOutput, fork_output, two_shares
from sessiontree.storage.layout import Layout, is_session_file
from sessiontree.storage.skeleton_cache import SkeletonCache
from sessiontree.storage.store.archive import (
    CHUNK_BYTES,
    Artifact,
    Inspect,
    Machine,
    SessionFacts,
    SharedHead,
    SourceKind,
    known_artifacts,
    push_file,
    push_history,
    put_artifacts,
    put_held_open,
    put_session,
    register_machine,
)
from sessiontree.storage.store.connect import connect, failure_line
from sessiontree.storage.store.search import unindexed_sources
from sessiontree.sync.indexing import Indexer, IndexProcess, catch_up, index_history

if TYPE_CHECKING:
    import psycopg

#: The bytes to sync from which a thread on a second connection indexes them.
INDEX_THREAD_BYTES = 4 * 1024 * 1024
#: The bytes to sync from which a process of its own indexes them (starting one costs
#: about a third of a second; a thread indexes less).
INDEX_PROCESS_BYTES = 64 * 1024 * 1024
#: The bytes to sync from which ``sync`` stores the lines first, in two processes (each
#: on a connection of its own), and leaves indexing them to an indexer that runs on
#: after it (``sync --wait-index``: it waits).
INDEX_LATER_BYTES = 64 * 1024 * 1024
#: Lines one run stores from which it brings the planner's statistics up to date.
ANALYZE_AFTER = 10_000
#: Files beside the transcripts stored in one transaction at most, and their bytes.
ARTIFACT_BATCH = 500
ARTIFACT_BATCH_BYTES = 32 * 1024 * 1024


class SecretPlace(msgspec.Struct, frozen=True):
    """A secret a sync found in what it sent: where, what kind, and masked."""

    path: str  # under the config root
    line: int
    kind: str
    masked: str

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "kind": self.kind, "masked": self.masked}


class SyncReport(msgspec.Struct):
    """What one run added to the store (``sync --json``)."""

    files: int = 0  # files that gained something in the store
    records: int = 0  # lines stored (transcripts, subagents, history)
    bytes: int = 0  # bytes stored (lines and files beside them)
    blobs: int = 0  # contents the store did not hold before
    seconds: float = 0.0
    #: Files found truncated or rewritten (a new generation began): their paths.
    rewritten: list[str] = msgspec.field(default_factory=list)
    #: Secrets found in the lines sent (masked in the store only with ``redact``).
    secrets: int = 0
    secret_places: list[SecretPlace] = msgspec.field(default_factory=list)
    redacted: bool = False
    #: What the root stored and is not indexed for search yet, when the run left its
    #: indexing for later (``index_later_from``): sources, and their bytes.
    unindexed_sources: int = 0
    unindexed_bytes: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "records": self.records,
            "bytes": self.bytes,
            "blobs": self.blobs,
            "seconds": round(self.seconds, 3),
            "secrets": self.secrets,
            "redacted": self.redacted,
        }


#: The places a report keeps at most (the count is always whole).
MAX_PLACES = 1000


def _inspector(report: SyncReport, rel_path: str, redact: bool) -> Inspect:
    """What a sync stores of each chunk of ``rel_path``: its lines, their secrets counted
    in ``report`` (and masked, with ``redact``). Only windows around the places the
    secrets scan suspects are scanned (:func:`~sessiontree.model.secrets.secrets_by_line`)."""

    def inspect(first: int, data: bytes) -> dict[int, bytes]:
        stored: dict[int, bytes] = {}
        for start, end, found in secrets_by_line(data):
            number = first + data.count(b"\n", 0, start)
            report.secrets += len(found)
            for finding in found:
                if len(report.secret_places) < MAX_PLACES:
                    report.secret_places.append(
                        SecretPlace(rel_path, number, finding.kind, finding.masked)
                    )
            if redact:
                stored[start] = redact_secrets(data[start:end], found)
        return stored

    return inspect


class _Seen(msgspec.Struct, array_like=True):
    size: int
    mtime_ns: int
    inode: int


class _State(msgspec.Struct):
    """The files a machine's root pushed whole last time, by path under the root."""

    version: int = 1
    files: dict[str, _Seen] = msgspec.field(default_factory=dict)


class _Pending(msgspec.Struct, frozen=True):
    rel_path: str
    path: Path
    kind: SourceKind
    session_id: str | None
    size: int


def sync_root(
    conn: psycopg.Connection[Any],
    machine: Machine,
    layout: Layout,
    *,
    state_file: Path | None = None,
    redact: bool = False,
    progress: Callable[[int, int], None] | None = None,
    artifacts: bool = True,
    index_dsn: str | None = None,
    skeleton_cache: SkeletonCache | None = None,
    heads: Mapping[str, SharedHead] | None = None,
    index_later_from: int | None = None,
    leftovers: bool = True,
) -> SyncReport:
    """Push ``layout``'s config root into the store as ``machine``; what was added.

    ``state_file``: the cache of what was pushed whole (None: every file is checked
    against the store). Every transcript line sent is scanned for secrets
    (:mod:`sessiontree.model.secrets`): counted, and where, in the report; ``redact``:
    each is masked in what is stored (that line is then no longer the file's bytes).
    ``progress(done, total)`` is called with bytes as they go up. ``artifacts``: the
    files beside the transcripts are looked at too. ``index_dsn``: the store again,
    for a second connection on which each file's text is indexed for search while the
    next files go up (each side then waits on the server while the other works): in a
    thread, or for a sync of :data:`INDEX_PROCESS_BYTES` or more in a process of its
    own (the second core); without it, each file is indexed after it is stored. The
    active path of each file indexed is kept too (for search's on/off-path marks), read
    through ``skeleton_cache`` when given (only what was appended is read). ``heads``:
    what pulls here wrote at the head of files (by path under the root): a file new to
    the store that still begins so is linked to the lines it was pulled from, which the
    store holds already (:func:`~sessiontree.storage.store.archive.link_head`).
    ``index_later_from``: from this many bytes to store, nothing is indexed while the
    lines go up (in two processes, the second on a connection to ``index_dsn``), and
    what is left to index is said in the report (``unindexed_*``) for the caller to
    index later (:func:`~sessiontree.sync.indexing.start_catch_up`): a big first sync
    is then as fast as its lines. ``leftovers``: what the root stored
    before and is not indexed yet (an indexer that died) is indexed too, here when it
    is less than ``index_later_from`` bytes, else left for later as above."""
    started = time.monotonic()
    report = SyncReport(redacted=redact)
    root = str(layout.root.resolve())
    state = _load_state(state_file)
    register_machine(conn, machine)
    live = live_session_ids(layout)
    put_held_open(conn, machine, root, live)  # (pull elsewhere asks before writing these)
    pending = [p for p in _transcripts(layout) if not _unchanged(state, p)]
    history = layout.history_path
    total = sum(p.size for p in pending)
    done = 0

    other: _ForkedPush | None = None

    def advance(amount: int) -> None:
        nonlocal done
        done += amount
        if progress is not None:  # (with what the forked half stored so far)
            progress(done + (0 if other is None else other.stored()), total)

    remotes: dict[str, str | None] = {}
    later = index_later_from is not None and total >= index_later_from
    if later and index_dsn is not None:  # (a second connection: the lines in two processes)
        mine, rest = two_shares(pending, lambda item: item.size)
        other = _fork_push(index_dsn, machine, root, rest, live, redact, heads or {})
        if other is not None:
            pending = mine
    try:
        with _indexer(conn, index_dsn, 0 if later else total, redact, skeleton_cache,
                      later=later) as indexer:  # fmt: skip
            _push_transcripts(conn, machine, root, pending, live, state, report, indexer,
                              remotes, redact, advance, heads or {})  # fmt: skip
        if other is not None:
            _join_push(other, state, report, advance)
    finally:
        if other is not None:
            other.output.close()  # (stopped, when this one failed first)
    if history.is_file():
        item = _Pending("history.jsonl", history, "history", None, history.stat().st_size)
        if not _unchanged(state, item):
            pushed = push_history(conn, machine, root=root, path=history)
            if pushed.lines or pushed.new_generation:
                report.files += 1
                report.records += pushed.lines
                report.bytes += pushed.bytes
            index_history(conn, layout)
            _remember(state, item)
    files, blobs, stored = _push_artifacts(conn, machine, layout, root) if artifacts else (0, 0, 0)
    report.files += files
    report.blobs += blobs
    report.bytes += stored
    _save_state(state_file, state)
    if later or leftovers:
        _index_leftovers(conn, machine, root, report, redact, skeleton_cache,
                         later=later, limit=index_later_from)  # fmt: skip
    if report.records >= ANALYZE_AFTER and not report.unindexed_sources:
        # (else the indexer left running brings them up to date when it is done)
        # (the planner's figures for the tables just grown: without them a search right
        # after a first sync may scan the whole text table, 0.1-0.3 s a query)
        conn.execute("ANALYZE sessiontree.source, sessiontree.line, sessiontree.line_text")
    report.seconds = time.monotonic() - started
    return report


class _PartDone(msgspec.Struct):
    """What the forked half of a sync did: its report, and what it remembers of each of
    its files (None: forget it); or the one line it failed with."""

    report: SyncReport | None = None
    seen: dict[str, _Seen | None] = msgspec.field(default_factory=dict)
    error: str | None = None
    code: str = "store-error"


class _ForkedPush(msgspec.Struct):
    output: ForkedOutput
    progress: mmap.mmap  # the bytes the child stored so far, a little-endian u64

    def stored(self) -> int:
        return int.from_bytes(self.progress[:8], "little")


def _fork_push(
    dsn: str,
    machine: Machine,
    root: str,
    pending: list[_Pending],
    live: set[str],
    redact: bool,
    heads: Mapping[str, SharedHead],
) -> _ForkedPush | None:
    """Store ``pending`` in a forked child on a connection of its own (the second core:
    a sync's lines go up about 1.6 times as fast in two); None when this process may
    not fork (then the caller stores them too)."""
    progress = mmap.mmap(-1, 8)
    parent = os.getpid()

    def push_half() -> list[bytes]:
        done = _PartDone()
        state = _State()
        report = SyncReport(redacted=redact)
        stored = 0

        def advance(amount: int) -> None:
            nonlocal stored
            if os.getppid() != parent:
                os._exit(1)  # (the sync was killed: so is its half, at a transaction's end)
            stored += amount
            progress[:8] = stored.to_bytes(8, "little")

        try:
            with connect(dsn) as conn:
                _push_transcripts(conn, machine, root, pending, live, state, report, _Later(),
                                  {}, redact, advance, heads)  # fmt: skip
            done.report = report
            done.seen = {p.rel_path: state.files.get(p.rel_path) for p in pending}
        except Exception as exc:
            failure = failure_line(exc, dsn)
            done.error = str(failure)
            done.code = failure.code if isinstance(failure, StoreError) else done.code
        return [msgspec.msgpack.encode(done)]

    output = fork_output(push_half)
    if output is None:
        progress.close()
        return None
    return _ForkedPush(output, progress)


def _join_push(
    other: _ForkedPush, state: _State, report: SyncReport, advance: Callable[[int], None]
) -> None:
    """Wait for the forked half (its progress said meanwhile: ``advance(0)``), and take
    in what it did."""
    while other.output.running():
        advance(0)
        time.sleep(0.1)
    advance(0)
    try:
        done = msgspec.msgpack.decode(b"".join(other.output.pieces()), type=_PartDone)
    except (ChildFailed, msgspec.DecodeError):
        raise StoreError("the second sync process stopped early: run sync again") from None
    if done.error is not None or done.report is None:
        raise StoreError(done.error or "the second sync process failed", code=done.code)  # type: ignore[arg-type]
    for rel_path, seen in done.seen.items():
        if seen is None:
            state.files.pop(rel_path, None)
        else:
            state.files[rel_path] = seen
    part = done.report
    report.files += part.files
    report.records += part.records
    report.bytes += part.bytes
    report.rewritten += part.rewritten
    report.secrets += part.secrets
    report.secret_places += part.secret_places[: MAX_PLACES - len(report.secret_places)]


def _index_leftovers(
    conn: psycopg.Connection[Any],
    machine: Machine,
    root: str,
    report: SyncReport,
    redact: bool,
    cache: SkeletonCache | None,
    *,
    later: bool,
    limit: int | None,
) -> None:
    """What the root stored and is not indexed yet: indexed here when it is little
    (and no other indexer of the root runs), else counted in ``report`` for later."""
    left = unindexed_sources(conn, machine.machine_id, root)
    pending = sum(source.pending for source in left)
    if left and not later and (limit is None or pending < limit):
        done = catch_up(conn, machine.machine_id, root, redact=redact, skeleton_cache=cache,
                        wait=False)  # fmt: skip
        if done is not None:
            return
    report.unindexed_sources, report.unindexed_bytes = len(left), pending


class _Later:
    """No indexer: what is stored is indexed later (:func:`_index_leftovers`)."""

    def submit(self, source_id: int, path: Path) -> None:
        pass


@contextlib.contextmanager
def _indexer(
    conn: psycopg.Connection[Any],
    dsn: str | None,
    total: int,
    redact: bool,
    cache: SkeletonCache | None,
    *,
    later: bool = False,
) -> Iterator[Indexer | IndexProcess | _Later]:
    """What indexes the files a sync stores: a process of its own for a big sync, a
    thread on a second connection for a smaller one, or (no ``dsn``, or little to
    store: a ``--watch`` round) this connection as each is stored; none, ``later``.
    Everything handed over is indexed when the block ends without an error."""
    if later:
        yield _Later()
        return
    if dsn is None or total < INDEX_THREAD_BYTES:
        yield Indexer(conn, redact=redact, threaded=False, skeleton_cache=cache)
        return
    if total >= INDEX_PROCESS_BYTES:
        process = IndexProcess(
            dsn, redact=redact, cache_dir=None if cache is None else cache.folder
        )
        yield process
        process.finish()
        return
    with connect(dsn) as second:
        indexer = Indexer(second, redact=redact, threaded=True, skeleton_cache=cache)
        try:
            yield indexer
        finally:
            indexer.finish()


def _push_transcripts(
    conn: psycopg.Connection[Any],
    machine: Machine,
    root: str,
    pending: list[_Pending],
    live: set[str],
    state: _State,
    report: SyncReport,
    indexer: Indexer | IndexProcess | _Later,
    remotes: dict[str, str | None],
    redact: bool,
    advance: Callable[[int], None],
    heads: Mapping[str, SharedHead],
) -> None:
    """Every pending transcript's new lines stored, handed to ``indexer``, and its facts
    put; what was added counted in ``report``. Small files go up several to a
    transaction (a commit waits for the disk: one per file was most of a first sync of
    many small sessions), a file of :data:`~sessiontree.storage.store.archive.CHUNK_BYTES`
    or more in transactions of its own, one a chunk; a kill stores whole transactions."""
    for group in _groups(pending):
        # (a file's own chunk transactions are savepoints inside the group's)
        with conn.transaction() if len(group) > 1 else contextlib.nullcontext():
            stored = [
                _push_transcript(conn, machine, root, item, live, state, report, remotes,
                                 redact, advance, heads.get(item.rel_path))
                for item in group
            ]  # fmt: skip
        for item, source_id in zip(group, stored, strict=True):  # (once it is committed)
            if source_id is not None:
                indexer.submit(source_id, item.path)
            _remember(state, item)


def _groups(pending: list[_Pending]) -> Iterator[list[_Pending]]:
    """``pending`` in order, cut into groups of files under CHUNK_BYTES in all (a file
    that size or more alone)."""
    group: list[_Pending] = []
    size = 0
    for item in pending:
        if group and (size + item.size > CHUNK_BYTES or item.size >= CHUNK_BYTES):
            yield group
            group, size = [], 0
        group.append(item)
        size += item.size
    if group:
        yield group


def _push_transcript(
    conn: psycopg.Connection[Any],
    machine: Machine,
    root: str,
    item: _Pending,
    live: set[str],
    state: _State,
    report: SyncReport,
    remotes: dict[str, str | None],
    redact: bool,
    advance: Callable[[int], None],
    head: SharedHead | None,
) -> int | None:
    """One transcript's new lines stored (its head linked, when a pull wrote it) and its
    facts put; its source's id."""
    pushed = push_file(
        conn, machine, root=root, rel_path=item.rel_path, path=item.path, kind=item.kind,
        session_id=item.session_id, open_tail=item.session_id not in live,
        inspect=_inspector(report, item.rel_path, redact), progress=advance, head=head,
    )  # fmt: skip
    if pushed.bytes or pushed.new_generation:
        report.files += 1
        report.records += pushed.lines
        report.bytes += pushed.bytes
    if pushed.new_generation:
        report.rewritten.append(item.rel_path)
    if (
        item.kind == "transcript"
        and pushed.source_id is not None
        and (pushed.bytes or pushed.new_generation or item.rel_path not in state.files)
    ):
        _put_facts(conn, machine, pushed.source_id, item, remotes)
    return pushed.source_id


def _transcripts(layout: Layout) -> Iterator[_Pending]:
    """Every transcript and subagent transcript of the root, with its size now."""
    for project in layout.iter_project_dirs():
        try:
            entries = sorted(os.scandir(project), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith(".jsonl") or not entry.is_file(follow_symlinks=False):
                continue
            rel = f"projects/{project.name}/{entry.name}"
            stem = entry.name[: -len(".jsonl")]
            if is_session_file(entry.name) and not is_subagent_name(entry.name):
                yield _Pending(rel, Path(entry.path), "transcript", stem, _size(entry))
            else:
                yield _Pending(rel, Path(entry.path), "subagent", None, _size(entry))
            subagents = project / stem / "subagents"
            for sub in _files(subagents, ".jsonl"):
                yield _Pending(
                    f"projects/{project.name}/{stem}/subagents/{sub.name}",
                    Path(sub.path),
                    "subagent",
                    stem,
                    _size(sub),
                )


def _files(folder: Path, suffix: str) -> list[os.DirEntry[str]]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    return [e for e in entries if e.name.endswith(suffix) and e.is_file(follow_symlinks=False)]


def _size(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_size
    except OSError:
        return 0


def _unchanged(state: _State, item: _Pending) -> bool:
    seen = state.files.get(item.rel_path)
    if seen is None:
        return False
    try:
        stat = item.path.stat()
    except OSError:
        return True  # gone: nothing to push (and nothing is deleted from the store)
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino) == (
        seen.size,
        seen.mtime_ns,
        seen.inode,
    )


def _remember(state: _State, item: _Pending) -> None:
    """Note a file as pushed whole, if it still is what was pushed (a file that grew
    meanwhile, or ends in half a line, is looked at again next time)."""
    try:
        stat = item.path.stat()
        with item.path.open("rb") as handle:
            handle.seek(max(0, stat.st_size - 1))
            whole = stat.st_size == 0 or handle.read(1) == b"\n"
    except OSError:
        return
    if whole:
        state.files[item.rel_path] = _Seen(stat.st_size, stat.st_mtime_ns, stat.st_ino)
    else:
        state.files.pop(item.rel_path, None)


def _put_facts(
    conn: psycopg.Connection[Any],
    machine: Machine,
    source_id: int,
    item: _Pending,
    remotes: dict[str, str | None],
) -> None:
    """A transcript's listing row and what only this machine knows of it."""
    try:
        info = read_session_info(item.path)
    except (OSError, DataError):
        return  # gone or unreadable since: its lines are stored, its facts next time
    cwd = info.cwd
    if cwd is not None and cwd not in remotes:
        remotes[cwd] = git_remote(cwd)
    facts = SessionFacts(
        session_id=info.sessionId,
        cwd=cwd,
        git_remote=None if cwd is None else remotes[cwd],
        client_version=client_version(item.path),
        title=info.title,
        updated_at=info.updatedAt,
        info=msgspec.msgpack.encode(info),
        info_bytes=info.sizeBytes,
    )
    put_session(conn, machine, source_id, facts)


def git_remote(cwd: str) -> str | None:
    """The ``origin`` URL of the git repository at ``cwd`` (None: not one, or no git)."""
    if not os.path.isdir(cwd):
        return None
    try:
        done = subprocess.run(
            ["git", "-C", cwd, "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    url = done.stdout.strip()
    return url or None


class _Versioned(msgspec.Struct):
    version: Any = None


_versioned = msgspec.json.Decoder(_Versioned)


def client_version(path: Path, window: int = 64 * 1024) -> str | None:
    """The client version the last records of a transcript name (``version``)."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - window))
            data = handle.read(window)
    except OSError:
        return None
    for raw in reversed(data.split(b"\n")):
        if b'"version"' not in raw:
            continue
        try:
            value = _versioned.decode(raw).version
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(value, str) and value:
            return value
    return None


def _push_artifacts(
    conn: psycopg.Connection[Any], machine: Machine, layout: Layout, root: str
) -> tuple[int, int, int]:
    """Every file beside the transcripts that the store lacks or holds older: (files,
    new blobs, bytes)."""
    known = known_artifacts(conn, machine, root)
    batch: list[Artifact] = []
    size = files = blobs = stored = 0
    for artifact_path, rel, kind, session_id in _artifact_files(layout):
        try:
            stat = artifact_path.stat()
        except OSError:
            continue
        if known.get(rel) == stat.st_mtime_ns:
            continue
        try:
            data = artifact_path.read_bytes()
        except OSError:
            continue
        batch.append(Artifact(rel, kind, session_id, data, stat.st_mode & 0o7777,
                              stat.st_mtime_ns))  # fmt: skip
        size += len(data)
        if len(batch) >= ARTIFACT_BATCH or size >= ARTIFACT_BATCH_BYTES:
            count, added = put_artifacts(conn, machine, root, batch)
            files, blobs, stored = files + count, blobs + added, stored + size
            batch, size = [], 0
    if batch:
        count, added = put_artifacts(conn, machine, root, batch)
        files, blobs, stored = files + count, blobs + added, stored + size
    return files, blobs, stored


def _artifact_files(layout: Layout) -> Iterator[tuple[Path, str, Any, str | None]]:
    """(path, rel path, kind, session) of every file beside the transcripts."""
    for project in layout.iter_project_dirs():
        try:
            folders = sorted(e.name for e in os.scandir(project) if e.is_dir(follow_symlinks=False))
        except OSError:
            continue
        for stem in folders:
            base = f"projects/{project.name}/{stem}"
            for entry in _files(project / stem / "tool-results", ""):
                yield Path(entry.path), f"{base}/tool-results/{entry.name}", "tool-result", stem
            for entry in _files(project / stem / "subagents", ".meta.json"):
                yield Path(entry.path), f"{base}/subagents/{entry.name}", "agent-meta", stem
    for entry in _files(layout.paste_cache_dir, ".txt"):
        yield Path(entry.path), f"paste-cache/{entry.name}", "paste", None
    history = layout.file_history_dir
    try:
        sessions = sorted(e.name for e in os.scandir(history) if e.is_dir(follow_symlinks=False))
    except OSError:
        return
    for session_id in sessions:
        for entry in _files(history / session_id, ""):
            yield (
                Path(entry.path),
                f"file-history/{session_id}/{entry.name}",
                "file-history",
                session_id,
            )


def _load_state(path: Path | None) -> _State:
    if path is None:
        return _State()
    try:
        return msgspec.msgpack.decode(path.read_bytes(), type=_State)
    except (OSError, msgspec.DecodeError, RecursionError):
        return _State()


def _save_state(path: Path | None, state: _State) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, msgspec.msgpack.encode(state), fsync=False)
    except (OSError, Refused):
        return  # only a slower next run


def state_key(store: str, root: Path, machine_id: str) -> str:
    """The name of a sync state file: one per store, config root and machine."""
    text = f"{store}\n{root.resolve()}\n{machine_id}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]
