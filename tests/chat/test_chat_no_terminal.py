"""Interactive ``sessiontree chat`` with no terminal to type into: one clear line, a
non-zero exit, no traceback, nothing left behind."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout
from tests.chat.conftest import SESSIONTREE


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "root"),
        "ANTHROPIC_API_KEY": "sk-ant-mock",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "PATH": "/usr/bin:/bin",
    }
    if os.environ.get("PYTHONPATH"):  # the sources under test (a worktree's), not the venv's
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run(
        [str(SESSIONTREE), "chat", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )


def test_chat_without_a_terminal_says_so(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "sessiontree: sessiontree chat needs a terminal to type into; to script it,"
        " use chat -p PROMPT"
    ]
    assert "Traceback" not in done.stdout + done.stderr
    sessions = tmp_path / "root" / "sessions"
    assert not sessions.exists() or not any(sessions.iterdir())


def test_the_picker_without_a_terminal_says_so(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, str(tmp_path))
    session.append_prompt("an old prompt")
    session.append_response([{"type": "text", "text": "ok"}])
    session.end_turn()
    done = _run(tmp_path, "-r")
    assert done.returncode != 0
    assert "the session picker needs a terminal" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_the_picker_with_no_session_to_pick_says_so(tmp_path: Path) -> None:
    done = _run(tmp_path, "-r")
    assert done.returncode == 1
    assert done.stderr == f"sessiontree: no session of {tmp_path} to resume\n"
