"""The real client restores code from checkpoints sessiontree wrote.

A session is written with sessiontree's record builders and :class:`FileHistory` (prompts
that create, edit and delete files, in the project folder and below it, with a mode that
is not the default); then the real client resumes it interactively in tmux, ``/rewind`` →
a prompt → "Restore code", and the project folder must be exactly as it was before that
prompt: tracked files back, files created later gone, untracked files untouched.

Marked ``interop``. It skips, loudly, when tmux cannot be had (``apt-get install tmux`` is
tried first) or, through the ``claude`` fixture, when the client cannot be installed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import time
import uuid as uuidlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sessiontree.checkpoints.capture import FileHistory
from sessiontree.model import builders as b
from sessiontree.storage.jsonl import append_records
from sessiontree.storage.layout import Layout
from tests.conftest import FIXTURES
from tests.interop.realclient import client_env, mock_api

pytestmark = pytest.mark.interop

MODEL = "claude-opus-5-5"
Files = dict[str, tuple[bytes, int]]  # relative path → (bytes, permission bits)


def _loud_skip(request: pytest.FixtureRequest, message: str) -> None:
    """Skip with a banner on the terminal even when output is captured.

    (Not ``warnings.warn``: the suite turns warnings into errors.)
    """
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    banner = ["", "!" * 70, message, "!" * 70]
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            for line in banner:
                reporter.write_line(line, red=True, bold=True)
    else:
        print("\n".join(banner), file=sys.__stderr__)
    pytest.skip(message)


@pytest.fixture(scope="session")
def tmux(request: pytest.FixtureRequest) -> str:
    """The tmux binary; installed with apt-get when missing and possible."""
    found = shutil.which("tmux")
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "tmux"],
            capture_output=True,
            timeout=600,
            check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        found = shutil.which("tmux")
    if found is None:
        _loud_skip(
            request,
            "TMUX UNAVAILABLE (not installed, and apt-get could not install it): the "
            "checkpoint interop test drives the interactive client in tmux",
        )
    assert found is not None
    return found


# -- the session, written by sessiontree -------------------------------------------------


@dataclass
class SessionWriter:
    """Turns of one session through the builders; file edits through FileHistory."""

    layout: Layout
    project: Path
    session_id: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    records: list[b.JsonDict] = field(default_factory=list)
    prompts: list[tuple[str, str]] = field(default_factory=list)  # (uuid, text)
    leaf: str | None = None
    clock: datetime = field(default_factory=lambda: datetime.now(UTC) - timedelta(hours=1))

    def __post_init__(self) -> None:
        self.env = b.Envelope(session_id=self.session_id, cwd=str(self.project))
        self.history = FileHistory(self.layout, self.session_id, self.project, clock=self.now)
        self.prompt_id = ""

    def now(self) -> datetime:
        self.clock += timedelta(milliseconds=150)
        return self.clock

    def stamp(self) -> str:
        return b.format_timestamp(self.now())

    def prompt(self, text: str) -> str:
        uuid = str(uuidlib.uuid4())
        self.prompt_id = str(uuidlib.uuid4())
        self.records.append(self.history.snapshot(uuid))
        self.records.append(
            b.build_user_prompt(
                self.env,
                uuid=uuid,
                parent_uuid=self.leaf,
                prompt_id=self.prompt_id,
                content=text,
                timestamp=self.stamp(),
                prompt_index=len(self.prompts) + 1,
                turn_index=len(self.prompts) + 1,
            )
        )
        self.leaf = uuid
        self.prompts.append((uuid, text))
        return uuid

    def _respond(self, blocks: list[b.JsonDict], stop: str) -> str:
        assert self.leaf is not None
        uuids = [str(uuidlib.uuid4()) for _ in blocks]
        self.records += b.build_assistant_blocks(
            self.env,
            uuids=uuids,
            parent_uuid=self.leaf,
            message_id=f"msg_{uuidlib.uuid4().hex[:24]}",
            request_ref=str(uuidlib.uuid4()),
            blocks=blocks,
            timestamps=[self.stamp() for _ in blocks],
            model=MODEL,
            stop_reason=stop,
            usage=b.build_usage(input_tokens=100, output_tokens=20),
        )
        self.leaf = uuids[-1]
        return uuids[-1]

    def write(self, rel: str, content: bytes) -> None:
        """The Write tool: back the file up first (the delta), then write it."""
        path = self.project / rel
        original = path.read_text() if path.exists() else None
        tool_id = f"toolu_{uuidlib.uuid4().hex[:24]}"
        tool_input = {"file_path": str(path), "content": content.decode()}
        use = self._respond(
            [b.text_block(f"Writing {rel}."), b.tool_use_block(tool_id, "Write", tool_input)],
            "tool_use",
        )
        delta = self.history.before_edit(
            path, prompt_uuid=self.prompts[-1][0], tool_use_record_uuid=use
        )
        if delta is not None:
            self.records.append(delta)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        text, result = b.write_result(str(path), content.decode(), original=original)
        uuid = str(uuidlib.uuid4())
        self.records.append(
            b.build_tool_result(
                self.env,
                uuid=uuid,
                parent_uuid=use,
                prompt_id=self.prompt_id,
                tool_use_id=tool_id,
                content=text,
                tool_use_result=result,
                timestamp=self.stamp(),
            )
        )
        self.leaf = uuid

    def end_turn(self) -> None:
        self._respond([b.text_block("Done.")], "end_turn")
        assert self.leaf is not None
        uuid = str(uuidlib.uuid4())
        self.records.append(
            b.build_turn_duration(
                self.env,
                uuid=uuid,
                parent_uuid=self.leaf,
                duration_ms=900,
                message_count=len(self.records),
                timestamp=self.stamp(),
            )
        )
        self.leaf = uuid
        self.records.append(
            b.build_last_prompt(self.session_id, last_prompt=self.prompts[-1][1], leaf_uuid=uuid)
        )

    def save(self) -> Path:
        path = self.layout.transcript_path(str(self.project), self.session_id)
        append_records(path, self.records, fsync=True)
        return path


def project_files(project: Path) -> Files:
    return {
        str(p.relative_to(project)): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(project.rglob("*"))
        if p.is_file()
    }


def write_session(layout: Layout, project: Path) -> tuple[SessionWriter, dict[str, Files]]:
    """Five prompts; returns the writer and the project's files before each prompt.

    p5's checkpoint holds a.txt@v4, the content of a.txt@v2 again: a hard link to it.
    """
    (project / "src").mkdir(parents=True)
    (project / "notes.md").write_bytes(b"# Notes\noriginal line\n")
    (project / "notes.md").chmod(0o640)
    (project / "src" / "app.py").write_bytes(b"print('v1')\n")
    (project / "untracked.txt").write_bytes(b"never edited by a tool\n")
    session = SessionWriter(layout, project)
    before: dict[str, Files] = {}
    steps: list[tuple[str, list[tuple[str, bytes]]]] = [
        ("p1 create a.txt", [("a.txt", b"alpha\n")]),
        ("p2 edit notes and app", [("notes.md", b"# Notes\nedited line\n"),
                                   ("src/app.py", b"print('v2')\n")]),
        ("p3 edit a.txt, add src/new.py", [("a.txt", b"gamma\n"),
                                           ("src/new.py", b"NEW = 1\n")]),
        ("p4 edit app, a.txt back", [("src/app.py", b"print('v3')\n"),
                                     ("a.txt", b"alpha\n")]),
        ("p5 edit a.txt once more", [("a.txt", b"omega\n")]),
    ]  # fmt: skip
    for text, writes in steps:
        before[text] = project_files(project)
        session.prompt(text)
        for rel, content in writes:
            session.write(rel, content)
        session.end_turn()
    session.save()
    return session, before


# -- the real client, in tmux ------------------------------------------------------------


class Terminal:
    """One interactive client in a private tmux server."""

    def __init__(self, tmux: str, name: str) -> None:
        self.base = [tmux, "-L", name]
        self.name = name

    def start(self, command: str, cwd: Path) -> None:
        subprocess.run(
            [*self.base, "new-session", "-d", "-s", "c", "-x", "160", "-y", "50", "-c", str(cwd),
             command],
            check=True,
        )  # fmt: skip

    def screen(self) -> str:
        done = subprocess.run(
            [*self.base, "capture-pane", "-t", "c", "-p"], capture_output=True, text=True
        )
        return done.stdout

    def wait_for(self, pattern: str, timeout: float = 30, *, gone: bool = False) -> str:
        """Wait until ``pattern`` is on the screen (or, with ``gone``, no longer is)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if bool(re.search(pattern, screen, re.M)) != gone:
                return screen
            time.sleep(0.2)
        state = "still" if gone else "not"
        raise AssertionError(f"{pattern!r} {state} on screen after {timeout}s:\n{self.screen()}")

    def input_box(self) -> str | None:
        """The text in the prompt box: between the last two rules, after its ``❯``."""
        lines = self.screen().splitlines()
        rules = [i for i, line in enumerate(lines) if line.strip() and set(line.strip()) == {"─"}]
        if len(rules) < 2:
            return None
        box = "\n".join(lines[rules[-2] + 1 : rules[-1]])
        return re.sub(r"^\s*❯\s?", "", box).replace("\xa0", " ").strip()

    def wait_input(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.input_box() != text:
            if time.monotonic() > deadline:
                raise AssertionError(f"input box is not {text!r}:\n{self.screen()}")
            time.sleep(0.2)

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run([*self.base, "send-keys", "-t", "c", key], check=True)
            time.sleep(0.15)

    def type(self, text: str) -> None:
        subprocess.run([*self.base, "send-keys", "-t", "c", "-l", text], check=True)

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True)


@pytest.fixture
def terminal(tmux: str) -> Iterator[Terminal]:
    term = Terminal(tmux, f"sessiontree-interop-{os.getpid()}")
    try:
        yield term
    finally:
        term.close()


def trust(home: Path, project: Path) -> None:
    """``~/.claude.json`` from a fixture's, with this project trusted (as Driver.setup)."""
    config = json.loads((FIXTURES / "01-basic" / "claude.json").read_text())
    config.update(
        hasCompletedOnboarding=True,
        bypassPermissionsModeAccepted=True,
        projects={str(project): {"hasTrustDialogAccepted": True, "allowedTools": []}},
    )
    (home / ".claude.json").write_text(json.dumps(config, indent=2))
    settings = {"skipDangerousModePermissionPrompt": True}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))


def rewind_restore_code(term: Terminal, prompt_text: str) -> None:
    """``/rewind``, move to the prompt, choose "Restore code"."""
    term.wait_input("")
    term.type("/rewind")
    term.wait_input("/rewind")
    term.keys("Enter")
    term.wait_for(r"\(current\)")
    for _ in range(12):
        if _selected(term.screen(), prompt_text):
            break
        term.keys("Up")
    else:
        raise AssertionError(f"could not select {prompt_text!r}:\n{term.screen()}")
    term.keys("Enter")
    menu = term.wait_for(r"Never mind")
    items = {
        m.group(2).strip(): int(m.group(1))
        for m in re.finditer(r"(\d)\. ([A-Za-z ]+?)\s*$", menu, re.M)
    }
    assert "Restore code" in items, f"no 'Restore code' in the menu:\n{menu}"
    for _ in range(items["Restore code"] - 1):
        term.keys("Down")
    term.keys("Enter")
    term.wait_for(r"Never mind", gone=True)


def _selected(screen: str, prompt_text: str) -> bool:
    """The picker (below its "Rewind" title, not the conversation above) has the cursor on
    the prompt."""
    lines = screen.splitlines()
    titles = [i for i, line in enumerate(lines) if line.strip() == "Rewind"]
    picker = lines[titles[-1] :] if titles else []
    return any(line.lstrip().startswith("❯") and prompt_text in line for line in picker)


def wait_files(project: Path, expected: Files, timeout: float = 30) -> Files:
    deadline = time.monotonic() + timeout
    while True:
        now = project_files(project)
        if now == expected or time.monotonic() > deadline:
            return now
        time.sleep(0.2)


def test_real_client_restores_code_from_our_checkpoints(
    claude: Path, terminal: Terminal, tmp_path: Path
) -> None:
    base = tmp_path.resolve()
    home, project = base / "home", base / "proj"
    (home / ".claude").mkdir(parents=True)
    (home / "tmp").mkdir()
    project.mkdir()
    layout = Layout(home / ".claude")
    session, before = write_session(layout, project)
    linked = [p for p in layout.backup_dir(session.session_id).iterdir() if p.stat().st_nlink > 1]
    assert linked, "the session should restore from hard-linked (deduplicated) backups"
    trust(home, project)
    (project / "untracked.txt").write_bytes(b"changed by the user, must stay\n")
    for files in before.values():
        files["untracked.txt"] = project_files(project)["untracked.txt"]
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
                session.session_id,
                "; echo CLAUDE-EXITED; sleep 600",
            ]
        )
        terminal.start(command, project)
        terminal.wait_input("", timeout=90)
        for text in (
            "p5 edit a.txt once more",  # a.txt comes back from a hard-linked backup
            "p3 edit a.txt, add src/new.py",  # src/new.py is deleted (v1: null)
            "p2 edit notes and app",  # src/app.py below the cwd; notes.md keeps mode 0640
            "p1 create a.txt",  # a.txt is deleted; untracked.txt stays as the user left it
        ):
            rewind_restore_code(terminal, text)
            got = wait_files(project, before[text])
            assert got == before[text], f"after Restore code to {text!r}:\n{terminal.screen()}"
