"""The index database: its schema, opening it (made again when it is of another format
or no database at all: it is a cache), and the rule of a file read just after it changed.

The full-text table holds no text, only the index of its words (FTS5 ``content=''``):
the text of every row is in the transcripts already, at the offset its entry names, and
a snippet reads it from there (:mod:`.snippets`). An index that kept a copy took 60% of
the size of what it indexed; without it, about a fifth.

Such a table cannot forget a row's words without being given the row's text again, and
a file that was replaced, truncated or deleted has no text to give. Its entries go, and
its words stay behind as *dead rows*, matched by no entry (every query joins the entries),
counted in ``meta``; once they are many (:data:`DEAD_SHARE`), the next update builds the
index anew. Row ids are never used twice (``meta.next_id``): a new row must not inherit
a dead one's words."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from sessiontree.storage.layout import StrPath

#: Bumped when the schema or what a row means changes: an index of another is rebuilt.
FORMAT = 5

#: Dead rows (words of rows no entry has any more) beyond this share of the live ones,
#: and at least :data:`DEAD_FLOOR` of them, make the next update build the index anew.
DEAD_SHARE = 0.25
DEAD_FLOOR = 20_000

#: A file whose mtime is this close to (or after) when the index last read it may have
#: been written again in the same clock tick: its bytes are checked, not only its stat.
RACY_NS = 1_000_000_000


Source = Literal["transcript", "subagent", "history"]
SOURCES: tuple[Source, ...] = ("transcript", "subagent", "history")


#: Where the highlights of a snippet start and end (never in indexed text).
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"


#: The tokenizer of the text index (and of the table snippets are cut in: the same words).
TOKENIZE = "'unicode61 remove_diacritics 2'"

_SCHEMA = f"""
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
    length INTEGER NOT NULL,
    part INTEGER NOT NULL,
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
CREATE VIRTUAL TABLE texts USING fts5(
    body, content = '', tokenize = {TOKENIZE}, prefix = '3'
);
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
            conn.execute("INSERT INTO meta VALUES ('next_id', '1'), ('dead_rows', '0')")
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
        empty(conn)
        conn.execute("COMMIT")


def empty(conn: sqlite3.Connection) -> None:
    """Remove every row, in the transaction open (row ids still go on from where they
    were: none is used twice)."""
    for table in ("files", "entries", "calls", "active_paths"):
        conn.execute(f"DELETE FROM {table}")
    conn.execute("INSERT INTO texts(texts) VALUES ('delete-all')")
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'dead_rows'")


def meta_number(conn: sqlite3.Connection, key: str) -> int:
    found = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(found[0]) if found else 0


def set_meta_number(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))


def too_many_dead(conn: sqlite3.Connection) -> bool:
    """Whether the dead rows are enough that the index should be built anew."""
    dead = meta_number(conn, "dead_rows")
    if dead < DEAD_FLOOR:
        return False
    live = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    return bool(dead > DEAD_SHARE * live)


# -- updating ----------------------------------------------------------------------------


def settled(mtime_ns: int, checked_ns: int) -> bool:
    """Whether a file last written at ``mtime_ns`` was read (at ``checked_ns``) late
    enough that a write since would have moved its mtime."""
    return mtime_ns + RACY_NS < checked_ns
