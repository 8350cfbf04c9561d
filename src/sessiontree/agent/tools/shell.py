"""Bash: one ``bash -c`` per call, the working directory kept between calls.

As client 2.1.328 does it (its transcripts, driven against a stand-in API):

- stderr is merged into stdout, in the order written; ``toolUseResult.stderr`` holds
  only what the client adds itself. Leading blank lines and trailing white space are cut
  (``"\\n\\n  x  \\n\\n"`` → ``"  x"``).
- ``cd`` carries to the next call when the command succeeds and ends inside the project;
  ending outside it, the shell goes back to the project folder and says so on stderr
  (``"\\nShell cwd was reset to <project>"``). Variables and functions do not carry.
- A non-zero exit is an error: ``Exit code N`` then the output (``toolUseResult`` is
  ``"Error: …"``). A timeout (default 120000 ms, at most 600000) stops the command
  (SIGTERM to its process group, exit 143) and adds ``Command timed out after 1s``.
- ``noOutputExpected`` is true for commands that print nothing when they work (``cd``,
  ``mkdir``…: every part of a compound command).
- An output over 30,000 bytes is spilled to ``tool-results/`` by the engine
  (:meth:`Session.append_bash_result`), not here: the outcome holds the whole output.

Cancelling (``cancel`` set) stops the command the same way; the outcome then says
``interrupted: true``.

What SessionStart hooks exported (``session-env/``, :mod:`sessiontree.lifecycle.session_env`)
is run in the command's shell first, as the client runs it: the script's text, then
``:`` (so how its last line ends does not decide whether the command runs), then the
command; what the script prints is part of the command's output.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from sessiontree.agent.tools.schemas import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS

#: Commands the client expects to print nothing when they work.
SILENT_COMMANDS = frozenset(
    {
        "cd",
        "mkdir",
        "touch",
        "rm",
        "rmdir",
        "mv",
        "cp",
        "chmod",
        "chown",
        "chgrp",
        "ln",
        "export",
        "unset",
        "wait",
    }
)

#: The most output kept from one command (the client persists at most 64 MB).
MAX_OUTPUT_BYTES = 64 * 1024 * 1024

#: How long a stopped command gets between SIGTERM and SIGKILL.
KILL_GRACE_S = 2.0

_SEPARATORS = re.compile(r"&&|\|\||[;|&\n]")


@dataclass(frozen=True)
class BashRun:
    """What one command did: its output (stderr merged), exit code, and how it ended."""

    output: str
    exit_code: int
    timed_out: bool = False
    interrupted: bool = False
    #: What the shell adds on stderr (the cwd reset note), "" when nothing.
    note: str = ""
    timeout_ms: int = DEFAULT_TIMEOUT_MS


def clean_output(text: str) -> str:
    """Leading blank lines and trailing white space cut, as the client shows output."""
    return re.sub(r"\A(?:[ \t\r\f\v]*\n)+", "", text).rstrip()


def expects_no_output(command: str) -> bool:
    """Every part of ``command`` is a command that prints nothing when it works."""
    parts = [p.strip() for p in _SEPARATORS.split(command) if p.strip()]
    return bool(parts) and all(p.split()[0] in SILENT_COMMANDS for p in parts)


def format_duration(ms: int) -> str:
    """``1s``, ``2m``, ``1m 30s`` (the client's wording of a timeout)."""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:g}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m" if rest == 0 else f"{minutes}m {rest}s"


def timeout_of(value: object) -> int:
    """The timeout a call asks for, in ms: the default when none, at most the maximum."""
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        return DEFAULT_TIMEOUT_MS
    return int(min(value, MAX_TIMEOUT_MS))


@dataclass
class Shell:
    """The project's shell: where the next command starts, kept between calls."""

    project: Path
    env: dict[str, str]
    cwd: Path = field(init=False)
    executable: str = "/bin/bash"

    def __post_init__(self) -> None:
        self.project = Path(os.path.normpath(self.project))
        self.cwd = self.project

    def inside(self, path: Path) -> bool:
        return path == self.project or path.is_relative_to(self.project)

    def run(
        self,
        command: str,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        cancel: threading.Event | None = None,
        prelude: str = "",
    ) -> BashRun:
        """Run ``command`` where the last one left off; move on to where it ended.
        ``prelude``: shell text run first in the same shell (the hooks' exports)."""
        start = self.cwd if self.cwd.is_dir() else self.project
        handle, cwd_file = tempfile.mkstemp(prefix="sessiontree-cwd-")
        os.close(handle)
        env = {**self.env, "SESSIONTREE_CWD_FILE": cwd_file}
        before = f"{prelude}\n:\n" if prelude else ""
        script = f"trap 'pwd > \"$SESSIONTREE_CWD_FILE\"' EXIT\n{before}{command}"
        try:
            code, output, timed_out, interrupted = _run(
                [self.executable, "-c", script], start, env, timeout_ms / 1000, cancel
            )
            ended = Path(cwd_file).read_text(encoding="utf-8", errors="replace").strip()
        finally:
            os.unlink(cwd_file)
        note = ""
        if code == 0 and ended:
            self.cwd = Path(os.path.normpath(ended))
        if not self.inside(self.cwd):
            self.cwd = self.project
            note = f"\nShell cwd was reset to {self.project}"
        return BashRun(
            clean_output(output.decode("utf-8", errors="replace")),
            code,
            timed_out=timed_out,
            interrupted=interrupted,
            note=note,
            timeout_ms=timeout_ms,
        )


def _run(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    cancel: threading.Event | None,
) -> tuple[int, bytes, bool, bool]:
    """Run in a new process group (so a stop reaches its children); the exit code (128+N
    for a signal), the output, and whether it was stopped by the timeout or ``cancel``."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    chunks: list[bytes] = []
    kept = [0]

    def drain() -> None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while chunk := os.read(fd, 65536):
            if kept[0] < MAX_OUTPUT_BYTES:
                chunks.append(chunk[: MAX_OUTPUT_BYTES - kept[0]])
                kept[0] += len(chunks[-1])

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout_s
    timed_out = interrupted = False
    while True:
        try:
            proc.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        if cancel is not None and cancel.is_set():
            interrupted = True
        elif time.monotonic() >= deadline:
            timed_out = True
        if timed_out or interrupted:
            _stop(proc)
            break
    reader.join(timeout=KILL_GRACE_S)
    if not reader.is_alive() and proc.stdout is not None:
        proc.stdout.close()  # (a child left running in the background keeps the pipe open)
    code = proc.returncode
    return (128 - code if code < 0 else code), b"".join(chunks), timed_out, interrupted


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the command's process group, SIGKILL if it is still there after a grace."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue
