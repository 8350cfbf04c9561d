"""The index database: its schema, opening it (made again when it is of another format
or no database at all: it is a cache), and the rule of a file read just after it changed."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from sessiontree.storage.layout import StrPath

#: Bumped when the schema or what a row means changes: an index of another is rebuilt.
FORMAT = 3

#: A file whose mtime is this close to (or after) when the index last read it may have
#: been written again in the same clock tick: its bytes are checked, not only its stat.
RACY_NS = 1_000_000_000


Source = Literal["transcript", "subagent", "history"]
SOURCES: tuple[Source, ...] = ("transcript", "subagent", "history")


#: Where the highlights of a snippet start and end (never in indexed text).
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"


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
CREATE VIRTUAL TABLE texts USING fts5(
    body, tokenize = 'unicode61 remove_diacritics 2', prefix = '3'
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


def settled(mtime_ns: int, checked_ns: int) -> bool:
    """Whether a file last written at ``mtime_ns`` was read (at ``checked_ns``) late
    enough that a write since would have moved its mtime."""
    return mtime_ns + RACY_NS < checked_ns
