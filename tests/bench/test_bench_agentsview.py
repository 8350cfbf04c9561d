"""The agentsview row's own logic: the URL it is given and the summary read back from its
output; and, when agentsview is installed in bench/data and a PostgreSQL server can be
made, a real sync and push of a fixture root."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.agentsview_pg import (
    MARKER,
    PushRun,
    format_pg_url,
    parse_pushed,
    push_archive,
    venv_dir,
)
from bench.datasets import DATA_DIR

from sessiontree.errors import SessionTreeError
from sessiontree.storage.store.cluster import init_cluster

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE_ROOT = FIXTURES / "claude-code-2.1.328" / "09-fork" / "claude-home"


def test_a_socket_dsn_becomes_a_url_with_the_socket_folder_as_host() -> None:
    dsn = "host=/tmp/x-pg/socket port=51755 dbname=sessiontree user=sessiontree"
    assert format_pg_url(dsn, "agentsview") == (
        "postgres://sessiontree@/agentsview?host=/tmp/x-pg/socket&port=51755"
    )


def test_a_quoted_socket_folder_and_a_tcp_host() -> None:
    dsn = "host='/tmp/a b' port=5 dbname=x user=me"
    assert format_pg_url(dsn, "av") == "postgres://me@/av?host=/tmp/a+b&port=5"
    tcp = "host=db.example port=5433 user=u password='p@ss' dbname=x sslmode=require"
    assert format_pg_url(tcp, "av") == "postgres://u:p%40ss@db.example:5433/av?sslmode=require"


def test_the_summary_is_read_from_the_progress_output() -> None:
    # agentsview 0.46.1's own output for 9 sessions, its redraws and escapes as it wrote them
    output = (
        "Connecting to PostgreSQL...\nStarting PostgreSQL push...\n"
        "Preparing... 0/9 sessions fingerprinted (0s elapsed)\x1b[K\r"
        "Preparing... 9/9 sessions fingerprinted (1s elapsed)\x1b[K\r"
        "Pushing... 9/9 sessions, 736 messages (2s elapsed)\x1b[K\r\x1b[K"
        "Pushed 9 sessions, 736 messages in 1.952s\n"
        "PostgreSQL push mode: full (backfilling session aliases)\n"
    )
    assert parse_pushed(output) == "Pushed 9 sessions, 736 messages in 1.952s"
    assert parse_pushed("Sync complete: 0 sessions synced in 4ms\n") == ""


@pytest.fixture
def server_dsn() -> Iterator[str]:
    if not (venv_dir(DATA_DIR) / MARKER).is_file():
        pytest.skip("agentsview not installed in bench/data (python -m bench.store installs it)")
    folder = Path(tempfile.mkdtemp(prefix="av-pg-"))
    try:
        cluster = init_cluster(folder, fast=True)
    except SessionTreeError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"no PostgreSQL server: {exc}")
    try:
        yield cluster.dsn
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_real_push_of_a_fixture_root(server_dsn: str) -> None:
    run = push_archive(FIXTURE_ROOT, server_dsn, DATA_DIR)
    assert isinstance(run, PushRun), run
    sessions = len(list(FIXTURE_ROOT.glob("projects/*/*.jsonl")))
    assert run.pushed.startswith(f"Pushed {sessions} sessions, ")
    assert run.sync_s > 0 and run.push_s > 0 and run.store_bytes > 0 and run.sqlite_bytes > 0
