"""The store through the command line: sync two roots as two machines, delete a session
locally and still read it from the store; the same output as the local commands; one
clear line for each way the store can fail, never a password."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.conninfo import make_conninfo

from sessiontree.cli.main import cli
from tests.conftest import FIXTURES, copy_writable

PAR = FIXTURES.parent / "claude-code-2.1.328-par"


def run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def root_of(scenario: Path, tmp_path: Path, name: str) -> Path:
    return copy_writable(scenario / "claude-home", tmp_path / name)


def test_two_machines_and_a_deleted_session(store_dsn: str, tmp_path: Path) -> None:
    laptop = root_of(FIXTURES / "02-rewind-both", tmp_path, "laptop")
    cloud = root_of(PAR / "18-par-edits-rewind", tmp_path, "cloud")
    first = json.loads(run("--root", str(laptop), "--store", store_dsn, "sync",
                           "--machine", "laptop", "--json"))  # fmt: skip
    assert set(first) == {"files", "records", "bytes", "blobs", "seconds", "secrets", "redacted",
                          "indexing"}  # fmt: skip
    assert first["indexing"] is None  # (a small sync indexes before it returns)
    assert first["records"] > 0
    run("--root", str(cloud), "sync", "--store", store_dsn, "--machine", "cloud")
    again = json.loads(run("--root", str(laptop), "--store", store_dsn, "sync",
                           "--machine", "laptop", "--json"))  # fmt: skip
    assert (again["files"], again["records"], again["bytes"]) == (0, 0, 0)

    local = {r["sessionId"]: r for r in json.loads(run("--root", str(laptop), "sessions",
                                                      "--all", "--json"))}  # fmt: skip
    (sid,) = local
    transcript = Path(local[sid]["path"])
    expected_context = run("--root", str(laptop), "context", sid, "--json")
    expected_export = run("--root", str(laptop), "export", sid, "--format", "json", "-o", "-")
    shutil.rmtree(transcript.parent)  # the client's cleanup, or a mistake

    stored = json.loads(run("--store", store_dsn, "sessions", "--all", "--json"))
    by_machine = {r["machine"]: r for r in stored}
    assert set(by_machine) == {"laptop", "cloud"}
    row = by_machine["laptop"]
    assert {k: v for k, v in row.items() if k not in ("machine", "user", "live")} == {
        k: v for k, v in local[sid].items() if k != "live"
    }
    assert run("--store", store_dsn, "context", sid, "--json") == expected_context
    assert run("--store", store_dsn, "export", sid, "--format", "json", "-o", "-") == (
        expected_export
    )
    only = json.loads(run("--store", store_dsn, "sessions", "--all", "--machine", "cloud",
                          "--json"))  # fmt: skip
    assert [r["machine"] for r in only] == ["cloud"]
    assert json.loads(run("--store", store_dsn, "sessions", "--all", "--user", "nobody-x",
                          "--json")) == []  # fmt: skip


def test_machine_filters_need_a_store(tmp_path: Path) -> None:
    root = root_of(FIXTURES / "02-rewind-both", tmp_path, "root")
    out = CliRunner().invoke(cli, ["--root", str(root), "sessions", "--machine", "x"])
    assert out.exit_code == 2 and "give --store" in out.output


def test_sync_needs_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSIONTREE_STORE", raising=False)
    root = root_of(FIXTURES / "02-rewind-both", tmp_path, "root")
    out = CliRunner().invoke(cli, ["--root", str(root), "sync"])
    assert out.exit_code == 2 and "sync needs a store" in out.output


def _error(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize("as_json", [False, True])
def test_unreachable_server_is_one_line_without_the_password(tmp_path: Path, as_json: bool) -> None:
    root = root_of(FIXTURES / "02-rewind-both", tmp_path, "root")
    dsn = "postgresql://ada:s3cret-pw@127.0.0.1:1/archive?connect_timeout=2"
    code, out = _error("--root", str(root), "--store", dsn, "sync", *(["--json"] * as_json))
    assert code == 1
    assert "s3cret-pw" not in out
    if as_json:
        doc = json.loads(out)
        assert doc["code"] == "store-unreachable"
        assert "ada@127.0.0.1:1/archive" in doc["error"]
    else:
        assert len(out.strip().splitlines()) == 1
        assert out.startswith("sessiontree: cannot reach the store (ada@127.0.0.1:1/archive)")


def test_a_missing_database_is_one_line_without_the_password(store_dsn: str) -> None:
    missing = make_conninfo(store_dsn, dbname="no_such_db_here", password="p4ss-word")
    code, out = _error("--store", missing, "sessions", "--all", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["code"] == "store-no-database", doc
    assert "p4ss-word" not in out and "no_such_db_here" in doc["error"]


def test_a_refused_login_is_told_as_such_without_the_password() -> None:
    """(The throwaway cluster trusts its socket's logins, so the server's answer to a
    wrong password is given here as libpq words it.)"""
    from sessiontree.storage.store.connect import store_error

    dsn = "host=db.example port=5432 dbname=team user=ada password=hunter2-pw"
    said = psycopg.OperationalError(
        'connection failed: connection to server at "10.0.0.5", port 5432 failed: '
        'FATAL:  password authentication failed for user "ada" (password hunter2-pw)'
    )
    error = store_error(said, dsn)
    assert error.code == "store-auth"
    assert "hunter2-pw" not in str(error)
    assert str(error).startswith("the store refused the login (ada@db.example:5432/team)")


def test_a_store_with_no_schema_or_a_newer_one_is_refused(store_dsn: str) -> None:
    code, out = _error("--store", store_dsn, "sessions", "--all")
    assert code == 1 and "holds no sessiontree schema yet" in out
    assert len(out.strip().splitlines()) == 1
    run("--store", store_dsn, "store", "migrate")
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO sessiontree.schema_version (version, name, checksum)"
            " VALUES (9999, '9999_future.sql', '\\x00')"
        )
    code, out = _error("--store", store_dsn, "sessions", "--all", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["code"] == "store-schema"
    assert "newer than this program" in doc["error"]
    code, out = _error("--store", store_dsn, "store", "migrate")
    assert code == 1 and "newer than this program" in out


def test_reads_never_write(store_dsn: str) -> None:
    """A read connection runs in read-only transactions: the server refuses a write."""
    from sessiontree.storage.store.connect import connect

    with (
        connect(store_dsn, read_only=True) as conn,
        pytest.raises(psycopg.errors.ReadOnlySqlTransaction),
    ):
        conn.execute("CREATE TABLE nope (x int)")


def test_history_usage_and_every_read_command_as_locally(store_dsn: str, tmp_path: Path) -> None:
    """A demo root synced: every read command's --json from the store is byte for byte
    the local one (history merged from one machine is its file's)."""
    root = tmp_path / "demo"
    run("demo", "--root", str(root))
    run("--root", str(root), "--store", store_dsn, "sync")
    local = ["--root", str(root)]
    stored = ["--store", store_dsn]
    for by in ("day", "session", "project", "model"):
        args = ("usage", "--all", "--by", by, "--json")
        assert run(*stored, *args) == run(*local, *args)
    for by in ("week", "month", "block"):  # and a zone, and each row's models
        args = ("usage", "--all", "--by", by, "--timezone", "Asia/Kolkata", "--breakdown")
        assert run(*stored, *args, "--json") == run(*local, *args, "--json")
    assert run(*stored, "history", "--json") == run(*local, "history", "--json")
    ids = [r["sessionId"] for r in json.loads(run(*local, "sessions", "--all", "--json"))]
    assert len(ids) >= 5
    for sid in ids:
        for args in (
            ("show", sid, "--json"),
            ("show", sid, "--all-branches", "--json"),
            ("tree", sid, "--json"),
            ("context", sid, "--json"),
            ("prompts", sid, "--json"),
            ("checkpoints", sid, "--json"),
            ("export", sid, "--format", "md", "-o", "-"),
            ("export", sid, "--format", "html", "-o", "-"),
            ("export", sid, "--format", "html", "--all-branches", "-o", "-"),
            ("export", sid, "--format", "md", "--all-branches", "-o", "-"),
        ):
            assert run(*stored, *args) == run(*local, *args), args


@pytest.mark.parametrize(
    "args",
    [
        ("cels",),
        ("weather",),
        ("weather", "--off-path"),
        ("weather", "--active-path"),
        ("test", "--tool", "Bash"),
        ("the", "--role", "assistant"),
        ("log", "--kind", "prompt"),
        ("parser", "--history"),
        ("units", "--since", "2026-01-01", "--until", "2099-01-01"),
    ],
)
def test_search_in_the_store_finds_what_local_search_finds(
    store_dsn: str, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """The same hits (session, record, part, on or off the active path, tool) as the
    local index, for the demo's sessions: PostgreSQL's full-text search over words cut
    as local search cuts them (``cels`` finds Celsius, ``weather`` weather.py)."""
    root = tmp_path / "demo"
    run("demo", "--root", str(root))
    run("--root", str(root), "--store", store_dsn, "sync")

    def hits(*where: str) -> set[tuple[object, ...]]:
        found = json.loads(run(*where, "search", *args, "--all", "--json"))
        return {
            (h["sessionId"], h["uuid"], h["kind"], h["onActivePath"], h["toolName"]) for h in found
        }

    local = hits("--root", str(root))
    assert local, "the query finds nothing: the test would prove nothing"
    assert hits("--store", store_dsn) == local
    stored = json.loads(run("--store", store_dsn, "search", *args, "--all", "--json"))
    assert all(h["machine"] and h["user"] for h in stored if h["source"] != "history")
    assert all(h["highlights"] for h in stored)


KEY = "sk-ant-api03-" + "Q7vX2mR9kLp4Tz8Wn3Bc6Hd1Fg5Js0Ay" * 3 + "AA"


def _root_with_a_secret(tmp_path: Path) -> tuple[Path, Path]:
    root = root_of(FIXTURES / "02-rewind-both", tmp_path, "root")
    (path,) = (root / "projects").glob("*/*.jsonl")
    with path.open("a") as out:
        out.write(
            json.dumps(
                {
                    "type": "user",
                    "uuid": "00000000-0000-4000-8000-0000000000aa",
                    "parentUuid": None,
                    "isSidechain": False,
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t1",
                                     "content": f"ANTHROPIC_API_KEY={KEY}\nHOME=/root"}],
                    },
                }
            )
            + "\n"
        )  # fmt: skip
    return root, path


def test_sync_reports_secrets_and_redact_masks_them(store_dsn: str, tmp_path: Path) -> None:
    root, path = _root_with_a_secret(tmp_path)
    before = path.read_bytes()
    report = json.loads(run("--root", str(root), "--store", store_dsn, "sync", "--json"))
    assert report["secrets"] == 1 and report["redacted"] is False
    local = json.loads(run("--root", str(root), "secrets", "--json"))
    stored = json.loads(run("--store", store_dsn, "secrets", "--json"))
    assert [(r["line"], r["kind"]) for r in local] == [(r["line"], r["kind"]) for r in stored]
    assert local and local[0]["kind"] == "anthropic-key"
    assert KEY not in json.dumps(local) and KEY not in json.dumps(stored)
    text = run("--root", str(root), "--store", store_dsn, "sync")  # nothing new: no secret
    assert "secret(s) found" not in text

    with psycopg.connect(store_dsn, autocommit=True) as conn:
        conn.execute("CREATE DATABASE redacted_copy")
    redacted = make_conninfo(store_dsn, dbname="redacted_copy")
    try:
        out = run("--root", str(root), "--store", redacted, "sync", "--redact")
        assert "1 secret(s) found in what was sent, masked in the store" in out
        assert KEY not in out
        sid = path.stem
        exported = run("--store", redacted, "export", sid, "--format", "json", "-o", "-")
        assert KEY not in exported and "[REDACTED:anthropic-key]" in exported
        assert path.read_bytes() == before  # the local file is never changed
        found = json.loads(run("--store", redacted, "search", "Q7vX2mR9kLp4", "--all", "--json"))
        assert found == []
    finally:
        with psycopg.connect(store_dsn, autocommit=True) as conn:
            conn.execute("DROP DATABASE redacted_copy WITH (FORCE)")


def test_the_daemon_serves_the_stores_reads(store_dsn: str, tmp_path: Path) -> None:
    """Read from the store by a worker of the daemon (psycopg imported ahead, the
    connection its own): the same output as the command alone."""
    import os
    import subprocess
    import sys
    import tempfile

    root = root_of(FIXTURES / "02-rewind-both", tmp_path, "root")
    run("--root", str(root), "--store", store_dsn, "sync", "--machine", "laptop")
    with tempfile.TemporaryDirectory(prefix="st-daemon-") as state:
        env = {**os.environ, "SESSIONTREE_STATE_DIR": state, "SESSIONTREE_STORE": store_dsn}
        env.pop("SESSIONTREE_NO_DAEMON", None)

        def command(*args: str, local: bool = False) -> subprocess.CompletedProcess[bytes]:
            own = {**env, "SESSIONTREE_NO_DAEMON": "1"} if local else env
            return subprocess.run([sys.executable, "-m", "sessiontree", *args], env=own,
                                  capture_output=True, timeout=60, check=False)  # fmt: skip

        assert command("daemon", "start").returncode == 0
        try:
            for args in (("sessions", "--all", "--json"), ("search", "the", "--all", "--json"),
                         ("usage", "--all", "--json")):  # fmt: skip
                alone, served = command(*args, local=True), command(*args)
                assert alone.returncode == 0, alone.stderr
                assert (served.returncode, served.stdout, served.stderr) == (
                    alone.returncode, alone.stdout, alone.stderr,
                )  # fmt: skip
            status = json.loads(command("daemon", "status", "--json").stdout)
            assert status["served"] == 3
        finally:
            command("daemon", "stop")
