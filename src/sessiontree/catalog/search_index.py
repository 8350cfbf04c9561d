"""The search index: every record of every session in SQLite FTS5, kept up to date by
reading only what was appended.

One database per config root, in a file the caller names (the CLI's cache folder: never
inside the root, the index is ours, not the client's). It holds a row per searchable part
of a record (:mod:`sessiontree.model.search_parts`): prompts, replies, thoughts, tool
inputs and outputs (with the tool's name), compaction summaries, system lines and
attachments, of every branch (rewound ones, compacted history) of every transcript, of
every subagent transcript (``<session>/subagents/*.jsonl``), and each entry of
``history.jsonl``. Beside the text, what the filters need: project, session, uuid,
record type, kind, role, tool name, timestamp, line and byte offset, sidechain.

Incremental (:func:`update_index`): transcripts only grow, so a file indexed before is
read only from where the index ended, when it is the same file only grown since (the
skeleton cache's rule, :class:`~sessiontree.storage.skeleton_cache.FileMark`); a file
whose stat is unchanged since well before it was last read is not opened at all (one
changed within :data:`RACY_NS` of that read is checked by its bytes: a write in the same
clock tick leaves the mtime as it was, git's "racily clean" case). A truncated or
replaced file is indexed again whole; a deleted file's rows go. A torn last line is not
indexed until it is complete. Lines are found by the skeleton scan and decoded only
when their type holds text, as the fields searched
(:class:`~sessiontree.model.search_parts.SearchFields`), one at a time: a file is never
held. Bad lines and lines over ``max_line_bytes`` are
skipped and counted.

Queries (:func:`query`) rank by bm25, cut an FTS5 ``snippet()`` around the match, and
say of each hit whether it is on its transcript's active path, computed then (appends
move the active path): the transcripts with hits are opened through the skeleton cache
the caller passes. Plain words are searched as FTS5 phrases (each whitespace-separated
word quoted: ``foo-bar`` finds "foo bar", a stray ``"`` is text); ``fts=True`` takes the
query as FTS5 syntax, and a syntax error is :class:`QuerySyntaxError`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import msgspec

from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import DataError, Refused
from sessiontree.history.log import read_paste
from sessiontree.model.builders.history import expand_pastes, parse_history_entry
from sessiontree.model.records import Line, Record
from sessiontree.model.search_parts import (
    SEARCHED_TYPES,
    Kind,
    Role,
    SearchFields,
    parse_search_parts,
)
from sessiontree.storage.jsonl import iter_path_records, scan_range
from sessiontree.storage.layout import Layout, StrPath, encode_cwd, subagents_dir
from sessiontree.storage.skeleton_cache import FileMark, SkeletonCache

#: Bumped when the schema or what a row means changes: an index of another is rebuilt.
FORMAT = 2

#: Bytes read after which an update commits (and starts a new transaction).
BATCH_BYTES = 32 * 1024 * 1024

#: Lines longer than this are not indexed (counted in :attr:`IndexStats.skipped_lines`).
MAX_LINE_BYTES = 32 * 1024 * 1024

#: A file whose mtime is this close to (or after) when the index last read it may have
#: been written again in the same clock tick: its bytes are checked, not only its stat.
RACY_NS = 1_000_000_000

#: Tokens of text around the match in a snippet (FTS5 allows at most 64).
SNIPPET_TOKENS = 24
#: Characters a snippet is cut to, around its first highlight.
SNIPPET_CHARS = 300

Source = Literal["transcript", "subagent", "history"]
SOURCES: tuple[Source, ...] = ("transcript", "subagent", "history")

#: Where the highlights of a snippet start and end (never in indexed text: see _clean).
_OPEN, _CLOSE = "\x02", "\x03"


class QuerySyntaxError(Refused):
    """A query given as FTS5 syntax that FTS5 refuses (a usage error: exit 2)."""

    exit_code = 2

    def __init__(self, query: str, reason: str) -> None:
        super().__init__(f"not a valid FTS5 query: {query!r} ({reason})")
        self.query = query
        self.reason = reason


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


@dataclass(frozen=True)
class SearchHit:
    """One match: a part of a record (or a history entry), where it is, and a snippet
    whose ``highlights`` are the (start, end) character ranges of the matched text."""

    session_id: str | None
    uuid: str | None
    type: str | None
    kind: Kind
    role: Role
    tool_name: str | None
    timestamp: str | None
    project: str | None  # the cwd the session ran in (a history entry's project)
    project_dir: str | None  # the project folder's name under projects/
    path: str
    source: Source
    agent_id: str | None
    is_sidechain: bool
    line: int
    offset: int
    rank: float
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    on_active_path: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "uuid": self.uuid,
            "type": self.type,
            "onActivePath": self.on_active_path,
            "snippet": self.snippet,
            "highlights": [list(pair) for pair in self.highlights],
            "rank": self.rank,
            "kind": self.kind,
            "role": self.role,
            "toolName": self.tool_name,
            "timestamp": self.timestamp,
            "project": self.project,
            "projectDir": self.project_dir,
            "path": self.path,
            "source": self.source,
            "agentId": self.agent_id,
            "isSidechain": self.is_sidechain,
            "line": self.line,
            "offset": self.offset,
        }


_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    project_dir TEXT,
    session_id TEXT,
    agent_id TEXT,
    cwd TEXT,
    device INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    checked_ns INTEGER NOT NULL DEFAULT 0,
    end_offset INTEGER NOT NULL,
    line_count INTEGER NOT NULL,
    head BLOB NOT NULL,
    tail BLOB NOT NULL
);
CREATE TABLE entries(
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    uuid TEXT,
    type TEXT,
    kind TEXT NOT NULL,
    role TEXT NOT NULL,
    tool_name TEXT,
    timestamp TEXT,
    moment REAL,
    line INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    sidechain INTEGER NOT NULL,
    session_id TEXT,
    cwd TEXT,
    project_dir TEXT
);
CREATE INDEX entries_by_file ON entries(file_id);
CREATE TABLE calls(
    file_id INTEGER NOT NULL, call_id TEXT NOT NULL, name TEXT,
    PRIMARY KEY (file_id, call_id)
) WITHOUT ROWID;
CREATE TABLE active_paths(
    path TEXT PRIMARY KEY,
    device INTEGER NOT NULL, inode INTEGER NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, checked_ns INTEGER NOT NULL, uuids BLOB NOT NULL
);
CREATE VIRTUAL TABLE texts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
"""

_TABLES = ("meta", "files", "entries", "calls", "active_paths", "texts")


@contextlib.contextmanager
def open_index(db_path: StrPath) -> Iterator[sqlite3.Connection]:
    """The index database at ``db_path`` (made, 0600 in a 0700 folder, if missing; one
    of another format, or not a database, is made again: it is a cache), in WAL mode."""
    path = Path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    conn = _connect(path)
    try:
        try:
            _ensure_schema(conn)
        except sqlite3.DatabaseError:  # corrupt, or not a database: ours, made again
            conn.close()
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{path}{suffix}")
            conn = _connect(path)
            _ensure_schema(conn)
        yield conn
    finally:
        conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    return sqlite3.connect(path, isolation_level=None, timeout=30)


def _ensure_schema(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # a cache: a crash loses at most its end
    if _format(conn) == str(FORMAT):
        return  # (read without taking the write lock: a query does not wait for it)
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _format(conn) != str(FORMAT):  # (another process may have made it meanwhile)
            for table in _TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO meta VALUES ('format', ?)", (str(FORMAT),))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _format(conn: sqlite3.Connection) -> str | None:
    """The index's format, None for a new file (no ``meta`` table)."""
    try:
        found = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except sqlite3.OperationalError:
        return None
    return str(found[0]) if found else None


def reset_index(db_path: StrPath) -> None:
    """Empty the index (the next :func:`update_index` reads every file whole)."""
    with open_index(db_path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        for table in ("files", "entries", "calls", "active_paths", "texts"):
            conn.execute(f"DELETE FROM {table}")
        conn.execute("COMMIT")


# -- updating ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    path: str
    source: Source
    project_dir: str | None
    session_id: str | None
    agent_id: str | None


def _targets(layout: Layout, project_dirs: Sequence[StrPath] | None) -> list[_Target]:
    folders = (
        list(layout.iter_project_dirs())
        if project_dirs is None
        else [Path(p) for p in project_dirs]
    )
    found: list[_Target] = []
    for folder in folders:
        for transcript in sorted(layout.iter_transcripts(folder)):
            session = transcript.stem
            found.append(_Target(str(transcript), "transcript", folder.name, session, None))
            with contextlib.suppress(OSError):
                for entry in sorted(os.scandir(subagents_dir(transcript)), key=lambda e: e.name):
                    if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                        agent = entry.name.removesuffix(".jsonl").removeprefix("agent-")
                        found.append(_Target(entry.path, "subagent", folder.name, session, agent))
    return found


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
    ``progress(done, total)`` is called after each file that had to be read."""
    stats = IndexStats()
    targets = _targets(layout, project_dirs)
    if history and layout.history_path.is_file():
        targets.append(_Target(str(layout.history_path), "history", None, None, None))
    stats.files = len(targets)
    scope = None if project_dirs is None else {Path(p).name for p in project_dirs}
    with open_index(db_path) as conn:
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
                _index_file(conn, layout, target, stats, max_line_bytes)
                if stats.bytes_read - since_commit >= BATCH_BYTES:
                    conn.execute("COMMIT")
                    opened = False
                if progress is not None:
                    progress(done, len(todo))
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
    return same and _settled(st.st_mtime_ns, known[7])


def _settled(mtime_ns: int, checked_ns: int) -> bool:
    """Whether a file last written at ``mtime_ns`` was read (at ``checked_ns``) late
    enough that a write since would have moved its mtime."""
    return mtime_ns + RACY_NS < checked_ns


def _drop_file(conn: sqlite3.Connection, file_id: int, *, keep_file: bool) -> None:
    """Remove a file's rows (and, unless ``keep_file``, the file's own)."""
    conn.execute(
        "DELETE FROM texts WHERE rowid IN (SELECT id FROM entries WHERE file_id = ?)", (file_id,)
    )
    conn.execute("DELETE FROM entries WHERE file_id = ?", (file_id,))
    conn.execute("DELETE FROM calls WHERE file_id = ?", (file_id,))
    if not keep_file:
        conn.execute("DELETE FROM files WHERE id = ?", (file_id,))


def _index_file(
    conn: sqlite3.Connection,
    layout: Layout,
    target: _Target,
    stats: IndexStats,
    max_line_bytes: int,
) -> None:
    """Index what the index lacks of one file, in the transaction open: the bytes
    appended since, or (a new, truncated or replaced file) all of it; a file gone, its
    rows go."""
    path = Path(target.path)
    try:
        handle = path.open("rb", buffering=0)
    except OSError:
        handle = None
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
        _index_open_file(conn, layout, target, handle.fileno(), row, stats, max_line_bytes)


def _index_open_file(
    conn: sqlite3.Connection,
    layout: Layout,
    target: _Target,
    fd: int,
    row: tuple[Any, ...] | None,
    stats: IndexStats,
    max_line_bytes: int,
) -> None:
    checked_ns = time.time_ns()  # before the stat: a write after it is seen next time
    st = os.fstat(fd)
    start = number = 0
    if row is not None:
        file_id = row[0]
        device, inode, size, mtime_ns, end, _lines, head, tail, checked_ns = row[1:]
        mark = FileMark(device, inode, size, mtime_ns, end, head, tail)
        if mark.unchanged(st) and _settled(st.st_mtime_ns, checked_ns):
            return
        if mark.only_grew(st, fd):
            start, number = mark.end, row[6]
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
    for record in iter_path_records(path, wanted.values(), fields=SearchFields):
        stats.lines_decoded += 1
        line = wanted[record.line or 0]
        if history:
            rows.add_history(record, line)
        else:
            rows.add_record(record, line)
    stats.rows_added += rows.flush()
    mark = FileMark.of(fd, st, scan.resume_offset)
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


def _clean(text: str) -> str:
    """Indexed text without the characters that mark a snippet's highlights."""
    if _OPEN in text or _CLOSE in text:
        return text.replace(_OPEN, " ").replace(_CLOSE, " ")
    return text


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
        found = self.conn.execute("SELECT MAX(id) FROM entries").fetchone()
        self.next_id = (found[0] or 0) + 1

    def _add(self, values: tuple[Any, ...], text: str) -> None:
        self.entries.append((self.next_id, self.file_id, *values))
        self.texts.append((self.next_id, _clean(text)))
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
            "moment, line, offset, sidechain, session_id, cwd, project_dir) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.entries,
        )
        self.conn.executemany("INSERT INTO texts (rowid, body) VALUES (?, ?)", self.texts)
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
        for part in parse_search_parts(raw):
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
                int(sidechain),
                None,
                None,
                None,
            )
            self._add(values, part.text)

    def add_history(self, record: Record, line: Line) -> None:
        entry = parse_history_entry(record.raw, line=line.number)
        if not entry.display:
            return
        pastes = entry.paste_texts(lambda content_hash: read_paste(self.layout, content_hash))
        text = expand_pastes(entry.display, pastes)
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
            0,
            entry.session_id,
            project,
            encode_cwd(project) if project else None,
        )
        self._add(values, text)


# -- querying ----------------------------------------------------------------------------


def phrase_query(text: str) -> str:
    """Plain words as an FTS5 query: each whitespace-separated word a quoted phrase (its
    own ``"`` doubled), all of them required. ``foo-bar`` is the phrase "foo bar"; no
    word is FTS5 syntax."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in text.split())


#: What SQLite says of a MATCH it cannot parse (any other error is not the query's).
_SYNTAX_ERRORS = ("fts5", "syntax error", "no such column", "unterminated", "unknown special")


@dataclass(frozen=True)
class Filters:
    """What :func:`query` narrows hits to; None (or empty) for no limit of that kind."""

    project_dirs: Collection[StrPath] | None = None  # project folders (paths or names)
    session_ids: Collection[str] | None = None
    since: datetime | float | None = None  # a moment (aware) or epoch seconds, inclusive
    until: datetime | float | None = None  # exclusive
    roles: Collection[Role] | None = None
    kinds: Collection[Kind] | None = None
    tools: Collection[str] | None = None  # tool names, case-insensitive
    sources: Collection[Source] | None = None

    def where(self) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []

        def among(column: str, values: Collection[Any] | None, *, nocase: bool = False) -> None:
            if values is None:
                return
            items = list(values)
            marks = ", ".join("?" * len(items))
            collate = " COLLATE NOCASE" if nocase else ""
            clauses.append(f"{column}{collate} IN ({marks})" if items else "0")
            params.extend(items)

        if self.project_dirs is not None:
            names = [Path(p).name for p in self.project_dirs]
            among("COALESCE(e.project_dir, f.project_dir)", names)
        among("COALESCE(e.session_id, f.session_id)", self.session_ids)
        among("e.role", self.roles)
        among("e.kind", self.kinds)
        among("e.tool_name", self.tools, nocase=True)
        among("f.source", self.sources)
        for bound, op in ((self.since, ">="), (self.until, "<")):
            if bound is not None:
                seconds = bound.timestamp() if isinstance(bound, datetime) else float(bound)
                clauses.append(f"e.moment {op} ?")
                params.append(seconds)
        return clauses, params


_SELECT = (
    "SELECT e.id, f.path, f.source, COALESCE(e.project_dir, f.project_dir), "
    "COALESCE(e.cwd, f.cwd), COALESCE(e.session_id, f.session_id), f.agent_id, e.uuid, "
    "e.type, e.kind, e.role, e.tool_name, e.timestamp, e.line, e.offset, e.sidechain, "
    "texts.rank "
    "FROM texts JOIN entries e ON e.id = texts.rowid JOIN files f ON f.id = e.file_id "
    "WHERE texts MATCH ?{where} ORDER BY texts.rank, e.id LIMIT ? OFFSET ?"
)
#: The snippets of the hits kept, cut only for them (not for every match: a common word
#: matches tens of thousands of rows, and a snippet costs more than ranking one).
_SNIPPETS = (
    "SELECT rowid, snippet(texts, 0, char(2), char(3), '…', {tokens}) FROM texts "
    "WHERE texts MATCH ? AND rowid IN ({ids})"
)
#: Ids a snippet query asks for at a time.
_SNIPPET_BATCH = 500


def query(
    db_path: StrPath,
    text: str,
    *,
    fts: bool = False,
    filters: Filters | None = None,
    on_active_path: bool | None = None,
    limit: int | None = None,
    skeleton_cache: SkeletonCache | None = None,
) -> list[SearchHit]:
    """The hits of ``text`` in the index at ``db_path``, best first (bm25), at most
    ``limit``. ``fts``: ``text`` is FTS5 syntax (else plain words: :func:`phrase_query`).
    ``on_active_path``: only hits on (True) or off (False) their transcript's active
    path, computed now (history entries are on none). The transcripts with hits are
    opened through ``skeleton_cache`` when given (and their active path kept in the index
    until they change). Raises :class:`QuerySyntaxError` for FTS5 syntax FTS5 refuses,
    :class:`~sessiontree.errors.Refused` for an empty query."""
    match = text.strip() if fts else phrase_query(text)
    if not match:
        raise Refused("an empty query matches everything; give some text")
    clauses, params = (filters or Filters()).where()
    where = "".join(f" AND {clause}" for clause in clauses)
    sql = _SELECT.format(where=where)
    page = max(200, 2 * limit) if limit is not None else -1
    with open_index(db_path) as conn:
        active = _ActivePaths(conn, skeleton_cache)
        kept: list[tuple[Any, ...]] = []
        offset = 0
        while limit is None or len(kept) < limit:
            try:
                rows = conn.execute(sql, [match, *params, page, offset]).fetchall()
            except sqlite3.OperationalError as exc:
                reason = str(exc)
                if fts and any(sign in reason.lower() for sign in _SYNTAX_ERRORS):
                    raise QuerySyntaxError(text, reason) from None
                raise
            for row in rows:
                on_path = _on_path(row, active)
                if on_active_path is None or (on_path == on_active_path and row[2] != "history"):
                    kept.append((*row, on_path))
            if page < 0 or len(rows) < page:
                break
            offset += page
        if limit is not None:
            kept = kept[:limit]
        snippets: dict[int, str] = {}
        for at in range(0, len(kept), _SNIPPET_BATCH):
            ids = [row[0] for row in kept[at : at + _SNIPPET_BATCH]]
            marks = ", ".join("?" * len(ids))
            found = conn.execute(
                _SNIPPETS.format(tokens=SNIPPET_TOKENS, ids=marks), [match, *ids]
            ).fetchall()
            snippets.update(found)
    return [_hit(row, snippets.get(row[0], "")) for row in kept]


class _ActivePaths:
    """The active path of each transcript with hits, read once per query: kept in the
    index beside the file's stat, read again (through the skeleton cache) when the file
    changed since, or changed just before it was read (:func:`_settled`)."""

    def __init__(self, conn: sqlite3.Connection, cache: SkeletonCache | None) -> None:
        self.conn = conn
        self.cache = cache
        self.paths: dict[str, frozenset[str]] = {}

    def of(self, path: str) -> frozenset[str]:
        found = self.paths.get(path)
        if found is None:
            found = self.paths[path] = self._read(path)
        return found

    def _read(self, path: str) -> frozenset[str]:
        checked_ns = time.time_ns()  # before the stat: a write after it is seen next time
        try:
            st = os.stat(path)
        except OSError:
            return frozenset()  # gone since it was indexed
        stat = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        row = self.conn.execute(
            "SELECT device, inode, size, mtime_ns, checked_ns, uuids FROM active_paths "
            "WHERE path = ?",
            (path,),
        ).fetchone()
        if row is not None and tuple(row[:4]) == stat and _settled(st.st_mtime_ns, row[4]):
            with contextlib.suppress(msgspec.DecodeError):
                return frozenset(_uuids_decoder.decode(row[5]))
        try:
            uuids = Transcript.open(path, skeleton_cache=self.cache).active_path
        except (DataError, OSError):
            return frozenset()
        # A memo, not the index: when another process holds the index, it is not kept.
        with contextlib.suppress(sqlite3.OperationalError):
            self.conn.execute("PRAGMA busy_timeout = 50")
            self.conn.execute(
                "INSERT OR REPLACE INTO active_paths VALUES (?, ?, ?, ?, ?, ?, ?)",
                (path, *stat, checked_ns, msgspec.json.encode(uuids)),
            )
        return frozenset(uuids)


_uuids_decoder = msgspec.json.Decoder(list[str])


def _on_path(row: tuple[Any, ...], active: _ActivePaths) -> bool:
    path, source, uuid = row[1], row[2], row[7]
    return source != "history" and uuid is not None and uuid in active.of(path)


def _hit(row: tuple[Any, ...], marked: str) -> SearchHit:
    (
        _id,
        path,
        source,
        project_dir,
        cwd,
        session_id,
        agent_id,
        uuid,
        kind_of_record,
        kind,
        role,
        tool_name,
        timestamp,
        line,
        offset,
        sidechain,
        rank,
        on_path,
    ) = row
    snippet, highlights = parse_snippet(marked)
    return SearchHit(
        session_id=session_id,
        uuid=uuid,
        type=kind_of_record,
        kind=kind,
        role=role,
        tool_name=tool_name,
        timestamp=timestamp,
        project=cwd,
        project_dir=project_dir,
        path=path,
        source=source,
        agent_id=agent_id,
        is_sidechain=bool(sidechain),
        line=line,
        offset=offset,
        rank=rank,
        snippet=snippet,
        highlights=highlights,
        on_active_path=on_path,
    )


def parse_snippet(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """An FTS5 snippet with its highlight marks as plain text, whitespace runs folded to
    one space, cut to :data:`SNIPPET_CHARS` around its first highlight, and the
    (start, end) ranges of the highlights in it."""
    folded = " ".join(marked.split())
    out: list[str] = []
    ranges: list[tuple[int, int]] = []
    size = 0
    opened: int | None = None
    for char in folded:
        if char == _OPEN:
            opened = size
        elif char == _CLOSE:
            if opened is not None and size > opened:
                ranges.append((opened, size))
            opened = None
        else:
            out.append(char)
            size += 1
    text = "".join(out)
    if len(text) <= SNIPPET_CHARS:
        return text, tuple(ranges)
    first = ranges[0][0] if ranges else 0
    begin = max(0, min(first - SNIPPET_CHARS // 3, len(text) - SNIPPET_CHARS))
    end = begin + SNIPPET_CHARS
    cut = text[begin:end]
    lead = "…" if begin > 0 and not cut.startswith("…") else ""
    trail = "…" if end < len(text) and not cut.endswith("…") else ""
    shift = len(lead) - begin
    kept = tuple(
        (max(a, begin) + shift, min(b, end) + shift) for a, b in ranges if a < end and b > begin
    )
    return lead + cut + trail, kept
