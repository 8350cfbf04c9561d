"""Bringing the index up to date: each file read from where the index ended (or whole,
when it is new, truncated or replaced), the rows of its new lines written in the
transaction that moves its mark."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessiontree.catalog.search_index.database import (
    Source,
    empty,
    meta_number,
    open_index,
    set_meta_number,
    settled,
    too_many_dead,
)
from sessiontree.catalog.search_index.texts import (
    history_text,
    indexed_text,
    iter_records,
    parse_history,
)
from sessiontree.model.records import Line, Problem, Record
from sessiontree.model.search_parts import SEARCHED_TYPES, parse_search_parts
from sessiontree.storage.jsonl import scan_range
from sessiontree.storage.layout import Layout, StrPath, encode_cwd
from sessiontree.storage.skeleton_cache import FileMark
from sessiontree.storage.unreadable import not_a_file, read_failed

#: Bytes read after which an update commits (and starts a new transaction).
BATCH_BYTES = 32 * 1024 * 1024

#: Lines longer than this are not indexed (counted in :attr:`IndexStats.skipped_lines`).
MAX_LINE_BYTES = 32 * 1024 * 1024
#: How often, in bytes read, indexing one file reports its progress.
PROGRESS_BYTES = 4 * 1024 * 1024


@dataclass
class IndexStats:
    """What an update did."""

    files: int = 0  # files in scope
    indexed: int = 0  # files read: whole, or only what was appended
    rebuilt: int = 0  # files read again whole: truncated, replaced, rewritten
    removed: int = 0  # files gone, their rows removed
    bytes_read: int = 0  # bytes scanned (from where the index ended to the end of each)
    lines_decoded: int = 0  # lines decoded (those whose type holds text)
    rows_added: int = 0
    skipped_lines: int = 0  # lines over max_line_bytes
    problems: int = 0  # lines the scan could not read (bad JSON, bad shape, …)
    renewed: bool = False  # built anew: too many dead rows (database.DEAD_SHARE)
    #: Files of the scope that could not be read (a folder or link named as a
    #: transcript, a file gone or unreadable meanwhile): skipped, rows of any gone.
    unreadable: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class _Target:
    path: str
    source: Source
    project_dir: str | None
    session_id: str | None
    agent_id: str | None


def _targets(
    layout: Layout, project_dirs: Sequence[StrPath] | None, problems: list[Problem]
) -> list[_Target]:
    """Every file of the scope, as plain strings from directory entries: an index that is
    up to date is checked by this walk and a ``stat`` a file, nothing more, so the walk
    builds no :class:`~pathlib.Path` (thousands of them were half of a warm search)."""
    folders = (
        [os.fspath(p) for p in layout.iter_project_dirs()]
        if project_dirs is None
        else [os.fspath(p) for p in project_dirs]
    )
    found: list[_Target] = []
    for folder in folders:
        project = os.path.basename(folder)
        entries = sorted(layout.iter_transcript_entries(folder, problems), key=lambda e: e.name)
        for transcript in entries:
            session = transcript.name.removesuffix(".jsonl")
            found.append(_Target(transcript.path, "transcript", project, session, None))
            agents = os.path.join(transcript.path.removesuffix(".jsonl"), "subagents")
            for entry in _subagent_entries(agents, problems):
                agent = entry.name.removesuffix(".jsonl").removeprefix("agent-")
                found.append(_Target(entry.path, "subagent", project, session, agent))
    return found


def _subagent_entries(folder: str, problems: list[Problem]) -> list[os.DirEntry[str]]:
    """The ``.jsonl`` files of a ``subagents/`` folder (none without one), by name; what
    is no regular file, or a folder that cannot be listed, added to ``problems``."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        problems.append(read_failed(folder, exc))
        return []
    files = []
    for entry in entries:
        if not entry.name.endswith(".jsonl"):
            continue
        if entry.is_file(follow_symlinks=False):
            files.append(entry)
        else:
            problems.append(not_a_file(entry))
    return files


def update_index(
    db_path: StrPath,
    layout: Layout,
    *,
    project_dirs: Sequence[StrPath] | None = None,
    history: bool = True,
    progress: Callable[[int, int], None] | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IndexStats:
    """Bring the index at ``db_path`` up to date with the transcripts (and their
    subagents') of ``project_dirs`` (None: every project of ``layout``) and, with
    ``history``, ``history.jsonl``. Rows of files gone from that scope are removed.
    ``progress(done, total)``: bytes read of the bytes to read (what each file to read
    holds beyond what the index has of it), after each file and every
    :data:`PROGRESS_BYTES` within one (a 2 GB transcript moves the bar too)."""
    stats = IndexStats()
    targets = _targets(layout, project_dirs, stats.unreadable)
    if history and layout.history_path.is_file():
        targets.append(_Target(str(layout.history_path), "history", None, None, None))
    stats.files = len(targets)
    scope = None if project_dirs is None else {Path(p).name for p in project_dirs}
    with open_index(db_path) as conn:
        if too_many_dead(conn):
            conn.execute("BEGIN IMMEDIATE")
            if too_many_dead(conn):  # (another process may have renewed it meanwhile)
                empty(conn)
                stats.renewed = True
            conn.execute("COMMIT")
        known = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT path, id, source, project_dir, device, inode, size, mtime_ns, checked_ns "
                "FROM files"
            )
        }
        wanted = {t.path for t in targets}
        gone = [
            file_id
            for path, (file_id, source, project_dir, *_) in known.items()
            if path not in wanted
            and (
                (source == "history" and history)
                or (source != "history" and (scope is None or project_dir in scope))
            )
        ]
        if gone:
            conn.execute("BEGIN IMMEDIATE")
            for file_id in gone:
                _drop_file(conn, file_id, keep_file=False)
            conn.execute("COMMIT")
            stats.removed = len(gone)
        todo = [t for t in targets if not _unchanged(t.path, known.get(t.path))]
        sizes = [_to_read(t.path, known.get(t.path)) for t in todo]
        total, base = sum(sizes), 0

        def within(read: int) -> None:
            if progress is not None:
                progress(min(base + read, total), total)

        # Files are indexed in transactions of about BATCH_BYTES (many small files in
        # one: a commit costs FTS5 a segment), each file's rows and mark in the same one.
        # Another process indexing the same root waits for each (BEGIN IMMEDIATE), then
        # reads the marks this one left.
        opened = False
        try:
            since_commit = 0
            for done, target in enumerate(todo, 1):
                if not opened:
                    conn.execute("BEGIN IMMEDIATE")
                    opened, since_commit = True, stats.bytes_read
                _index_file(conn, layout, target, stats, max_line_bytes, within)
                if stats.bytes_read - since_commit >= BATCH_BYTES:
                    conn.execute("COMMIT")
                    opened = False
                base += sizes[done - 1]
                if progress is not None:
                    progress(base, total)
            if opened:
                conn.execute("COMMIT")
                opened = False
        finally:
            if opened:
                conn.execute("ROLLBACK")
    return stats


def _unchanged(path: str, known: tuple[Any, ...] | None) -> bool:
    """Whether the file a ``files`` row describes is as it was when last read, by its
    stat alone (the same file, size and mtime, that mtime settled: :func:`_settled`);
    then it is not opened at all."""
    if known is None:
        return False
    try:
        st = os.stat(path)
    except OSError:
        return False  # gone meanwhile: _index_file finds out
    same = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == tuple(known[3:7])
    return same and settled(st.st_mtime_ns, known[7])


def _to_read(path: str, known: tuple[Any, ...] | None) -> int:
    """About the bytes indexing ``path`` reads: what it holds beyond the size the index
    saw of the same file, else all of it (new, replaced, truncated)."""
    try:
        st = os.stat(path)
    except OSError:
        return 0
    if known is None or (st.st_dev, st.st_ino) != tuple(known[3:5]) or st.st_size < known[5]:
        return int(st.st_size)
    return int(st.st_size - known[5])


def _drop_file(conn: sqlite3.Connection, file_id: int, *, keep_file: bool) -> None:
    """Remove a file's rows (and, unless ``keep_file``, the file's own). Their words stay
    in the text index, dead: no entry matches them (the module :mod:`.database` says why)."""
    dropped = conn.execute("DELETE FROM entries WHERE file_id = ?", (file_id,)).rowcount
    set_meta_number(conn, "dead_rows", meta_number(conn, "dead_rows") + dropped)
    conn.execute("DELETE FROM calls WHERE file_id = ?", (file_id,))
    if not keep_file:
        conn.execute("DELETE FROM files WHERE id = ?", (file_id,))


def _index_file(
    conn: sqlite3.Connection,
    layout: Layout,
    target: _Target,
    stats: IndexStats,
    max_line_bytes: int,
    tick: Callable[[int], None] | None = None,
) -> None:
    """Index what the index lacks of one file, in the transaction open: the bytes
    appended since, or (a new, truncated or replaced file) all of it; a file gone, its
    rows go. ``tick(read)``: the bytes of it read so far, every :data:`PROGRESS_BYTES`."""
    path = Path(target.path)
    try:
        handle = path.open("rb", buffering=0)
    except OSError as exc:
        handle = None
        stats.unreadable.append(read_failed(path, exc))
    row = conn.execute(
        "SELECT id, device, inode, size, mtime_ns, end_offset, line_count, head, tail, "
        "checked_ns FROM files WHERE path = ?",
        (target.path,),
    ).fetchone()
    if handle is None:
        if row is not None:
            _drop_file(conn, row[0], keep_file=False)
            stats.removed += 1
        return
    with handle:
        _index_open_file(conn, layout, target, handle.fileno(), row, stats, max_line_bytes, tick)


def _index_open_file(
    conn: sqlite3.Connection,
    layout: Layout,
    target: _Target,
    fd: int,
    row: tuple[Any, ...] | None,
    stats: IndexStats,
    max_line_bytes: int,
    tick: Callable[[int], None] | None = None,
) -> None:
    checked_ns = time.time_ns()  # before the stat: a write after it is seen next time
    st = os.fstat(fd)
    start = number = 0
    grown: FileMark | None = None  # the mark of a file only grown since: read on from it
    if row is not None:
        file_id = row[0]
        device, inode, size, mtime_ns, end, _lines, head, tail, last_checked_ns = row[1:]
        mark = FileMark(device, inode, size, mtime_ns, end, head, tail)
        if mark.unchanged(st) and settled(st.st_mtime_ns, last_checked_ns):
            return
        if mark.only_grew(st, fd):
            start, number, grown = mark.end, row[6], mark
        else:
            _drop_file(conn, file_id, keep_file=True)
            stats.rebuilt += 1
    else:
        file_id = conn.execute(
            "INSERT INTO files (path, source, project_dir, session_id, agent_id, device, "
            "inode, size, mtime_ns, end_offset, line_count, head, tail) "
            "VALUES (?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, x'', x'')",
            (target.path, target.source, target.project_dir, target.session_id, target.agent_id),
        ).lastrowid
    path = Path(target.path)
    scan = scan_range(fd, path, start=start, number=number)
    stats.indexed += 1
    stats.bytes_read += scan.size - start
    # Problems of the torn last line (after resume_offset) are found again when it is whole.
    history = target.source == "history"
    stats.problems += sum(
        1
        for p in scan.problems
        if p.line is not None
        and p.line <= scan.resume_number
        # A history entry is no record: its fields are not a skeleton's (an int timestamp).
        and not (history and p.kind == "bad-field")
    )
    wanted: dict[int, Line] = {}
    for line in scan.lines:
        if line.offset >= scan.resume_offset:
            break  # a torn last line: indexed once it is whole
        if line.length > max_line_bytes:
            stats.skipped_lines += 1
            continue
        skeleton = line.skeleton
        if history or (skeleton is not None and skeleton.type in SEARCHED_TYPES):
            wanted[line.number] = line
    rows = _Rows(conn, file_id, target, layout)
    reported = start
    for record in iter_records(path, wanted.values(), read_ahead=True):
        stats.lines_decoded += 1
        line = wanted[record.line or 0]
        if tick is not None and line.offset - reported >= PROGRESS_BYTES:
            reported = line.offset
            tick(line.offset - start)
        if history:
            rows.add_history(record, line)
        else:
            rows.add_record(record, line)
    stats.rows_added += rows.flush()
    end = scan.resume_offset
    mark = grown.grown_to(fd, st, end) if grown is not None else FileMark.of(fd, st, end)
    conn.execute(
        "UPDATE files SET device = ?, inode = ?, size = ?, mtime_ns = ?, end_offset = ?, "
        "line_count = ?, head = ?, tail = ?, checked_ns = ?, cwd = COALESCE(cwd, ?) "
        "WHERE id = ?",
        (
            mark.device,
            mark.inode,
            # The size when the scan began: bytes written meanwhile are read next time.
            min(mark.size, scan.size),
            mark.mtime_ns,
            mark.end,
            scan.resume_number,
            mark.head,
            mark.tail,
            checked_ns,
            rows.cwd,
            file_id,
        ),
    )


def _moment(timestamp: Any) -> float | None:
    """Seconds since the epoch of a record's ISO 8601 timestamp (None: none, or bad)."""
    if not isinstance(timestamp, str):
        return None
    try:
        parsed = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass
class _Rows:
    """The rows of one file's new lines, written in batches."""

    conn: sqlite3.Connection
    file_id: int
    target: _Target
    layout: Layout
    cwd: str | None = None
    entries: list[tuple[Any, ...]] = field(default_factory=list)
    texts: list[tuple[int, str]] = field(default_factory=list)
    calls: dict[str, str | None] = field(default_factory=dict)
    next_id: int = 0
    written: int = 0

    def __post_init__(self) -> None:
        self.next_id = max(1, meta_number(self.conn, "next_id"))

    def _add(self, values: tuple[Any, ...], text: str) -> None:
        self.entries.append((self.next_id, self.file_id, *values))
        self.texts.append((self.next_id, indexed_text(text)))
        self.next_id += 1
        if len(self.entries) >= 2000:
            self.flush()

    def flush(self) -> int:
        if self.calls:
            self.conn.executemany(
                "INSERT OR REPLACE INTO calls VALUES (?, ?, ?)",
                [(self.file_id, call, name) for call, name in self.calls.items()],
            )
        self.conn.executemany(
            "INSERT INTO entries (id, file_id, uuid, type, kind, role, tool_name, timestamp, "
            "moment, line, offset, length, part, sidechain, session_id, cwd, project_dir) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.entries,
        )
        self.conn.executemany("INSERT INTO texts (rowid, body) VALUES (?, ?)", self.texts)
        set_meta_number(self.conn, "next_id", self.next_id)  # (never used twice)
        self.written += len(self.entries)
        self.entries, self.texts = [], []
        return self.written

    def _tool_name(self, call: str | None) -> str | None:
        if call is None:
            return None
        if call in self.calls:
            return self.calls[call]
        found = self.conn.execute(
            "SELECT name FROM calls WHERE file_id = ? AND call_id = ?", (self.file_id, call)
        ).fetchone()
        return found[0] if found else None

    def add_record(self, record: Record, line: Line) -> None:
        raw = record.raw
        if self.cwd is None:
            self.cwd = _str(raw.get("cwd"))
        sidechain = self.target.source == "subagent" or raw.get("isSidechain") is True
        timestamp = _str(raw.get("timestamp"))
        moment = _moment(timestamp)
        for number, part in enumerate(parse_search_parts(raw)):
            tool_name = part.tool_name
            if part.kind == "tool_use" and part.tool_use_id is not None:
                self.calls[part.tool_use_id] = tool_name
            elif part.kind == "tool_result":
                tool_name = self._tool_name(part.tool_use_id)
            if not part.text:
                continue
            values = (
                _str(raw.get("uuid")),
                _str(raw.get("type")),
                part.kind,
                part.role,
                tool_name,
                timestamp,
                moment,
                line.number,
                line.offset,
                line.length,
                number,
                int(sidechain),
                None,
                None,
                None,
            )
            self._add(values, part.text)

    def add_history(self, record: Record, line: Line) -> None:
        entry = parse_history(record, line.number)
        if not entry.display:
            return
        text = history_text(entry, self.layout)
        stamp = entry.timestamp
        moment = stamp / 1000 if isinstance(stamp, int | float) else None
        timestamp = None
        if moment is not None:
            with contextlib.suppress(ValueError, OverflowError, OSError):
                utc = datetime.fromtimestamp(moment, UTC)
                timestamp = utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
        project = entry.project
        values = (
            None,
            None,
            "history",
            "user",
            None,
            timestamp,
            moment,
            line.number,
            line.offset,
            line.length,
            0,
            0,
            entry.session_id,
            project,
            encode_cwd(project) if project else None,
        )
        self._add(values, text)


# -- querying ----------------------------------------------------------------------------
