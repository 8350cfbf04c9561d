"""A PostgreSQL server for the store's tests, and a fresh database for each test.

``SESSIONTREE_TEST_DSN`` names a server to use as it is; without it, a throwaway cluster
is made in a temp folder (fsync off) and removed at the end. With neither, every store
test fails with one line saying why: a green run never hides store tests that did not run.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from sessiontree.errors import SessionTreeError
from sessiontree.storage.store.cluster import Cluster, init_cluster

#: Numbers each test's database; the pid keeps parallel workers on one server apart.
_databases = itertools.count(1)


def no_server(reason: str) -> str:
    return (
        "no PostgreSQL server: set SESSIONTREE_TEST_DSN or install postgresql "
        f"(make test installs it): {reason}"
    )


def connectable(dsn: str) -> str:
    """``dsn``, once a connection to it works; else the test fails, saying why."""
    try:
        psycopg.connect(dsn, connect_timeout=10).close()
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split())
    else:
        return dsn
    # Outside the except: the failure is its line alone, not a chained traceback.
    pytest.fail(no_server(f"SESSIONTREE_TEST_DSN does not connect: {reason}"), pytrace=False)


def made_in(folder: Path) -> Cluster:
    """A throwaway cluster in ``folder``; else the folder goes and the test fails."""
    try:
        return init_cluster(folder, fast=True)
    except SessionTreeError as exc:
        reason = str(exc)
    shutil.rmtree(folder, ignore_errors=True)
    pytest.fail(no_server(reason), pytrace=False)


@pytest.fixture(scope="session")
def store_server() -> Iterator[str]:
    """The DSN of a server the store's tests may create databases on."""
    given = os.environ.get("SESSIONTREE_TEST_DSN")
    if given:
        yield connectable(given)
        return
    folder = Path(tempfile.mkdtemp(prefix="sessiontree-pg-"))
    cluster = made_in(folder)
    try:
        yield cluster.dsn
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def store_dsn(store_server: str) -> Iterator[str]:
    """The DSN of a fresh, empty database, dropped after the test."""
    name = f"t_{os.getpid()}_{next(_databases)}"
    with psycopg.connect(store_server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(store_server, dbname=name)
    finally:
        with psycopg.connect(store_server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def conn(store_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection to a fresh store, its schema made."""
    from sessiontree.storage.store.connect import connect
    from sessiontree.storage.store.schema import migrate

    with connect(store_dsn) as connection:
        migrate(connection)
        yield connection
