"""A sync killed at any point, then run again, loses and duplicates nothing; several
syncs at once store each line once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from sessiontree.storage.store.connect import connect
from sessiontree.storage.store.reads import current_sources, iter_source_bytes
from sessiontree.storage.store.schema import migrate
from sessiontree.storage.store.search import unindexed_totals

#: Lines per generated transcript, and transcripts: enough that a kill lands mid-sync.
LINES, FILES = 4000, 6


def make_root(root: Path) -> list[Path]:
    """Transcripts of realistic lines (a chain of prompts and replies, some long)."""
    project = root / "projects" / "-work-app"
    project.mkdir(parents=True)
    rng = random.Random(7)
    paths = []
    for f in range(FILES):
        sid = f"00000000-0000-4000-8000-{f:012d}"
        path = project / f"{sid}.jsonl"
        parent = "null"
        with path.open("wb") as out:
            for n in range(LINES):
                uuid = f'"{f:04d}{n:08d}-0000-4000-8000-000000000000"'
                kind = "user" if n % 2 == 0 else "assistant"
                text = "x" * rng.choice([20, 200, 2000])
                out.write(
                    f'{{"parentUuid":{parent},"type":"{kind}","uuid":{uuid},'
                    f'"sessionId":"{sid}","message":{{"role":"{kind}","content":"{text}"}}}}\n'.encode()
                )
                parent = uuid
        paths.append(path)
    return paths


SYNC = """
import sys
import sessiontree.sync.push as push
from sessiontree.cli.main import main
if sys.argv[3] == "split":  # (as a big sync: two processes, indexing left for later)
    push.INDEX_LATER_BYTES = 1
main(["--root", sys.argv[1], "--store", sys.argv[2], "sync", "--machine", "m1", "--json"])
"""


def sync_process(
    root: Path, dsn: str, state: Path, *, split: bool = False
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SESSIONTREE_STATE_DIR": str(state)}
    return subprocess.Popen(
        [sys.executable, "-c", SYNC, str(root), dsn, "split" if split else "one"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def stored_equals_files(dsn: str, paths: list[Path]) -> None:
    with connect(dsn) as conn:
        sources = {s.path: s for s in current_sources(conn)}
        assert sorted(sources) == sorted(p.resolve() for p in paths)
        for path in paths:
            source = sources[path.resolve()]
            assert b"".join(iter_source_bytes(conn, source.source_id)) == path.read_bytes()
            assert source.synced_bytes == path.stat().st_size
        lines = conn.execute("SELECT count(*), count(DISTINCT (source_id, line_no))"
                             " FROM sessiontree.line").fetchone()  # fmt: skip
        assert lines == (LINES * FILES, LINES * FILES)


@pytest.mark.parametrize("split", [False, True], ids=["one-process", "two-processes"])
def test_sigkill_at_random_points_then_a_rerun_loses_and_duplicates_nothing(
    store_dsn: str, tmp_path: Path, split: bool
) -> None:
    paths = make_root(tmp_path / "root")
    with connect(store_dsn) as conn:
        migrate(conn)
    rng = random.Random(1)
    kills = 0
    for _ in range(6):
        process = sync_process(tmp_path / "root", store_dsn, tmp_path / "state", split=split)
        time.sleep(rng.uniform(0.3, 1.5))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.communicate()
    done = sync_process(tmp_path / "root", store_dsn, tmp_path / "state", split=split)
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    stored_equals_files(store_dsn, paths)
    assert kills > 0, "no sync was killed: the test proved nothing"
    if split:  # (the indexers the runs left catch up what every run stored)
        with connect(store_dsn) as conn:
            deadline = time.monotonic() + 120
            while unindexed_totals(conn) != (0, 0):
                assert time.monotonic() < deadline, "the indexer left did not catch up"
                time.sleep(0.1)


def test_several_syncs_of_one_machine_at_once(store_dsn: str, tmp_path: Path) -> None:
    paths = make_root(tmp_path / "root")
    with connect(store_dsn) as conn:
        migrate(conn)
    processes = [sync_process(tmp_path / "root", store_dsn, tmp_path / "state") for _ in range(3)]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    stored_equals_files(store_dsn, paths)


def test_the_server_going_away_mid_sync_is_one_line_and_a_rerun_completes(
    store_dsn: str, tmp_path: Path
) -> None:
    paths = make_root(tmp_path / "root")
    with connect(store_dsn) as conn:
        migrate(conn)
    process = sync_process(tmp_path / "root", store_dsn, tmp_path / "state")
    time.sleep(0.5)
    with psycopg.connect(store_dsn, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name LIKE 'sessiontree/%%' AND pid <> pg_backend_pid()"
        )
    out, err = process.communicate(timeout=300)
    if process.returncode == 0:
        pytest.skip("the sync was done before the server went away (a fast machine)")
    doc = json.loads(out)  # (--json: the error is the document on stdout)
    assert doc["code"] == "store-lost", doc
    assert doc["error"].startswith("lost the store's connection"), doc
    assert err.decode().strip() == ""
    again = sync_process(tmp_path / "root", store_dsn, tmp_path / "state")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    stored_equals_files(store_dsn, paths)


def test_watch_shows_an_appended_line_in_the_store_within_a_second(
    store_dsn: str, tmp_path: Path
) -> None:
    paths = make_root(tmp_path / "root")
    env = {**os.environ, "SESSIONTREE_STATE_DIR": str(tmp_path / "state")}
    watch = subprocess.Popen(
        [sys.executable, "-c", "from sessiontree.cli.main import main; main()",
         "--root", str(tmp_path / "root"),
         "--store", store_dsn, "sync", "--watch", "--interval", "0.2"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        with connect(store_dsn) as conn:
            while time.monotonic() < deadline:  # the first pass: everything goes up
                row = conn.execute("SELECT to_regclass('sessiontree.line') IS NOT NULL").fetchone()
                if row and row[0]:
                    count = conn.execute("SELECT count(*) FROM sessiontree.line").fetchone()
                    if count == (LINES * FILES,):
                        break
                time.sleep(0.1)
            line = b'{"parentUuid":null,"type":"user","uuid":"appended-1"}\n'
            with paths[0].open("ab") as out:
                out.write(line)
            written = time.monotonic()
            seen = None
            while time.monotonic() - written < 5:
                row = conn.execute(
                    "SELECT count(*) FROM sessiontree.line WHERE uuid = 'appended-1'"
                ).fetchone()
                if row == (1,):
                    seen = time.monotonic() - written
                    break
                time.sleep(0.02)
        assert seen is not None and seen < 1.0, seen
    finally:
        watch.send_signal(signal.SIGINT)
        watch.communicate(timeout=30)
