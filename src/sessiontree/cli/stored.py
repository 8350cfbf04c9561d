"""What the commands share to read from the store (``--store``, ``$SESSIONTREE_STORE``):
a connection checked against this program's schema, and a ``SESSION`` opened from it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sessiontree.cli.main import Env

if TYPE_CHECKING:
    import psycopg

    from sessiontree.catalog.stored import StoredInfo
    from sessiontree.conversation.transcript import Transcript
    from sessiontree.model.builders.history import HistoryLine

F = TypeVar("F", bound=Callable[..., Any])


def store_filters(command: F) -> F:
    """``--machine`` and ``--user``: only what that machine (label or id) or OS user
    synced (read from the store only)."""
    command = click.option(
        "--user", metavar="NAME", help="With --store: only sessions this OS user synced."
    )(command)
    return click.option(
        "--machine",
        metavar="NAME",
        help="With --store: only sessions this machine (its label or id) synced.",
    )(command)


def refuse_filters_without_store(env: Env, machine: str | None, user: str | None) -> None:
    if env.store is None and (machine is not None or user is not None):
        raise click.UsageError("--machine and --user read the store: give --store DSN")


@contextlib.contextmanager
def store_connection(env: Env, *, write: bool = False) -> Iterator[psycopg.Connection[Any]]:
    """A connection to the run's store, its schema checked (``write``: brought up to
    date, and not read-only); closed after the block."""
    from sessiontree.storage.store.connect import connect, failures_as_store_errors
    from sessiontree.storage.store.schema import check_schema, migrate

    assert env.store is not None
    conn = connect(env.store, read_only=not write)
    try:
        with failures_as_store_errors(env.store):
            if write:
                migrate(conn)
            else:
                check_schema(conn)
                conn.rollback()
            yield conn
    finally:
        conn.close()


#: ``ctx.meta`` key of this run's store connection, kept open while its command runs
#: (a transcript read from the store reads its lines through it).
_CONNECTION = "sessiontree.store-connection"


def run_connection(env: Env) -> psycopg.Connection[Any]:
    """The run's read connection to the store, opened once, closed when the command
    ends (click's context closes it)."""
    ctx = click.get_current_context()
    conn: psycopg.Connection[Any] | None = ctx.meta.get(_CONNECTION)
    if conn is None:
        conn = ctx.with_resource(store_connection(env))
        ctx.meta[_CONNECTION] = conn
    return conn


def open_stored_session(
    env: Env, ref: str, *, machine: str | None = None, user: str | None = None
) -> Transcript:
    """The transcript ``ref`` names in the store, read as a file is."""
    from sessiontree.catalog.stored import resolve_stored
    from sessiontree.conversation.stored import open_stored
    from sessiontree.storage.store.connect import failures_as_store_errors

    assert env.store is not None
    conn = run_connection(env)
    with failures_as_store_errors(env.store):
        found = resolve_stored(conn, ref, machine=machine, user=user)
        return open_stored(conn, found.source)


def resolve_in_store(
    env: Env, ref: str, *, machine: str | None = None, user: str | None = None
) -> StoredInfo:
    from sessiontree.catalog.stored import resolve_stored
    from sessiontree.storage.store.connect import failures_as_store_errors

    assert env.store is not None
    with failures_as_store_errors(env.store):
        return resolve_stored(run_connection(env), ref, machine=machine, user=user)


def stored_backups(env: Env, transcript: Transcript) -> set[str]:
    """The names of the file-history backups the store keeps of a stored transcript's
    session (from the machine and root it came from)."""
    from sessiontree.storage.store.reads import StoredLines, session_backups

    reader = transcript.reader
    assert isinstance(reader, StoredLines)
    return set(session_backups(run_connection(env), reader.source, transcript.session_id))


def stored_history(env: Env) -> tuple[list[HistoryLine], Callable[[str], str | None]]:
    """Every machine's ``history.jsonl`` lines, merged as the store keeps them, parsed;
    and where their pastes are (any machine's ``paste-cache/``)."""
    from sessiontree.history.log import parse_history_lines
    from sessiontree.storage.layout import is_paste_hash
    from sessiontree.storage.store.connect import failures_as_store_errors
    from sessiontree.storage.store.reads import history_lines, read_named_artifact

    assert env.store is not None
    conn = run_connection(env)
    with failures_as_store_errors(env.store):
        lines = list(parse_history_lines(history_lines(conn)))

    def paste(content_hash: str) -> str | None:
        if not is_paste_hash(content_hash):
            return None
        data = read_named_artifact(conn, f"paste-cache/{content_hash}.txt")
        return None if data is None else data.decode("utf-8", errors="replace")

    return lines, paste
