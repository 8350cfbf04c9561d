"""The private cluster the store's tests (and ``store init``) run on."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from sessiontree.storage.store.cluster import Cluster, ClusterError, init_cluster, open_cluster


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder for a cluster, stopped and removed after. Not ``tmp_path``: run as root,
    the server runs as ``postgres``, who cannot enter pytest's 0700 base folder. The
    space in the name checks the quoting of the socket folder (pg_ctl's ``-o``, the DSN)."""
    made = Path(tempfile.mkdtemp(prefix="sessiontree pg-"))
    try:
        yield made
    finally:
        cluster = open_cluster(made)
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(made, ignore_errors=True)


def one_line(exc: pytest.ExceptionInfo[ClusterError]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    assert "Traceback" not in message
    return message


def test_the_server_answers(store_server: str) -> None:
    with psycopg.connect(store_server) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        version = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()
    assert version is not None
    assert version[0] >= 140000


def test_each_test_gets_an_empty_database(store_dsn: str, store_server: str) -> None:
    with psycopg.connect(store_dsn) as conn:
        name = conn.execute("SELECT current_database()").fetchone()
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables"
            " WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchone()
    assert name is not None
    assert name[0].startswith("t_")
    assert tables == (0,)
    assert psycopg.conninfo.conninfo_to_dict(store_server)["dbname"] != name[0]


def test_init_cluster_reuses_the_cluster_in_a_folder(folder: Path) -> None:
    made = init_cluster(folder, fast=True)
    assert made.running()
    assert open_cluster(folder) == made
    with psycopg.connect(made.dsn) as conn:
        conn.execute("CREATE TABLE kept (n int)")
        conn.execute("INSERT INTO kept VALUES (7)")
    made.stop()
    assert not made.running()

    again = init_cluster(folder, fast=True)

    assert again == made
    assert again.running()
    with psycopg.connect(again.dsn) as conn:
        assert conn.execute("SELECT n FROM kept").fetchall() == [(7,)]
    assert init_cluster(folder, fast=True) == made  # running: left as it is


def test_a_running_cluster_keeps_its_port(folder: Path) -> None:
    made = init_cluster(folder, fast=True)
    with pytest.raises(ClusterError, match=f"runs already on port {made.port}"):
        init_cluster(folder, port=made.port + 1)


def test_open_cluster_finds_nothing_in_an_empty_folder(tmp_path: Path) -> None:
    assert open_cluster(tmp_path) is None
    assert open_cluster(tmp_path / "missing") is None


def test_a_folder_that_is_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "cluster"
    file.write_text("not a folder\n")
    with pytest.raises(ClusterError) as exc:
        init_cluster(file, fast=True)
    assert one_line(exc) == f"initdb failed: {file} is a file, not a folder"
    assert exc.value.code == "store-cluster"


def test_a_server_bin_without_initdb_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterError) as exc:
        init_cluster(tmp_path / "cluster", bin=tmp_path)
    assert one_line(exc) == f"initdb failed: no initdb in {tmp_path}"


def test_initdb_failing_says_why_in_one_line(folder: Path) -> None:
    (folder / "data").mkdir()
    (folder / "data" / "stray").write_text("someone else's\n")
    with pytest.raises(ClusterError) as exc:
        init_cluster(folder, fast=True)
    message = one_line(exc)
    assert message.startswith(f"initdb failed: initdb -D {folder / 'data'}: ")
    assert "exists but is not empty" in message


def test_a_server_that_will_not_start_says_why_in_one_line(folder: Path) -> None:
    made = init_cluster(folder, fast=True)
    made.stop()
    with (made.data / "postgresql.conf").open("a") as conf:
        conf.write("shared_buffers = 'lots'\n")
    with pytest.raises(ClusterError) as exc:
        made.start()
    message = one_line(exc)
    assert message.startswith(f"start failed: pg_ctl start in {made.data}: ")
    assert "shared_buffers" in message
    assert not made.running()


def test_the_dsn_quotes_a_folder_with_spaces() -> None:
    cluster = Cluster(Path("/tmp/a b"), 5999, Path("/usr/bin"))
    assert cluster.dsn == "host='/tmp/a b/socket' port=5999 dbname=sessiontree user=sessiontree"
    assert psycopg.conninfo.conninfo_to_dict(cluster.dsn)["host"] == "/tmp/a b/socket"
