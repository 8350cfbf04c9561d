"""A big sync stores its lines first, in two processes, and leaves the indexing for
later: the store then holds what a sync in one process holds, and once caught up, the
index a sync that indexed beside it makes; an indexer that runs after the files changed
indexes the bytes stored, not the file's new ones."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

import sessiontree.sync.indexing as indexing
import sessiontree.sync.push as push
from sessiontree.cli.main import cli
from sessiontree.errors import StoreError
from sessiontree.storage.layout import Layout
from sessiontree.storage.store.archive import Machine
from sessiontree.storage.store.connect import connect
from sessiontree.storage.store.schema import migrate
from sessiontree.storage.store.search import unindexed_sources, unindexed_totals
from sessiontree.sync.indexing import catch_up
from sessiontree.sync.push import SyncReport, state_key, sync_root
from tests.conftest import all_scenarios, copy_writable, count_forks
from tests.store.test_sync_indexing import indexed

SCENARIOS = all_scenarios()[:8]
MACHINE = Machine("11111111-1111-1111-1111-111111111111", "laptop", "ada")


def stored(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """Every stored line and block, by file (no ids: each store numbers its sources)."""
    lines = conn.execute(
        "SELECT s.rel_path, s.synced_bytes, s.synced_lines, s.head_sha, s.tail_sha,"
        " l.byte_offset, l.line_no, l.length, l.skeleton, l.problems, l.uuid, l.parent_uuid"
        " FROM sessiontree.line l JOIN sessiontree.source s USING (source_id) ORDER BY 1, 6"
    ).fetchall()
    blocks = conn.execute(
        "SELECT s.rel_path, b.byte_offset, b.raw FROM sessiontree.line_block b"
        " JOIN sessiontree.source s USING (source_id) ORDER BY 1, 2"
    ).fetchall()
    return [*lines, *blocks]


def one_root(tmp_path: Path) -> Path:
    """The scenarios' projects in one config root (so that there is something to split)."""
    root = tmp_path / "claude-home"
    (root / "projects").mkdir(parents=True)
    for at, scenario in enumerate(SCENARIOS):
        copied = copy_writable(scenario / "claude-home" / "projects", tmp_path / f"copy-{at}")
        for project in list(copied.iterdir()):
            project.rename(root / "projects" / f"{at}{project.name}")
    return root


@pytest.fixture
def second_dsn(store_server: str, store_dsn: str) -> str:
    name = psycopg.conninfo.conninfo_to_dict(store_dsn)["dbname"]
    with psycopg.connect(store_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}_b"')
    return psycopg.conninfo.make_conninfo(store_dsn, dbname=f"{name}_b")


def sync_into(dsn: str, root: Path, **options: Any) -> tuple[SyncReport, list[tuple[Any, ...]]]:
    with connect(dsn) as conn:
        migrate(conn)
        report = sync_root(conn, MACHINE, Layout(root), **options)
        return report, stored(conn)


def test_two_processes_store_what_one_stores_and_two_index_it_as_one_would(
    tmp_path: Path,
    store_dsn: str,
    second_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = one_root(tmp_path)
    inline, one = sync_into(store_dsn, root)
    with connect(store_dsn) as conn:
        index = indexed(conn)
    assert index and one, "nothing stored: the test would prove nothing"
    forks = count_forks(monkeypatch)
    told: list[tuple[int, int]] = []
    later, two = sync_into(second_dsn, root, index_dsn=second_dsn, index_later_from=0,
                           progress=lambda done, total: told.append((done, total)))  # fmt: skip
    assert forks, "the sync did not fork a second process"
    # (the bar counts both processes' bytes, and ends full)
    assert [done for done, _ in told] == sorted(done for done, _ in told)
    assert told[-1][0] == told[-1][1] > 0
    assert two == one
    assert (later.files, later.records, later.bytes) == (inline.files, inline.records, inline.bytes)
    with connect(second_dsn) as conn:
        assert later.unindexed_sources == len(unindexed_sources(conn, MACHINE.machine_id,
                                                                 str(root.resolve())))  # fmt: skip
        assert later.unindexed_bytes > 0 and unindexed_totals(conn)[0] > 0
        assert indexed(conn) == []
        note = CliRunner().invoke(cli, ["--store", second_dsn, "search", "--all", "the"]).stderr
        assert f"note: {unindexed_totals(conn)[0]} file(s)" in note
        assert "not indexed for search yet" in note
        monkeypatch.setattr(indexing, "SPLIT_INDEX_BYTES", 0)
        forked = len(forks)
        assert catch_up(conn, MACHINE.machine_id, str(root.resolve()), redact=False,
                        dsn=second_dsn)  # fmt: skip
        assert len(forks) == forked + 1, "the catch-up did not share the work with a child"
        assert indexed(conn) == index
        assert unindexed_totals(conn) == (0, 0)
        assert unindexed_sources(conn, MACHINE.machine_id, str(root.resolve())) == []


def test_an_indexer_after_the_file_changed_indexes_what_was_stored(
    tmp_path: Path, store_dsn: str, second_dsn: str
) -> None:
    root = one_root(tmp_path)
    sync_into(store_dsn, root)
    with connect(store_dsn) as conn:
        index = indexed(conn)
    sync_into(second_dsn, root, index_later_from=0)
    for transcript in root.glob("projects/*/*.jsonl"):  # (rewritten, cut, or gone)
        size = transcript.stat().st_size
        if size % 3 == 0:
            transcript.unlink()
        else:
            transcript.write_bytes(b'{"type":"user","message":{"content":"other"}}\n' * (size % 3))
    with connect(second_dsn) as conn:
        catch_up(conn, MACHINE.machine_id, str(root.resolve()), redact=False)
        assert indexed(conn) == index


def test_the_second_process_failing_is_one_line(
    tmp_path: Path, store_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = one_root(tmp_path)

    def unreachable(dsn: str) -> Any:
        raise StoreError("store 'x' is unreachable: no such host", code="store-unreachable")

    monkeypatch.setattr(push, "connect", unreachable)  # (only the forked half connects)
    with connect(store_dsn) as conn, pytest.raises(StoreError) as failed:
        migrate(conn)
        sync_root(conn, MACHINE, Layout(root), index_dsn=store_dsn, index_later_from=0)
    assert str(failed.value) == "store 'x' is unreachable: no such host"
    assert failed.value.code == "store-unreachable"


def test_sync_leaves_an_indexer_that_catches_up(
    tmp_path: Path, store_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = one_root(tmp_path)
    monkeypatch.setattr(push, "INDEX_LATER_BYTES", 1)
    monkeypatch.setenv("SESSIONTREE_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(
        cli, ["--root", str(root), "--store", store_dsn, "sync", "--json"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    indexing = json.loads(result.output)["indexing"]
    assert indexing["sources"] > 0 and indexing["bytes"] > 0 and indexing["pid"] > 0
    with connect(store_dsn) as conn:
        deadline = time.monotonic() + 60
        while unindexed_totals(conn) != (0, 0):
            assert time.monotonic() < deadline, "the indexer left behind did not catch up"
            time.sleep(0.1)
    assert (
        not (tmp_path / "state" / "indexing.log").exists()
        or not (tmp_path / "state" / "indexing.log").read_text()
    )
    found = CliRunner().invoke(
        cli, ["--root", str(root), "--store", store_dsn, "search", "--all", "--json", "the"]
    )
    assert found.exit_code == 0 and json.loads(found.stdout)
    again = CliRunner().invoke(
        cli, ["--root", str(root), "--store", store_dsn, "sync", "--json"],
        catch_exceptions=False,
    )  # fmt: skip
    assert json.loads(again.output)["indexing"] is None
    with pytest.raises(ChildProcessError):  # (it ran on its own, not as a child of ours)
        os.waitpid(indexing["pid"], os.WNOHANG)


def test_wait_index_waits_for_an_indexer_left_running(tmp_path: Path, store_dsn: str) -> None:
    root = one_root(tmp_path)
    state = tmp_path / "state"
    state.mkdir()  # (the command syncs as the same machine, its files all pushed before)
    (state / "machine.json").write_text(json.dumps({"label:laptop": MACHINE.machine_id}))
    pushed = state / f"sync-{state_key(store_dsn, root, MACHINE.machine_id)}.msgpack"
    sync_into(store_dsn, root, index_later_from=0, state_file=pushed)  # (left to index)
    key = f"sessiontree-index:{MACHINE.machine_id}:{root.resolve()}"
    with connect(store_dsn) as holder:  # (an indexer at work on the root)
        holder.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
        release = threading.Timer(
            4.0, lambda: holder.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))
        )
        release.start()
        result = CliRunner().invoke(
            cli, ["--root", str(root), "--store", store_dsn, "sync", "--machine", "laptop",
                  "--wait-index", "--json"], catch_exceptions=False,
            env={"SESSIONTREE_STATE_DIR": str(state)},
        )  # fmt: skip
        release.join()
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["indexing"] is None
    with connect(store_dsn) as conn:
        assert unindexed_totals(conn) == (0, 0)
