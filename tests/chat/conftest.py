"""The real ``sessiontree chat`` in a private tmux server, against the stand-in Messages API
(``../shared/realclient/mock_api.py``) through ``ANTHROPIC_BASE_URL``.

The tests skip, loudly, only when tmux cannot be had or the stand-in is not there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
MOCK_API = REPO.parent / "shared" / "realclient" / "mock_api.py"
SESSIONTREE = Path(sys.executable).parent / "sessiontree"
_PROMPT = re.compile(r"^>( |$)")


def _loud_skip(request: pytest.FixtureRequest, message: str) -> None:
    banner = ["!" * 70, message, "!" * 70]
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for line in banner:
            reporter.write_line(line, red=True, bold=True)
    else:
        print("\n".join(banner), file=sys.__stderr__)
    pytest.skip(message)


@pytest.fixture(scope="session")
def tmux_bin(request: pytest.FixtureRequest) -> str:
    found = shutil.which("tmux")
    if found is None:
        _loud_skip(
            request,
            "TMUX UNAVAILABLE (make system-deps installs it): the sessiontree chat"
            " end-to-end tests drive the terminal in tmux and did not run",
        )
    assert found is not None
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class MockApi:
    url: str
    log: Path

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


@pytest.fixture
def mock_api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MockApi]:
    if not MOCK_API.is_file():
        _loud_skip(request, f"MOCK API MISSING ({MOCK_API}): chat end-to-end tests did not run")
    port = _free_port()
    log = tmp_path / "mock-requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(MOCK_API), str(port), str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MOCK_FULL_LOG": "1"},  # whole request bodies in the log
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError("the mock API did not start") from None
                time.sleep(0.05)
        yield MockApi(f"http://127.0.0.1:{port}", log)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class ChatTerminal:
    """``sessiontree chat`` running in its own tmux server (pane = the process itself)."""

    def __init__(
        self, tmux: str, name: str, *, home: Path, root: Path, project: Path, api: MockApi
    ):
        self.base = [tmux, "-L", name]
        self.home, self.root, self.project, self.api = home, root, project, api
        self.started = False

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.root),
            "ANTHROPIC_API_KEY": "sk-ant-mock",
            "ANTHROPIC_BASE_URL": self.api.url,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "SHELL": "/bin/bash",
            "NO_COLOR": "1",
        }
        if os.environ.get("PYTHONPATH"):  # the sources under test (a worktree's), not the venv's
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env.update(extra)
        return env

    def start(self, *args: str, **env: str) -> None:
        if self.started:  # a second program in the same server: a new window
            self.tmux("kill-session", "-t", "c")
        env_flags = [f"-e{k}={v}" for k, v in self.env(**env).items()]
        command = [str(SESSIONTREE), "chat", *args]
        # Killing the only session ends the server; a client that reaches it while it
        # winds down is told "server exited unexpectedly": try again, a few times.
        for _ in range(10):
            done = subprocess.run(
                env=self.env(**env),
                args=[*self.base, "-f", "/dev/null", "new-session", "-d", "-s", "c", "-x",
                 "150", "-y", "45", "-c", str(self.project), *env_flags, *command],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if done.returncode == 0:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"tmux new-session failed: {done.stderr.strip()}")
        self.tmux("set-option", "-g", "escape-time", "0")
        self.tmux("set-option", "-t", "c", "remain-on-exit", "on")
        self.started = True
        self.wait_for(r"^>$|Resume a session")  # the prompt (or the picker) is up

    def wait_input(self, text: str, timeout: float = 30) -> None:
        """Until the input line (the last prompt line) is ``text``."""
        deadline = time.monotonic() + timeout
        while self.input_line() != text:
            if time.monotonic() > deadline:
                raise AssertionError(f"the input is not {text!r}:\n{self.screen()}")
            time.sleep(0.1)

    def tmux(self, *args: str) -> str:
        # the server is started with this environment only (none of the test runner's)
        done = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, check=False, env=self.env()
        )
        return done.stdout

    @property
    def pid(self) -> int:
        return int(self.tmux("display-message", "-p", "-t", "c", "#{pane_pid}").strip())

    def dead(self) -> bool:
        return self.tmux("display-message", "-p", "-t", "c", "#{pane_dead}").strip() == "1"

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "c", "-S", "-200")

    def wait_for(self, pattern: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(pattern, screen, re.M):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} not on screen after {timeout}s:\n{self.screen()}")

    def wait_exit(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not self.dead():
            if time.monotonic() > deadline:
                raise AssertionError(f"chat did not exit:\n{self.screen()}")
            time.sleep(0.1)

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", "c", key)
            time.sleep(0.15)

    def chord(self, *keys: str) -> None:
        """Keys sent in one write (Esc Esc, Esc Enter: a pause between them would make
        two lone Escapes)."""
        self.tmux("send-keys", "-t", "c", *keys)
        time.sleep(0.15)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "c", "-l", text)
        time.sleep(0.1)

    def prompt(self, text: str) -> None:
        """Type a prompt and send it; wait until the turn is over (the prompt is back)."""
        marks = self.prompt_marks()
        self.type(text)
        self.keys("Enter")
        self.wait_idle(marks)

    def prompt_marks(self) -> int:
        """How many prompt lines (``>`` and what was typed after it) the screen shows."""
        return sum(1 for line in self.screen().splitlines() if _PROMPT.match(line))

    def wait_idle(self, marks_before: int, timeout: float = 30) -> None:
        """Until a new empty prompt is drawn after ``marks_before`` prompt lines."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = [line for line in self.screen().splitlines() if line.strip()]
            count = sum(1 for line in lines if _PROMPT.match(line))
            if count > marks_before and lines and lines[-1].rstrip() == ">":
                return
            time.sleep(0.1)
        raise AssertionError(f"the prompt did not come back:\n{self.screen()}")

    def paste(self, text: str) -> None:
        """A bracketed paste, as a terminal sends one."""
        self.tmux("set-buffer", "-b", "p", text)
        self.tmux("paste-buffer", "-p", "-d", "-b", "p", "-t", "c")
        time.sleep(0.2)

    def input_line(self) -> str:
        """The last line that starts with the prompt mark."""
        lines = [line for line in self.screen().splitlines() if line.startswith(">")]
        return lines[-1][2:].rstrip() if lines else ""

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def chat(tmux_bin: str, mock_api: MockApi, tmp_path: Path) -> Iterator[ChatTerminal]:
    home = tmp_path / "home"
    root = home / ".claude"
    project = tmp_path / "project"
    for folder in (root, project):
        folder.mkdir(parents=True)
    term = ChatTerminal(
        tmux_bin,
        f"sessiontree-chat-{os.getpid()}-{tmp_path.name}",
        home=home,
        root=root,
        project=project,
        api=mock_api,
    )
    try:
        yield term
    finally:
        term.close()
