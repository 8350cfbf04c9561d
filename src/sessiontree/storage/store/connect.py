"""Reaching the store: a DSN named for people without its password, a connection, and
every failure of the server as one :class:`~sessiontree.errors.StoreError` line.

A DSN is a libpq URI (``postgresql://user:pw@host/db``) or a key=value string
(``host=... dbname=...``). Its password must never be printed, logged or put in a
``--json`` document: :func:`describe_dsn` names a store by host, port, database and
role only, and :func:`store_error` takes the password out of whatever the server or
libpq said, in case a message quotes it back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sessiontree._version import __version__
from sessiontree.errors import SessionTreeError, StoreError, StoreProblem

if TYPE_CHECKING:
    import psycopg

#: How long a connection attempt waits for the server (seconds).
CONNECT_TIMEOUT = 10


def dsn_parts(dsn: str) -> dict[str, str]:
    """The DSN's parameters (libpq's own parse); a DSN libpq refuses is a
    :class:`StoreError` naming what is wrong, without echoing the DSN."""
    import psycopg
    from psycopg import conninfo

    try:
        parts = conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        reason = _first_line(str(exc)).replace(dsn, "<dsn>")
        raise StoreError(f"the store's DSN is not one libpq reads: {reason}") from None
    return {k: str(v) for k, v in parts.items() if v is not None}


def shareable_dsn(dsn: str) -> str:
    """The DSN with no secret in it (password, ``sslpassword``), to show people: they
    connect with their own (``~/.pgpass``, ``$PGPASSWORD``)."""
    from psycopg import conninfo

    parts = {k: v for k, v in dsn_parts(dsn).items() if k not in ("password", "sslpassword")}
    return conninfo.make_conninfo(**parts)


def describe_dsn(dsn: str) -> str:
    """The store as people see it: ``role@host:port/database``, never its password."""
    try:
        parts = dsn_parts(dsn)
    except StoreError:
        return "<an unreadable DSN>"
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    port = parts.get("port", "5432")
    user = parts.get("user")
    where = f"{host}:{port}/{parts.get('dbname') or user or ''}"
    return f"{user}@{where}" if user else where


def connect(dsn: str, *, read_only: bool = False) -> psycopg.Connection[Any]:
    """A connection to the store.

    To write: autocommit, so that each ``conn.transaction()`` block is a transaction of
    its own, committed at its end (on a connection that is not autocommit, a statement
    outside such a block opens a transaction that the block would only nest in, as a
    savepoint, and closing the connection would roll it all back).

    ``read_only``: every statement runs in a read-only, repeatable-read transaction
    (the server refuses any write on it: ``default_transaction_read_only``), so that
    what one command reads is one snapshot of the store; ``rollback`` starts the next."""
    import psycopg
    from psycopg import conninfo

    _quiet_driver()
    parts = dsn_parts(dsn)
    options = {"application_name": f"sessiontree/{__version__}"}
    if "connect_timeout" not in parts:
        options["connect_timeout"] = str(CONNECT_TIMEOUT)
    if read_only:
        options["options"] = " ".join(
            filter(None, [parts.get("options"), "-c default_transaction_read_only=on"])
        )
    try:
        conn = psycopg.connect(conninfo.make_conninfo(dsn, **options), autocommit=not read_only)
    except psycopg.Error as exc:
        raise store_error(exc, dsn) from None
    if read_only:
        conn.read_only = True
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    return conn


def _quiet_driver() -> None:
    """psycopg's own log stays out of the command's output: a failure it logs (closing
    a pipeline on a connection the server ended) is told once, as a StoreError line."""
    import logging

    logger = logging.getLogger("psycopg")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


@contextlib.contextmanager
def failures_as_store_errors(dsn: str) -> Iterator[None]:
    """Turn a server's failure inside the block into one :class:`StoreError` line."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise store_error(exc, dsn) from None


#: SQLSTATE classes and codes -> what went wrong.
_STATES: dict[str, StoreProblem] = {
    "28P01": "store-auth",  # invalid_password
    "28000": "store-auth",  # invalid_authorization_specification
    "3D000": "store-no-database",  # invalid_catalog_name
    "53100": "store-full",  # disk_full
    "57P01": "store-lost",  # admin_shutdown
    "57P02": "store-lost",  # crash_shutdown
    "57P03": "store-unreachable",  # cannot_connect_now (starting up)
}


def store_error(exc: Exception, dsn: str) -> StoreError:
    """The one line a server failure becomes: what happened to which store, the server's
    own words last (its first line), the DSN's password taken out."""
    import psycopg

    state = getattr(exc, "sqlstate", None)
    said = _first_line(str(exc))
    code: StoreProblem = _STATES.get(state or "", "store-error")
    if state is None and isinstance(exc, psycopg.OperationalError):
        lowered = said.lower()
        if "password authentication failed" in lowered or "no password supplied" in lowered:
            code = "store-auth"
        elif "does not exist" in lowered and "database" in lowered:
            code = "store-no-database"
        elif any(
            sign in lowered
            for sign in (
                "server closed the connection",
                "consuming input failed",
                "terminating connection",
                "connection is closed",
                "connection is lost",
                "the connection is bad",
            )
        ):
            code = "store-lost"
        else:
            code = "store-unreachable"
    elif state is not None and state.startswith("08"):
        code = "store-lost"
    if isinstance(exc, psycopg.errors.DiskFull) or "no space left on device" in said.lower():
        code = "store-full"
    what = {
        "store-unreachable": "cannot reach the store",
        "store-auth": "the store refused the login",
        "store-no-database": "the store's database does not exist",
        "store-schema": "the store's schema",
        "store-lost": "lost the store's connection",
        "store-full": "the store's disk is full",
        "store-error": "the store refused",
    }[code]
    return StoreError(f"{what} ({describe_dsn(dsn)}): {_scrub(said, dsn)}", code=code)


def failure_line(exc: Exception, dsn: str) -> SessionTreeError:
    """What ``exc`` is reported as, one line, by a process that answers for a store's
    work (a forked half, an indexer): itself when it is one of the program's own, else
    what :func:`store_error` makes of a server's failure."""
    return exc if isinstance(exc, SessionTreeError) else store_error(exc, dsn)


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else "no reason given"


def _scrub(text: str, dsn: str) -> str:
    """``text`` with the DSN and its password taken out, wherever they appear."""
    text = text.replace(dsn, "<dsn>")
    try:
        password = dsn_parts(dsn).get("password")
    except StoreError:
        password = None
    if password:
        text = text.replace(password, "***")
    return text
