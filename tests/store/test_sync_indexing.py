"""The indexer beside a sync: in a thread on a second connection, or in a process of its
own for a big sync, it indexes what an inline sync indexes, and its failure is one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

import sessiontree.sync.push as push
from sessiontree.errors import StoreError
from sessiontree.storage.layout import Layout
from sessiontree.storage.store.archive import Machine, new_machine_id
from sessiontree.storage.store.connect import connect
from sessiontree.storage.store.schema import migrate
from sessiontree.sync.indexing import IndexProcess
from sessiontree.sync.push import sync_root
from tests.conftest import FIXTURES, all_scenarios

ROOTS = [s / "claude-home" for s in all_scenarios()[:6]]


def indexed(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """What the index holds, with no ids (each store numbers its sources)."""
    return conn.execute(
        "SELECT s.rel_path, t.byte_offset, t.part, t.kind, t.tool_name, t.tsv::text, t.words,"
        " p.synced_bytes, p.uuids FROM sessiontree.line_text t"
        " JOIN sessiontree.source s USING (source_id)"
        " LEFT JOIN sessiontree.active_path p USING (source_id) ORDER BY 1, 2, 3"
    ).fetchall()


def sync_all(dsn: str, index_dsn: str | None) -> list[tuple[Any, ...]]:
    with connect(dsn) as conn:
        migrate(conn)
        for root in ROOTS:
            sync_root(conn, Machine(new_machine_id(), root.parent.name, "ada"), Layout(root),
                      index_dsn=index_dsn)  # fmt: skip
        return indexed(conn)


@pytest.fixture
def second_dsn(store_server: str, store_dsn: str) -> str:
    """Another fresh database on the same server."""
    name = psycopg.conninfo.conninfo_to_dict(store_dsn)["dbname"]
    other = f"{name}_b"
    with psycopg.connect(store_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{other}"')
    return psycopg.conninfo.make_conninfo(store_dsn, dbname=other)


@pytest.mark.parametrize("way", ["thread", "process"])
def test_beside_the_sync_the_index_is_what_inline_makes(
    way: str, store_dsn: str, second_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inline = sync_all(store_dsn, None)
    assert inline, "nothing indexed: the test would prove nothing"
    monkeypatch.setattr(push, "INDEX_THREAD_BYTES", 0)
    monkeypatch.setattr(push, "INDEX_PROCESS_BYTES", 0 if way == "process" else 1 << 62)
    assert sync_all(second_dsn, second_dsn) == inline


def test_the_process_failing_is_one_line(tmp_path: Path) -> None:
    dsn = f"host={tmp_path} port=1 dbname=nothing user=nobody password=hunter2"
    process = IndexProcess(dsn, redact=False, cache_dir=None)
    process.submit(1, FIXTURES / "nothing.jsonl")
    with pytest.raises(StoreError) as failed:
        process.finish()
    message = str(failed.value)
    assert "\n" not in message and "hunter2" not in message
    assert failed.value.code == "store-unreachable"
