"""What a sync stores reads back as the file does: every line byte for byte, the same
scan, tree and context, for every session the real clients wrote (and other people's,
when ``../shared`` is beside the checkout)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import msgspec
import psycopg
import pytest

from sessiontree.conversation.stored import open_stored
from sessiontree.conversation.transcript import Transcript
from sessiontree.storage.layout import Layout
from sessiontree.storage.skeleton_cache import SkeletonCache
from sessiontree.storage.store.archive import Machine, new_machine_id
from sessiontree.storage.store.connect import connect
from sessiontree.storage.store.reads import current_sources, iter_source_bytes
from sessiontree.storage.store.schema import migrate
from sessiontree.storage.store.search import read_active_paths
from sessiontree.sync.push import sync_root
from tests.conftest import FIXTURES, WILD, all_scenarios, scenario_id

SCENARIOS = all_scenarios()
WILD_SETS = (
    sorted(p for p in WILD.iterdir() if (p / "claude-home").is_dir()) if WILD.is_dir() else []
)


def machine(label: str = "laptop") -> Machine:
    return Machine(new_machine_id(), label, "ada")


def _messages(transcript: Transcript) -> bytes:
    return msgspec.json.encode(list(transcript.iter_context()))


def check_root(conn: psycopg.Connection[Any], root: Path) -> int:
    """Sync ``root`` and compare every stored transcript with its file; how many."""
    sync_root(conn, machine(), Layout(root))
    sources = current_sources(conn, kinds=("transcript", "subagent"))
    files = sorted(p for p in (root / "projects").rglob("*.jsonl") if p.is_file())
    assert sorted(s.path for s in sources) == [p.resolve() for p in files]
    for source in sources:
        path = source.path
        assert b"".join(iter_source_bytes(conn, source.source_id)) == path.read_bytes()
        local, stored = Transcript.open(path), open_stored(conn, source)
        assert stored.scan.lines == local.scan.lines, path
        assert stored.scan.problems == local.scan.problems, path
        assert stored.active_path == local.active_path, path
        # (and as the sync kept it for search, when no torn line ends the file)
        kept = read_active_paths(conn, [source.source_id]).get(source.source_id)
        assert (kept is None) == source.open_tail, path
        assert kept is None or kept == (source.synced_bytes, frozenset(local.active_path))
        assert _messages(stored) == _messages(local), path
        assert [s.as_json() for s in stored.subagents()] == [s.as_json() for s in local.subagents()]
    return len(sources)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario_id(s) for s in SCENARIOS])
def test_every_fixture_reads_back_from_the_store_as_its_file(
    scenario: Path, conn: psycopg.Connection[Any]
) -> None:
    assert check_root(conn, (scenario / "claude-home").resolve()) > 0


@pytest.mark.skipif(not WILD_SETS, reason="../shared/fixtures/wild is not here")
@pytest.mark.parametrize("wild", WILD_SETS, ids=[p.name for p in WILD_SETS])
def test_other_peoples_sessions_read_back_from_the_store(
    wild: Path, conn: psycopg.Connection[Any]
) -> None:
    assert check_root(conn, (wild / "claude-home").resolve()) > 0


def test_a_rerun_with_nothing_new_adds_nothing(
    conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    scenario = SCENARIOS[0] / "claude-home"
    who = machine()
    first = sync_root(conn, who, Layout(scenario), state_file=tmp_path / "state")
    assert first.records > 0 and first.bytes > 0
    again = sync_root(conn, who, Layout(scenario), state_file=tmp_path / "state")
    assert (again.files, again.records, again.bytes, again.blobs) == (0, 0, 0, 0)
    without_cache = sync_root(conn, who, Layout(scenario))  # every file checked, none new
    assert (without_cache.files, without_cache.records, without_cache.bytes) == (0, 0, 0)


def test_appends_torn_lines_and_rewrites(conn: psycopg.Connection[Any], tmp_path: Path) -> None:
    """A file that grows goes up from where it stopped; a torn last line is stored as it
    is, then replaced by the whole line; a rewritten file starts a new generation and the
    old one stays."""
    root = tmp_path / "root"
    project = root / "projects" / "-work"
    project.mkdir(parents=True)
    path = project / "2f0c7c9e-0000-4000-8000-000000000001.jsonl"
    first = (
        b'{"type":"user","uuid":"a","parentUuid":null,"message":{"role":"user","content":"hi"}}\n'
    )
    path.write_bytes(first + b'{"type":"assistant","uu')
    who = machine()
    sync_root(conn, who, Layout(root))
    (source,) = current_sources(conn)
    assert b"".join(iter_source_bytes(conn, source.source_id)) == path.read_bytes()
    assert source.open_tail
    whole = path.read_bytes() + b'id":"b","parentUuid":"a"}\n'
    path.write_bytes(whole)
    report = sync_root(conn, who, Layout(root))
    (source,) = current_sources(conn)
    assert b"".join(iter_source_bytes(conn, source.source_id)) == whole
    assert not source.open_tail and report.records == 0  # the torn line, now whole
    assert open_stored(conn, source).scan.lines == Transcript.open(path).scan.lines
    path.write_bytes(first)  # cut back: a rewrite
    os.utime(path, None)
    report = sync_root(conn, who, Layout(root))
    assert report.rewritten == [f"projects/-work/{path.name}"]
    (current,) = current_sources(conn)
    assert current.generation == 1
    assert b"".join(iter_source_bytes(conn, current.source_id)) == first
    old = conn.execute(
        "SELECT superseded_by FROM sessiontree.source WHERE source_id = %s", (source.source_id,)
    ).fetchone()
    assert old == (current.source_id,)
    assert b"".join(iter_source_bytes(conn, source.source_id)) == whole  # kept


def test_an_append_keeps_the_active_path_with_a_cold_skeleton_cache(
    conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    """After a session grew, the sync keeps its new active path for search even when the
    skeleton cache has never read the file (the client wrote it, not us): otherwise each
    store search with a hit in it reads the whole session's skeletons again, for as long
    as it keeps growing (~0.2 s a hit's session of 100 MB)."""
    scenario = next(s for s in SCENARIOS if s.name.startswith("06-"))
    root = tmp_path / "root"
    shutil.copytree(scenario / "claude-home", root)
    path = max((root / "projects").glob("*/*.jsonl"), key=lambda p: p.stat().st_size)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: len(lines) // 2]))
    who, cache = machine(), SkeletonCache(tmp_path / "cache")
    sync_root(conn, who, Layout(root), skeleton_cache=cache)
    path.write_bytes(b"".join(lines))  # the rest, appended
    sync_root(conn, who, Layout(root), skeleton_cache=cache)
    (source,) = [s for s in current_sources(conn) if s.path == path.resolve()]
    kept = read_active_paths(conn, [source.source_id]).get(source.source_id)
    assert kept == (source.synced_bytes, frozenset(Transcript.open(path).active_path))


def test_what_a_sync_stored_is_there_for_the_next_connection(store_dsn: str) -> None:
    """Every part of a sync is committed: transcripts, the files beside them, history
    (a second run on a new connection finds them all and adds nothing)."""
    root = (FIXTURES.parent / "claude-code-2.1.328-par/18-par-edits-rewind/claude-home").resolve()
    who = machine()
    with connect(store_dsn) as first:
        migrate(first)
        report = sync_root(first, who, Layout(root))
    beside = sum(
        1
        for folder in ("file-history", "projects")
        for p in (root / folder).rglob("*")
        if p.is_file() and not p.name.endswith(".jsonl")
    )
    assert report.blobs > 0
    with connect(store_dsn) as second:
        stored = second.execute("SELECT count(*) FROM sessiontree.artifact").fetchone()
        assert stored == (beside,)
        history = second.execute("SELECT count(*) FROM sessiontree.history_line").fetchone()
        lines = [ln for ln in (root / "history.jsonl").read_bytes().splitlines() if ln.strip()]
        assert history == (len(set(lines)),)
        again = sync_root(second, who, Layout(root))
    assert (again.files, again.records, again.bytes, again.blobs) == (0, 0, 0, 0)
