"""The viewer on a store (``serve --store``): a small pool of read-only connections, one
for each request, and opening the session a URL names from the store.

Every connection is :func:`~sessiontree.storage.store.connect.connect`'s with
``read_only``: the server refuses any write on it, and each request reads one
repeatable-read snapshot; it is rolled back when the request ends, so the next request
reads what was synced since. A failure of the server is one
:class:`~sessiontree.errors.StoreError` line (a page), never the DSN or its password.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Self, cast

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool

from sessiontree.conversation.stored import open_stored
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Ambiguous, NotFound
from sessiontree.model.records import is_session_id
from sessiontree.storage.store.connect import CONNECT_TIMEOUT, connect, failures_as_store_errors
from sessiontree.storage.store.reads import StoredSource, current_sources
from sessiontree.storage.store.schema import check_schema

#: Connections the viewer holds at most (each request takes one while it reads).
MAX_CONNECTIONS = 4


class _ReadOnlyConnection(psycopg.Connection[TupleRow]):
    """What the pool makes its connections with: :func:`connect`, read-only."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        # (the pool's own connection options are not used: connect() sets them)
        return cast(Self, connect(conninfo, read_only=True))


class StorePool:
    """The viewer's read-only connections to the store at ``dsn`` (none made until a
    request needs one; at most :data:`MAX_CONNECTIONS`)."""

    def __init__(self, dsn: str, *, max_size: int = MAX_CONNECTIONS) -> None:
        self.dsn = dsn
        self._pool: ConnectionPool[_ReadOnlyConnection] = ConnectionPool(
            dsn,
            connection_class=_ReadOnlyConnection,
            min_size=0,
            max_size=max_size,
            open=False,
            check=ConnectionPool.check_connection,  # (a server restarted meanwhile)
            timeout=CONNECT_TIMEOUT + 5,
            num_workers=1,
            name="sessiontree-viewer",
        )
        self._checked = False
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """One connection for the block, rolled back at its end; a failure of the server
        in the block is a StoreError."""
        with failures_as_store_errors(self.dsn):
            if not self._checked:
                self._check()
            with self._pool.connection() as conn:
                try:
                    yield conn
                finally:
                    _rollback(conn)

    def _check(self) -> None:
        """Until a first connection is made, each request makes one itself, the store's
        schema checked, before it opens the pool: so what stops it (a wrong database, a
        refused login, an old schema) is said at once, not after the pool's timeout."""
        with contextlib.closing(connect(self.dsn, read_only=True)) as first:
            check_schema(first)
        with self._lock:
            self._pool.open()  # (once: opening an open pool does nothing)
            self._checked = True

    def close(self) -> None:
        self._pool.close()


def _rollback(conn: psycopg.Connection[Any]) -> None:
    """End the block's snapshot (a broken connection: the pool discards it)."""
    if not conn.closed:
        with contextlib.suppress(psycopg.Error):
            conn.rollback()


def stored_source(conn: psycopg.Connection[Any], session_id: str) -> StoredSource:
    """The stored transcript of a session named by its full id (a URL names nothing
    else); the same session synced by two machines is ambiguous."""
    if not is_session_id(session_id):
        raise NotFound("session", session_id)
    found = current_sources(conn, kinds=("transcript",), session_ids=[session_id.lower()])
    if not found:
        raise NotFound("session in the store", session_id)
    if len(found) > 1:
        raise Ambiguous("session", session_id, [f"{s.path} (machine {s.machine})" for s in found])
    return found[0]


def open_stored_session(conn: psycopg.Connection[Any], session_id: str) -> Transcript:
    return open_stored(conn, stored_source(conn, session_id))
