"""Write commands refuse a session that a running process holds, unless --force."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.lifecycle.live import register_live_session
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Layout, Session, int]]:
    """A two-turn session, registered as open by another running process."""
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, str(tmp_path / "work"))
    for n in (1, 2):
        session.append_prompt(f"prompt {n}")
        session.append_response([{"type": "text", "text": f"answer {n}"}])
        session.end_turn()
    with subprocess.Popen(["sleep", "60"]) as holder:
        register_live_session(
            layout, session_id=session.session_id, cwd=session.env.cwd, pid=holder.pid
        )
        try:
            yield layout, session, holder.pid
        finally:
            holder.kill()


WRITES = [
    ["rewind", "{sid}", "--to", "-1"],
    ["compact", "{sid}", "--summary", "S"],
    ["summarize", "{sid}", "--at", "-1", "--from", "--summary", "S"],
    ["restore", "{sid}", "--to", "-1", "--yes"],
]


@pytest.mark.parametrize("args", WRITES, ids=lambda a: a[0])
def test_a_held_session_is_refused_unless_forced(
    held: tuple[Layout, Session, int], args: list[str]
) -> None:
    layout, session, pid = held
    argv = ["--root", str(layout.root), *(a.format(sid=session.session_id) for a in args)]
    before = session.path.read_bytes()
    refused = CliRunner().invoke(cli, argv)
    assert refused.exit_code == 1
    assert f"open in a running process (pid {pid})" in refused.output
    assert "Traceback" not in refused.output
    assert session.path.read_bytes() == before
    # looking is fine, and --force writes (this session has no file checkpoints, so a
    # restore then stops at that, not at the running process)
    for extra in ("--dry-run", "--force"):
        # --dry-run and --yes do not go together: a dry run only looks
        looks = [a for a in argv if a != "--yes"] if extra == "--dry-run" else argv
        result = CliRunner().invoke(cli, [*looks, extra])
        assert "running process" not in result.output
        if args[0] == "restore":
            assert "no checkpoint" in result.output
        else:
            assert result.exit_code == 0, result.output


def test_a_stale_entry_does_not_hold_the_session(held: tuple[Layout, Session, int]) -> None:
    layout, session, pid = held
    entry = layout.live_session_path(pid)
    data = json.loads(entry.read_text())
    data["procStart"] = "1"  # the pid now belongs to another process: stale
    entry.write_text(json.dumps(data))
    result = CliRunner().invoke(
        cli, ["--root", str(layout.root), "compact", session.session_id, "--summary", "S"]
    )
    assert result.exit_code == 0, result.output


def test_doctor_reports_stale_entries_and_missing_pastes(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, "/work/p", record_history=True)
    session.append_prompt("see [Pasted text #1 +1 lines]", pastes={1: "x\n" * 800})
    session.append_response([{"type": "text", "text": "ok"}])
    session.end_turn()
    with subprocess.Popen(["true"]) as gone:
        gone.wait()
    register_live_session(layout, session_id=session.session_id, cwd="/work/p", pid=gone.pid)
    for paste in layout.paste_cache_dir.iterdir():
        paste.unlink()
    result = CliRunner().invoke(cli, ["--root", str(layout.root), "doctor", "--json"])
    assert result.exit_code == 1
    kinds = [p["kind"] for p in json.loads(result.output)["problems"]]
    assert sorted(kinds) == ["missing-paste", "stale-live-entry"]
