"""Write commands refuse a session that a running process holds, unless --force."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

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
        assert "would not see this change" not in result.output  # (a dry run notes it: below)
        if extra == "--force":
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


def _invoke(layout: Layout, session: Session, args: list[str]) -> Result:
    argv = ["--root", str(layout.root), *(a.format(sid=session.session_id) for a in args)]
    return CliRunner().invoke(cli, argv)


DRY_RUNS = [[a for a in args if a != "--yes"] + ["--dry-run"] for args in WRITES] + [
    ["switch", "{sid}", "--to", "{leaf}", "--dry-run"]
]


@pytest.mark.parametrize("args", DRY_RUNS, ids=lambda a: a[0])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_dry_run_of_a_held_session_shows_the_plan_and_says_it_is_held(
    held: tuple[Layout, Session, int], args: list[str], as_json: bool
) -> None:
    """A dry run writes nothing, so it is not refused: it shows its plan as ever and says,
    on stderr (``--json`` stays exact), that the session is held and that the real run
    would need --force; with --force it says the real run writes anyway."""
    layout, session, pid = held
    if args[0] == "switch":  # a branch to switch back to: the leaf a rewind leaves behind
        leaf = session.tip
        assert _invoke(layout, session, ["rewind", "{sid}", "--to", "-1", "--force"]).exit_code == 0
        args = [a.replace("{leaf}", str(leaf)) for a in args]
    before = session.path.read_bytes()
    result = _invoke(layout, session, [*args, *(["--json"] if as_json else [])])
    assert session.path.read_bytes() == before
    note = f"session {session.session_id} is open in a running process (pid {pid})"
    assert [line for line in result.stderr.splitlines() if note in line] == [
        f"sessiontree: note: {note}: a real run is refused unless --force (or close it first)"
    ]
    if args[0] == "restore":  # no file checkpoints in this session (with --json: on stdout)
        assert "no checkpoint" in result.output
        return
    assert result.exit_code == 0, result.output
    if as_json:
        assert json.loads(result.stdout)["dryRun"] is True
    else:
        assert "would" in result.stdout
    forced = _invoke(layout, session, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert "a real run with --force writes while it runs" in forced.stderr
    assert session.path.read_bytes() == before


def test_fork_of_a_held_session_is_never_refused_nor_noted(
    held: tuple[Layout, Session, int],
) -> None:
    """fork writes a new session and leaves the held one as it is: nothing to refuse, dry
    run or not."""
    layout, session, _ = held
    before = session.path.read_bytes()
    for extra in (["--dry-run"], []):
        result = _invoke(layout, session, ["fork", "{sid}", *extra])
        assert result.exit_code == 0, result.output
        assert "running process" not in result.output
    assert session.path.read_bytes() == before
