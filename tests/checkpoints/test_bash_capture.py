"""Files Bash commands change are found, kept, and put back by "restore code" (beyond the
client), while the client's own checkpoint records stay exactly what it writes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.checkpoints.bash_capture import (
    BashCapture,
    read_capture_log,
    scan_project,
)
from sessiontree.checkpoints.code import plan_restore_code, restore_code, undo_code_restore
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.doctor import check_transcript
from tests.agent.live import Live, start


def git(project: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(project), *args],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    return folder


@pytest.fixture
def repo(project: Path) -> Path:
    """A git project: tracked.txt and gone.txt committed, notes.txt never added."""
    (project / "tracked.txt").write_text("v1\n")
    (project / "gone.txt").write_text("committed\n")
    (project / "notes.txt").write_text("n1\n")
    git(project, "init", "-q")
    git(project, "add", "tracked.txt", "gone.txt")
    git(project, "commit", "-q", "-m", "start")
    return project


def turn(live: Live, prompt: str, *commands: str) -> str:
    uuid = live.prompt(prompt)
    for command in commands:
        outcome, _ = live.call("Bash", {"command": command, "description": "run"})
        assert not outcome.is_error, outcome.content
    live.session.append_response([{"type": "text", "text": "done"}])
    live.session.end_turn()
    return uuid


def read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def test_a_scan_sees_what_changed_and_skips_heavy_folders(project: Path) -> None:
    (project / "keep.txt").write_text("a")
    (project / "node_modules" / "pkg").mkdir(parents=True)
    (project / "node_modules" / "pkg" / "index.js").write_text("x")
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref")
    venv = project / "env"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr")
    (venv / "lib.py").write_text("x")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print()")
    scan = scan_project(project)
    assert set(scan.files) == {"keep.txt", "src/app.py"}
    assert scan.complete
    bounded = scan_project(project, limit=1)
    assert len(bounded.files) == 1 and not bounded.complete


def test_bash_changes_are_restored_through_sessiontree_restore(tmp_path: Path, repo: Path) -> None:
    live = start(tmp_path, repo)
    p1 = turn(
        live,
        "one",
        "echo new > new.txt && echo v2 > tracked.txt && echo n2 > notes.txt && rm gone.txt",
    )
    p2 = turn(live, "two", "echo v3 > tracked.txt && echo n3 > notes.txt && echo again > new.txt")
    turn(live, "three")

    # the log names each change and where its old content comes from
    records = read_capture_log(live.session.path)
    assert [r.prompt_id for r in records] == [p1, p2]
    first = {f.path: f for f in records[0].files}
    assert {p: (f.change, f.before.source) for p, f in first.items()} == {
        "new.txt": ("created", "absent"),
        "tracked.txt": ("modified", "git"),
        "notes.txt": ("modified", "unknown"),
        "gone.txt": ("deleted", "git"),
    }
    assert records[0].not_restorable == ["notes.txt"]
    second = {f.path: f.before.source for f in records[1].files}
    assert second == {"tracked.txt": "kept", "notes.txt": "kept", "new.txt": "kept"}

    transcript = Transcript.open(live.session.path)
    # back to before p2: every file as the first command left it, notes.txt included
    plan = plan_restore_code(live.layout, transcript, p2)
    assert {s.path.name: (s.action, s.source) for s in plan.steps} == {
        "new.txt": ("restore", "bash"),
        "tracked.txt": ("restore", "bash"),
        "notes.txt": ("restore", "bash"),
        "gone.txt": ("unchanged", "bash"),
    }
    assert plan.as_json()["beyondClient"] == sorted(str(s.path) for s in plan.steps)
    restore_code(plan)
    assert [read(repo / n) for n in ("new.txt", "tracked.txt", "notes.txt", "gone.txt")] == [
        "new\n",
        "v2\n",
        "n2\n",
        None,
    ]

    # back to before p1: created files go, git-clean files come back from git, the file
    # nobody kept a copy of is named and left
    plan = plan_restore_code(live.layout, transcript, p1)
    steps = {s.path.name: s for s in plan.steps}
    assert steps["new.txt"].action == "delete"
    assert steps["tracked.txt"].action == "restore"
    assert steps["gone.txt"].action == "restore"
    assert steps["notes.txt"].action == "skip"
    assert "git does not track it" in (steps["notes.txt"].reason or "")
    restore_code(plan)
    assert [read(repo / n) for n in ("new.txt", "tracked.txt", "notes.txt", "gone.txt")] == [
        None,
        "v1\n",
        "n2\n",
        "committed\n",
    ]
    # and the restore is undoable like any other
    undo_code_restore(live.layout, live.session.session_id)
    assert read(repo / "new.txt") == "new\n" and read(repo / "gone.txt") is None

    # the client's records: only what the client writes after a Bash call (the snapshot
    # again, hasUntrackedChanges), no file-history entry for a Bash-changed file
    for checkpoint in read_checkpoints(transcript):
        assert checkpoint.files == {}
    flagged = [
        json.loads(line)
        for line in live.session.path.read_text().splitlines()
        if '"file-history-snapshot"' in line and '"hasUntrackedChanges":true' in line
    ]
    assert len(flagged) == 2
    assert check_transcript(transcript, layout=live.layout) == []


def test_files_the_client_tracks_stay_the_clients(tmp_path: Path, repo: Path) -> None:
    live = start(tmp_path, repo)
    p1 = live.prompt("one")
    live.call("Write", {"file_path": str(repo / "a.txt"), "content": "by write\n"})
    live.call("Bash", {"command": "echo by bash > a.txt && echo side > b.txt"})
    live.session.end_turn()
    turn(live, "two")
    (record,) = read_capture_log(live.session.path)
    assert [f.path for f in record.files] == ["b.txt"]  # a.txt is the checkpoints'
    plan = plan_restore_code(live.layout, Transcript.open(live.session.path), p1)
    assert {s.path.name: (s.action, s.source) for s in plan.steps} == {
        "a.txt": ("delete", "checkpoint"),
        "b.txt": ("delete", "bash"),
    }


def test_touch_is_not_a_change_and_a_command_that_changes_nothing_writes_nothing(
    tmp_path: Path, repo: Path
) -> None:
    live = start(tmp_path, repo)
    turn(live, "one", "touch tracked.txt", "ls > /dev/null")
    assert read_capture_log(live.session.path) == []


def test_the_cli_says_which_files_only_sessiontree_restores(tmp_path: Path, repo: Path) -> None:
    live = start(tmp_path, repo)
    p1 = turn(live, "one", "echo new > new.txt && echo v2 > tracked.txt")
    turn(live, "two")
    argv = ["--root", str(live.layout.root), "restore", live.session.session_id, "--to", "1"]
    shown = CliRunner().invoke(cli, [*argv, "--dry-run"])
    assert shown.exit_code == 0, shown.output
    assert "new.txt (changed by Bash: the client would not restore it)" in shown.output
    assert "tracked.txt (changed by Bash: the client would not restore it)" in shown.output
    done = CliRunner().invoke(cli, [*argv, "--yes", "--json"])
    assert done.exit_code == 0, done.output
    code = json.loads(done.output)["code"]
    assert sorted(code["beyondClient"]) == [str(repo / "new.txt"), str(repo / "tracked.txt")]
    assert read(repo / "new.txt") is None and read(repo / "tracked.txt") == "v1\n"
    assert p1


def test_a_resumed_capture_knows_what_it_kept(tmp_path: Path, repo: Path) -> None:
    """A new host on the same session (a resume) reads the log: a file kept after one
    command is restorable before the next even without git."""
    live = start(tmp_path, repo)
    turn(live, "one", "echo n2 > notes.txt")
    again = BashCapture(live.session.path, repo, git=live.toolbox.git)
    assert again.known["notes.txt"][1].blob is not None
    before = again.before()
    (repo / "notes.txt").write_text("n3\n")
    record = again.after(before, prompt_id="p", tool_use_id="t", command="edit")
    assert record is not None
    (item,) = record.files
    assert item.before.source == "kept"


def test_without_git_a_changed_file_is_reported_not_guessed(tmp_path: Path, project: Path) -> None:
    (project / "data.txt").write_text("old\n")
    live = start(tmp_path, project)
    p1 = turn(live, "one", "echo new > data.txt")
    turn(live, "two")
    plan = plan_restore_code(live.layout, Transcript.open(live.session.path), p1)
    (step,) = plan.steps
    assert step.action == "skip" and step.source == "bash"
    assert "not a git repository" in (step.reason or "")
    assert "echo new > data.txt" in (step.reason or "")
