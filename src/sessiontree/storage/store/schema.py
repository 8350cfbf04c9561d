"""The store's schema: plain numbered SQL migrations, applied in order.

Each file ``migrations/NNNN_name.sql`` is applied once, in a transaction of its own,
under a transaction-scoped advisory lock (several syncs starting at once on a new
store: one applies, the others wait and find it done), and recorded in
``sessiontree.schema_version`` with the sha256 of its text. A store whose recorded
checksum differs from the file's (a migration edited after it shipped) or whose
version is newer than this program knows is refused with one clear line: this
program would misread it. No ``CREATE INDEX CONCURRENTLY`` here: it cannot run in a
transaction.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import TYPE_CHECKING, Any, NamedTuple

from sessiontree.errors import StoreError

if TYPE_CHECKING:
    import psycopg

#: The advisory lock every migration runs under (a fixed 64-bit key: "sessiontree").
LOCK_KEY = 0x73657373696F6E74


class Migration(NamedTuple):
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> bytes:
        return hashlib.sha256(self.sql.encode()).digest()


def migrations() -> list[Migration]:
    """Every migration shipped with this program, in order."""
    folder = resources.files("sessiontree.storage.store").joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append(Migration(int(name[:4]), name, entry.read_text(encoding="utf-8")))
    found.sort()
    return found


def known_version() -> int:
    """The newest schema version this program knows."""
    return migrations()[-1].version


def store_version(conn: psycopg.Connection[Any]) -> int:
    """The store's schema version (0: none yet)."""
    row = conn.execute("SELECT to_regclass('sessiontree.schema_version') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    got = conn.execute("SELECT coalesce(max(version), 0) FROM sessiontree.schema_version")
    version = got.fetchone()
    return int(version[0]) if version else 0


def check_schema(conn: psycopg.Connection[Any]) -> None:
    """Refuse a store this program cannot read: none yet, older (run ``sync``), newer."""
    version, known = store_version(conn), known_version()
    if version > known:
        raise _newer(version, known)
    if version < known:
        said = "holds no sessiontree schema yet" if version == 0 else f"has schema {version}"
        raise StoreError(
            f"the store {said}, this program reads {known}: "
            "run `sessiontree sync` (or `sessiontree store migrate`) against it first",
            code="store-schema",
        )


def migrate(conn: psycopg.Connection[Any], *, until: int | None = None) -> list[int]:
    """Apply every migration the store lacks (up to version ``until``); the versions
    applied (none: it was up to date). Refuses a newer store, or one whose applied
    migrations differ from ours."""
    applied: list[int] = []
    shipped = migrations()
    for migration in shipped:
        if until is not None and migration.version > until:
            break
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            conn.execute("CREATE SCHEMA IF NOT EXISTS sessiontree")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS sessiontree.schema_version ("
                " version int PRIMARY KEY, name text NOT NULL, checksum bytea NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            rows = conn.execute(
                "SELECT version, checksum FROM sessiontree.schema_version ORDER BY version"
            ).fetchall()
            recorded = {int(v): bytes(c) for v, c in rows}
            newest = max(recorded, default=0)
            if newest > shipped[-1].version:
                raise _newer(newest, shipped[-1].version)
            if migration.version in recorded:
                if recorded[migration.version] != migration.checksum:
                    raise StoreError(
                        f"the store's migration {migration.version} differs from this "
                        f"program's {migration.name}: it was changed after it was applied",
                        code="store-schema",
                    )
                continue
            conn.execute(migration.sql.encode())
            conn.execute(
                "INSERT INTO sessiontree.schema_version (version, name, checksum)"
                " VALUES (%s, %s, %s)",
                (migration.version, migration.name, migration.checksum),
            )
            applied.append(migration.version)
    return applied


def _newer(version: int, known: int) -> StoreError:
    return StoreError(
        f"the store's schema is version {version}, newer than this program's {known}: "
        "upgrade sessiontree to use it",
        code="store-schema",
    )
