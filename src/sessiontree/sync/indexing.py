"""Indexing what a sync stored, for search: the searchable parts of each source's new
lines (:func:`index_texts`), its active path (:func:`keep_active_path`), and history
entries (:func:`index_history`), by an indexer that works beside the sync
(:class:`Indexer`): on a second connection in a thread, or in a process of its own for a
big sync, so that the indexing uses the second core while the lines go up."""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from sessiontree.catalog.search_index.texts import history_text
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import DataError, StoreError
from sessiontree.history.log import parse_history_lines
from sessiontree.model.records import fields_as_dict
from sessiontree.model.search_parts import SEARCHED_TYPES, SearchFields, parse_search_parts
from sessiontree.model.secrets import find_secrets
from sessiontree.model.secrets import redact as redact_secrets
from sessiontree.model.tree import build_tree
from sessiontree.storage.forked import ChildFailed, fork_output, two_shares
from sessiontree.storage.layout import Layout
from sessiontree.storage.scan import scan_range
from sessiontree.storage.skeleton_cache import SkeletonCache
from sessiontree.storage.store.archive import file_holds
from sessiontree.storage.store.reads import iter_source_bytes, source_by_id
from sessiontree.storage.store.search import (
    TextRow,
    Unindexed,
    indexed_until,
    put_active_path,
    put_history_texts,
    put_texts,
    unindexed_history,
    unindexed_sources,
)

if TYPE_CHECKING:
    import psycopg

#: Sources an indexer indexes in one transaction at most.
INDEX_BATCH = 64


def _redacted(raw: bytes) -> bytes:
    found = find_secrets(raw)
    return redact_secrets(raw, found) if found else raw


class Indexer:
    """Indexes what each source stored for search (:func:`index_texts`, and its active
    path) on its own connection: in a thread (``threaded``), so that storing the next
    files and indexing this one wait on the server in turn, or at once when a source
    is handed over. A failure in the thread is raised again by :meth:`submit` or
    :meth:`finish`."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        redact: bool,
        threaded: bool,
        skeleton_cache: SkeletonCache | None = None,
    ) -> None:
        self.conn = conn
        self.skeleton_cache = skeleton_cache
        self.redact = _redacted if redact else None
        self.failure: BaseException | None = None
        self.queue: queue.Queue[tuple[int, Path] | None] = queue.Queue()
        self.thread = None
        if threaded:
            self.thread = threading.Thread(target=self._run, name="sessiontree-index", daemon=True)
            self.thread.start()

    def submit(self, source_id: int, path: Path) -> None:
        if self.failure is not None:
            raise self.failure
        if self.thread is None:
            self._index(source_id, path)
        else:
            self.queue.put((source_id, path))

    def finish(self) -> None:
        """Wait until everything handed over is indexed; raise what the thread raised."""
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join()
            self.thread = None
        if self.failure is not None:
            raise self.failure

    def _index(self, source_id: int, path: Path) -> None:
        _, kept = index_texts(self.conn, source_id, path, redact=self.redact)
        # After an append, read through the skeleton cache: cold the first time (the
        # client wrote the file, not us: a scan of it, once), then only what was appended.
        # A path left behind would be read again from the store by every search with a
        # hit in that session, for as long as it grows (~0.2 s a 100 MB session).
        if not kept and self.skeleton_cache is not None:
            keep_active_path(self.conn, source_id, path, self.skeleton_cache)

    def _run(self) -> None:
        done = False
        while not done:
            batch = [self.queue.get()]
            while len(batch) < INDEX_BATCH and not self.queue.empty():
                batch.append(self.queue.get())  # (what queued meanwhile: one commit)
            done = batch[-1] is None
            work = [item for item in batch if item is not None]
            if self.failure is not None or not work:
                continue
            try:
                with self.conn.transaction():
                    for source_id, path in work:
                        self._index(source_id, path)
            except BaseException as exc:  # (raised again in the caller's thread)
                self.failure = exc


_search_fields = msgspec.json.Decoder(SearchFields)


def index_texts(
    conn: psycopg.Connection[Any],
    source_id: int,
    path: Path,
    *,
    redact: Callable[[bytes], bytes] | None = None,
) -> tuple[int, bool]:
    """Index the searchable parts of what a source stored since its text was last
    indexed, read from the file (as stored: redacted when the sync redacts); how many,
    and whether the source's active path was kept too (its first indexing read all the
    source holds: the path is that read's)."""
    start, number = indexed_until(conn, source_id)
    stored = source_by_id(conn, source_id)
    if stored is not None and stored.synced_bytes == 0 and not stored.open_tail:
        put_active_path(conn, source_id, 0, [])  # (an empty file: an empty path)
        put_texts(conn, source_id, [], indexed_from=0, indexed_bytes=0, indexed_lines=0)
        return 0, True
    if stored is None or stored.synced_bytes <= start:
        return 0, False
    with _stored_file(conn, source_id, path) as (fd, path):
        data = os.pread(fd, stored.synced_bytes - start, start)
        stop = start + data.rfind(b"\n") + 1  # (a torn last line holds nothing to find)
        if stop <= start:
            return 0, False
        scan = scan_range(fd, path, start=start, stop=stop, number=number)
    whole = start == 0 and stop == stored.synced_bytes and not stored.open_tail
    if whole:
        tree = build_tree(str(path), scan.lines)
        active = Transcript(path=path, scan=scan, tree=tree).active_path
        put_active_path(conn, source_id, stored.synced_bytes, active)
    rows: list[TextRow] = []
    for line in scan.lines:
        skeleton = line.skeleton
        if skeleton is None or skeleton.type not in SEARCHED_TYPES:
            continue
        raw = data[line.offset - start : line.offset - start + line.length]
        if redact is not None:
            raw = redact(raw)
        try:
            value = fields_as_dict(_search_fields.decode(raw.rstrip(b"\n").replace(b"\x00", b"")))
        except (msgspec.DecodeError, RecursionError):
            continue
        for part, found in enumerate(parse_search_parts(value)):
            if not found.text:
                continue
            rows.append(
                TextRow(
                    byte_offset=line.offset, part=part, line_no=line.number, kind=found.kind,
                    role=found.role, tool_name=found.tool_name, tool_use_id=found.tool_use_id,
                    session_id=_str(value.get("sessionId")) or stored.session_id,
                    uuid=_str(value.get("uuid")), type=_str(value.get("type")),
                    timestamp=_str(value.get("timestamp")), cwd=_str(value.get("cwd")),
                    is_sidechain=value.get("isSidechain") is True, text=found.text,
                )
            )  # fmt: skip
    indexed = put_texts(
        conn, source_id, rows, indexed_from=start, indexed_bytes=stop,
        indexed_lines=scan.resume_number,
    )  # fmt: skip
    return indexed, whole


@contextlib.contextmanager
def _stored_file(
    conn: psycopg.Connection[Any], source_id: int, path: Path
) -> Iterator[tuple[int, Path]]:
    """The file of a source open for reading, and its path: ``path`` while it still
    begins with what the store holds of the source (it only grew since), else (cut,
    rewritten or gone since it was stored: an indexer that runs later) a temporary copy
    of the stored bytes."""
    with contextlib.ExitStack() as stack:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            fd = -1
        else:
            stack.callback(os.close, fd)
        if fd < 0 or not file_holds(conn, source_id, fd):
            import tempfile

            copy = stack.enter_context(tempfile.NamedTemporaryFile(suffix=".jsonl"))
            for piece in iter_source_bytes(conn, source_id):
                copy.write(piece)
            copy.flush()
            fd, path = copy.fileno(), Path(copy.name)
        yield fd, path


def keep_active_path(
    conn: psycopg.Connection[Any],
    source_id: int,
    path: Path,
    skeleton_cache: SkeletonCache | None = None,
) -> bool:
    """Keep the uuids of a source's active path, read from its file by the engine, when
    the file is still what the store holds of it (not grown since, nor torn); whether
    it was kept."""
    stored = source_by_id(conn, source_id)
    if stored is None or stored.open_tail:
        return False
    try:
        if skeleton_cache is None:
            transcript = Transcript.open(path)
        else:
            transcript = Transcript.open_to_resume(path, skeleton_cache)
    except (OSError, DataError):
        return False
    if transcript.scan.size != stored.synced_bytes:
        return False  # (it grew meanwhile: a search reads the stored lines instead)
    put_active_path(conn, source_id, stored.synced_bytes, transcript.active_path)
    return True


def index_history(conn: psycopg.Connection[Any], layout: Layout) -> int:
    """Index the store's history entries not indexed yet (pastes put back from this
    root's ``paste-cache/``); how many."""
    rows = []
    for sha, raw in unindexed_history(conn):
        for entry in parse_history_lines([raw]):
            text = history_text(entry, layout) if entry.display else ""
            stamp = entry.timestamp if isinstance(entry.timestamp, int) else None
            rows.append((sha, entry.project, entry.session_id, stamp, text))
    put_history_texts(conn, rows)
    return len(rows)


def catch_up(
    conn: psycopg.Connection[Any],
    machine_id: str,
    root: str,
    *,
    redact: bool,
    skeleton_cache: SkeletonCache | None = None,
    wait: bool = True,
    dsn: str | None = None,
) -> int | None:
    """Index what a machine's root stored and is not indexed yet (a sync that left its
    indexing for later, or an indexer that died); how many sources were indexed. One
    catch-up of a root at a time (an advisory lock: waited for, so that what the one
    before leaves this one finds; without ``wait``, None at once while another runs),
    several sources a transaction. ``dsn``: the store again, so that from
    :data:`SPLIT_INDEX_BYTES` a forked child indexes a share on a connection of its own
    (the second core)."""
    key = f"sessiontree-index:{machine_id}:{root}"
    if not wait:
        row = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()
        if row is None or not row[0]:
            return None
    else:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
    try:
        left = unindexed_sources(conn, machine_id, root)
        mine, other = left, None
        if dsn is not None and sum(s.pending for s in left) >= SPLIT_INDEX_BYTES:
            mine, theirs = two_shares(left, lambda source: source.pending)
            other = fork_output(lambda: _index_share(dsn, theirs, redact, skeleton_cache))
            if other is None:
                mine = left
        try:
            _index_sources(conn, mine, redact, skeleton_cache)
            if other is not None:
                failed = b"".join(other.pieces())
                if failed:
                    raise StoreError(failed.decode(errors="replace"))
        except ChildFailed:
            raise StoreError("the second indexing process stopped early") from None
        finally:
            if other is not None:
                other.close()
        return len(left)
    finally:
        conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))


#: The bytes to index from which a catch-up shares them with a forked child.
SPLIT_INDEX_BYTES = 64 * 1024 * 1024


def _index_sources(
    conn: psycopg.Connection[Any],
    sources: Sequence[Unindexed],
    redact: bool,
    cache: SkeletonCache | None,
) -> None:
    indexer = Indexer(conn, redact=redact, threaded=False, skeleton_cache=cache)
    for at in range(0, len(sources), INDEX_BATCH):
        with conn.transaction():
            for source in sources[at : at + INDEX_BATCH]:
                indexer.submit(source.source_id, Path(source.path))


def _index_share(
    dsn: str, sources: Sequence[Unindexed], redact: bool, cache: SkeletonCache | None
) -> list[bytes]:
    """In the forked child: index ``sources`` on a connection of its own; nothing, or
    the one line it failed with."""
    from sessiontree.storage.store.connect import connect, failure_line

    try:
        with connect(dsn) as conn:
            _index_sources(conn, sources, redact, cache)
    except Exception as exc:
        return [str(failure_line(exc, dsn)).encode()]
    return []


def start_catch_up(
    dsn: str,
    machine_id: str,
    root: str,
    *,
    redact: bool,
    cache_dir: Path | None,
    log: Path,
) -> int:
    """Start :func:`catch_up` in a process of its own that outlives this one (its own
    session, its output to ``log``); its pid. The DSN goes on its standard input,
    never on its command line."""
    command = [sys.executable, "-m", "sessiontree.sync.indexing", "--catch-up", machine_id, root,
               "--log", str(log)]  # fmt: skip
    if redact:
        command.append("--redact")
    if cache_dir is not None:
        command += ["--cache", str(cache_dir)]
    # (it forks the indexer and says its pid at once: nothing here waits on the indexing)
    done = subprocess.run(
        command, input=msgspec.json.encode(dsn) + b"\n", capture_output=True, check=False
    )
    try:
        return int(done.stdout)
    except ValueError:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        raise StoreError(
            "could not start the indexer: " + (reason[-1] if reason else f"exit {done.returncode}")
        ) from None


def _detached_catch_up(dsn: str, args: list[str], cache: str | None) -> int:
    """``--catch-up MACHINE_ID ROOT``: fork the indexer, say its pid, and leave; the
    indexer, in a session of its own, catches the root up and writes what went wrong
    to ``--log``."""
    at = args.index("--catch-up")
    machine_id, root = args[at + 1], args[at + 2]
    log = args[args.index("--log") + 1]
    pid = os.fork()
    if pid:
        os.write(1, f"{pid}\n".encode())
        return 0
    os.setsid()
    with contextlib.suppress(OSError):
        os.nice(10)  # (work for later: what people run now has the cores first)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), 2)
    from sessiontree.storage.store.connect import connect, failure_line

    try:
        with connect(dsn) as conn:
            cache_folder = None if cache is None else SkeletonCache(cache)
            if catch_up(conn, machine_id, root, redact="--redact" in args,
                        skeleton_cache=cache_folder, dsn=dsn):  # fmt: skip
                # (the planner's figures for the tables a big sync grew: see push)
                conn.execute("ANALYZE sessiontree.source, sessiontree.line, sessiontree.line_text")
    except Exception as exc:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        failure = failure_line(exc, dsn)
        os.write(2, f"{stamp} indexing {root}: {failure}; the next sync goes on\n".encode())
        return 1
    return 0


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class IndexProcess:
    """An :class:`Indexer` in a process of its own (the second core:
    ``python -m sessiontree.sync.indexing``), on a connection of its own to ``dsn``
    (the first line of its standard input, never on its command line): each source handed over is
    a line on its standard input, several indexed a transaction; its answer, on its
    standard output when its input ends, is raised here as one line. It ignores Ctrl+C
    (the sync that started it ends its input), and a sync killed ends its input too."""

    def __init__(self, dsn: str, *, redact: bool, cache_dir: Path | None) -> None:
        command = [sys.executable, "-m", "sessiontree.sync.indexing"]
        if redact:
            command.append("--redact")
        if cache_dir is not None:
            command += ["--cache", str(cache_dir)]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdin is not None
        self.input = self.process.stdin
        self.input.write(msgspec.json.encode(dsn) + b"\n")

    def submit(self, source_id: int, path: Path) -> None:
        try:
            self.input.write(msgspec.json.encode([source_id, str(path)]) + b"\n")
            self.input.flush()
        except BrokenPipeError:
            self.finish()  # (it stopped: its answer says why)
            raise StoreError("the indexing process stopped early: run sync again") from None

    def finish(self) -> None:
        """Wait until everything handed over is indexed; raise what the process met."""
        with contextlib.suppress(BrokenPipeError):
            self.input.close()
        assert self.process.stdout is not None
        with self.process.stdout:
            answer = self.process.stdout.read()
        self.process.wait()
        try:
            outcome = msgspec.json.decode(answer.strip() or b"null", type=_Answer | None)
        except msgspec.DecodeError:
            outcome = None
        if outcome is None or self.process.returncode != 0:
            raise StoreError("the indexing process ended without a word: run sync again")
        if outcome.error:
            raise StoreError(outcome.error, code=outcome.code)  # type: ignore[arg-type]


class _Answer(msgspec.Struct):
    error: str | None = None
    code: str = "store-error"


def serve(dsn: str, *, redact: bool, cache_dir: str | None, fd: int = 0) -> _Answer:
    """The indexing process's work: index each source named on ``fd`` (a JSON
    ``[source_id, path]`` a line) until it ends, several a transaction; what to answer."""
    from sessiontree.storage.store.connect import connect, failure_line

    try:
        with connect(dsn) as conn:
            cache = None if cache_dir is None else SkeletonCache(cache_dir)
            indexer = Indexer(conn, redact=redact, threaded=False, skeleton_cache=cache)
            for batch in _batches(fd):
                with conn.transaction():
                    for source_id, path in batch:
                        indexer.submit(source_id, Path(path))
    except Exception as exc:
        failure = failure_line(exc, dsn)
        return _Answer(
            str(failure), failure.code if isinstance(failure, StoreError) else "store-error"
        )
    return _Answer()


_work = msgspec.json.Decoder(tuple[int, str])


def _batches(fd: int) -> Iterator[list[tuple[int, str]]]:
    """The work read from ``fd`` until it ends, in batches of what has come meanwhile
    (:data:`INDEX_BATCH` at most): a wait only when nothing is waiting."""
    lines: list[bytes] = []
    partial = b""
    ended = False
    while True:
        while (
            not ended
            and len(lines) < INDEX_BATCH
            and (not lines or select.select([fd], [], [], 0)[0])
        ):
            data = os.read(fd, 1 << 16)
            if not data:
                ended = True
                break
            *complete, partial = (partial + data).split(b"\n")
            lines += complete
        if not lines:
            return
        batch, lines = lines[:INDEX_BATCH], lines[INDEX_BATCH:]
        yield [_work.decode(line) for line in batch if line.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sessiontree.sync.indexing [--redact] [--cache DIR]``, the store's
    DSN the first line of its input (a JSON string): the indexing process a big sync
    starts; with ``--catch-up MACHINE_ID ROOT --log FILE``, the indexer a sync leaves
    running (:func:`start_catch_up`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the sync ends its input)
    cache = args[args.index("--cache") + 1] if "--cache" in args else None
    first = b""
    while not first.endswith(b"\n"):  # (byte by byte: what follows is the work's)
        byte = os.read(0, 1)
        if not byte:
            return 0  # (the sync went before it said where)
        first += byte
    dsn = msgspec.json.decode(first, type=str)
    if "--catch-up" in args:
        return _detached_catch_up(dsn, args, cache)
    answer = serve(dsn, redact="--redact" in args, cache_dir=cache)
    try:
        sys.stdout.buffer.write(msgspec.json.encode(answer) + b"\n")
        sys.stdout.buffer.flush()
    except BrokenPipeError:  # (the sync is gone: no one to answer)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
