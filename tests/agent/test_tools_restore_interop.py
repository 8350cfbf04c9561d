"""Differential: "Restore code" by the real client and by sessiontree, on a session the
Toolbox wrote (Write, Edit and Bash on a git project).

The real client, resumed in tmux, ``/rewind`` → a prompt → "Restore code", must put the
files Write and Edit touched back exactly as they were before that prompt (the Toolbox's
checkpoints are the client's), and leave what Bash changed alone (the client never
tracks it). sessiontree's restore of the same prompt must give the same files, and, as
it deliberately does more, also put back what Bash changed: that difference, and only
that, is named here.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from sessiontree.checkpoints.code import plan_restore_code, restore_code
from sessiontree.conversation.transcript import Transcript
from sessiontree.storage.layout import Layout
from tests.agent.live import Live, start
from tests.interop.realclient import ClientUnavailable, client_env, install_client, mock_api
from tests.interop.test_checkpoint_interop import (
    Files,
    Terminal,
    project_files,
    rewind_restore_code,
    trust,
    wait_files,
)
from tests.interop.test_checkpoint_interop import terminal as terminal
from tests.interop.test_checkpoint_interop import tmux as tmux

pytestmark = pytest.mark.interop

BASH_FILES = {"made.txt", "tracked.txt"}


@pytest.fixture(scope="module")
def claude() -> Path:
    try:
        return install_client()
    except ClientUnavailable as exc:
        pytest.skip(f"REAL CLIENT UNAVAILABLE: {exc}")


def _git(project: Path, *args: str) -> None:
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", *ident, "-C", str(project), *args], check=True, capture_output=True)


def _turn(live: Live, text: str, calls: list[tuple[str, dict[str, object]]]) -> None:
    live.prompt(text)
    for name, tool_input in calls:
        outcome, _ = live.call(name, dict(tool_input))
        assert not outcome.is_error, outcome.content
    live.session.append_response([{"type": "text", "text": "Done."}])
    live.session.end_turn()


def _without_git(files: Files) -> Files:
    return {k: v for k, v in files.items() if not k.startswith(".git/")}


def test_client_and_sessiontree_restore_the_same_but_bash(
    claude: Path,
    terminal: Terminal,
    tmp_path: Path,
) -> None:
    base = tmp_path.resolve()
    home, project = base / "home", base / "proj"
    (home / ".claude").mkdir(parents=True)
    (home / "tmp").mkdir()
    project.mkdir()
    (project / "notes.md").write_text("original line\n")
    (project / "tracked.txt").write_text("v1\n")
    _git(project, "init", "-q")
    _git(project, "add", "tracked.txt")
    _git(project, "commit", "-q", "-m", "start")
    live = start(base, project, layout_root=home / ".claude")

    before: dict[str, Files] = {}
    steps: list[tuple[str, list[tuple[str, dict[str, object]]]]] = [
        (
            "p1 write a.txt and run a command",
            [
                ("Write", {"file_path": str(project / "a.txt"), "content": "alpha\n"}),
                ("Bash", {"command": "echo made > made.txt && echo v2 > tracked.txt"}),
            ],
        ),
        (
            "p2 edit a.txt and notes",
            [
                ("Edit", {"file_path": str(project / "a.txt"), "old_string": "alpha",
                          "new_string": "beta"}),
                ("Edit", {"file_path": str(project / "notes.md"), "old_string": "original",
                          "new_string": "edited"}),
                ("Bash", {"command": "echo again >> made.txt && echo v3 > tracked.txt"}),
            ],
        ),
        ("p3 look", [("Read", {"file_path": str(project / "a.txt")})]),
    ]  # fmt: skip
    for text, calls in steps:
        before[text] = _without_git(project_files(project))
        _turn(live, text, calls)
    end = _without_git(project_files(project))
    ours_root = base / "ours-root"
    shutil.copytree(home / ".claude", ours_root)

    # the real client
    trust(home, project)
    with mock_api() as (port, _bodies):
        env = {
            **client_env(home, port),
            "TERM": "xterm-256color",
            "SHELL": "/bin/bash",
            "TMPDIR": str(home / "tmp"),
        }
        command = " ".join(
            [
                "env -i",
                *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                shlex.quote(str(claude)),
                "--dangerously-skip-permissions -r",
                live.session.session_id,
                "; echo CLAUDE-EXITED; sleep 600",
            ]
        )
        terminal.start(command, project)
        terminal.wait_input("", timeout=90)
        theirs: dict[str, Files] = {}
        for text in ("p2 edit a.txt and notes", "p1 write a.txt and run a command"):
            expected = {
                **{k: v for k, v in before[text].items() if k not in BASH_FILES},
                **{k: v for k, v in end.items() if k in BASH_FILES},
            }
            rewind_restore_code(terminal, text)
            theirs[text] = _without_git(wait_files(project, expected))
            assert theirs[text] == expected, f"the client's Restore code to {text!r}"

    # sessiontree, from the same records, on the same files
    layout = Layout(ours_root)
    transcript = Transcript.open(next((ours_root / "projects").glob("*/*.jsonl")))
    for text in ("p2 edit a.txt and notes", "p1 write a.txt and run a command"):
        _put_back(project, end)
        plan = plan_restore_code(layout, transcript, _prompt(transcript, text))
        restore_code(plan)
        ours = _without_git(project_files(project))
        assert ours == before[text], f"sessiontree's restore to {text!r}"
        differs = {
            k for k in ours.keys() | theirs[text].keys() if ours.get(k) != theirs[text].get(k)
        }
        assert differs <= BASH_FILES, differs  # the one deliberate difference: Bash's files
        assert {s.path.name for s in plan.beyond_client} == BASH_FILES


def _prompt(transcript: Transcript, text: str) -> str:
    return next(
        uuid
        for uuid in transcript.prompt_uuids()
        if (record := transcript.record(uuid)) is not None and record.text() == text
    )


def _put_back(project: Path, files: Files) -> None:
    for path in list(project.rglob("*")):
        rel = str(path.relative_to(project))
        if path.is_file() and not rel.startswith(".git/") and rel not in files:
            path.unlink()
    for rel, (data, mode) in files.items():
        target = project / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(mode)
