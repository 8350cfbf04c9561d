"""What the engine's tests share: the scripted Messages API stand-in run as a process
(``../shared/realclient/mock_api.py``, the one the real client is run against), and a
small toolbox double with the interface of ``agent.tools.Toolbox`` (helper B's), doing
Read, Write, Edit and Bash for real on real files, Write and Edit checkpointed through
the session as the client does. The loop is tested with it; the CLI with the real one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sessiontree.model.builders import bash_result, edit_result, read_result, write_result
from sessiontree.session.session import Session

SHARED = Path(__file__).resolve().parents[3] / "shared"
MOCK_API = SHARED / "realclient" / "mock_api.py"
needs_mock_api = pytest.mark.skipif(
    not MOCK_API.is_file(), reason="../shared/realclient/mock_api.py is not here"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class MockAPI:
    """The running stand-in: its URL and the log of the requests it answered."""

    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[dict[str, Any]]:
        """The POST /v1/messages requests, in order (count_tokens left out)."""
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines() if line]
        return [r for r in rows if r.get("method") == "POST" and r.get("kind") != "count_tokens"]


def mock_api_reporting(folder: Path, input_tokens: int) -> Path:
    """A copy of ``mock_api.py`` (made in ``folder``, never kept in the repository) whose
    responses report ``input_tokens`` read: a context near the limit, which makes the
    client compact by itself."""
    text = MOCK_API.read_text()
    old = '"input_tokens": 120,'
    assert text.count(old) == 1, "mock_api.py's usage line changed"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "mock_api_big.py"
    script.write_text(text.replace(old, f'"input_tokens": {input_tokens},'))
    return script


@contextmanager
def mock_api(folder: Path, *, full_log: bool = True, script: Path = MOCK_API) -> Iterator[MockAPI]:
    """``mock_api.py PORT LOGFILE`` (or ``script``) in a subprocess, up before this
    returns."""
    folder.mkdir(parents=True, exist_ok=True)
    port, log = free_port(), folder / "mock-requests.jsonl"
    env = {**os.environ, **({"MOCK_FULL_LOG": "1"} if full_log else {})}
    process = subprocess.Popen(
        [sys.executable, str(script), str(port), str(log)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("mock_api.py did not start") from None
                time.sleep(0.05)
        yield MockAPI(port, log)
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


@dataclass(frozen=True)
class Outcome:
    content: str | list[dict[str, Any]]
    tool_use_result: Any
    is_error: bool = False


SCHEMAS = [
    {
        "name": "Read",
        "description": "Read a file.",
        "input_schema": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}},
            "required": ["file_path"],
        },
    },
    {
        "name": "Write",
        "description": "Write a file.",
        "input_schema": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["file_path", "content"],
        },
    },
    {
        "name": "Edit",
        "description": "Replace a string in a file.",
        "input_schema": {
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
            },
            "required": ["file_path", "old_string", "new_string"],
        },
    },
    {
        "name": "Bash",
        "description": "Run a command.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
]


class FakeToolbox:
    """``agent.tools.Toolbox``'s interface over real files (no permissions: all run).
    ``gate``: when set, each call waits for it (a test interrupts while tools run);
    ``started`` is set as a call begins."""

    def __init__(self, session: Session, cwd: Path) -> None:
        self.session = session
        self.cwd = cwd
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.gate: threading.Event | None = None
        self.started = threading.Event()
        self._lock = threading.Lock()

    def schemas(self) -> list[dict[str, Any]]:
        return SCHEMAS

    def concurrency_safe(self, name: str, tool_input: dict[str, Any]) -> bool:
        return name == "Read"

    def _path(self, raw: str) -> Path:
        path = Path(raw)
        return path if path.is_absolute() else self.cwd / path

    def run(
        self,
        name: str,
        tool_input: dict[str, Any],
        *,
        tool_use_id: str,
        cancel: threading.Event | None = None,
    ) -> Outcome:
        with self._lock:
            self.calls.append((name, tool_input))
        self.started.set()
        if self.gate is not None:
            self.gate.wait(10)
        if name == "Read":
            path = self._path(tool_input["file_path"])
            text, result = read_result(str(path), path.read_text())
            return Outcome(text, result)
        if name == "Write":
            path = self._path(tool_input["file_path"])
            original = path.read_text() if path.exists() else None
            with self._lock:
                self.session.before_edit(path, tool_use_id=tool_use_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(tool_input["content"])
            text, result = write_result(str(path), tool_input["content"], original=original)
            return Outcome(text, result)
        if name == "Edit":
            path = self._path(tool_input["file_path"])
            original = path.read_text()
            old, new = tool_input["old_string"], tool_input["new_string"]
            if old not in original:
                return Outcome(
                    "<tool_use_error>String to replace not found in file.</tool_use_error>",
                    "Error: String to replace not found in file.",
                    True,
                )
            with self._lock:
                self.session.before_edit(path, tool_use_id=tool_use_id)
            path.write_text(original.replace(old, new, 1))
            text, result = edit_result(str(path), original=original, old_string=old, new_string=new)
            return Outcome(text, result)
        if name == "Bash":
            done = subprocess.run(
                tool_input["command"],
                shell=True,
                cwd=self.cwd,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            text, result = bash_result(done.stdout.rstrip("\n"), done.stderr.rstrip("\n"))
            return Outcome(text, result)
        return Outcome(f"<tool_use_error>No such tool: {name}</tool_use_error>", "Error", True)


def records(session: Session) -> list[dict[str, Any]]:
    """Every line of the session's file, decoded."""
    return [json.loads(line) for line in session.path.read_text().splitlines() if line]
