"""SessionStart hooks: the commands settings name, run when a session starts, as client
2.1.328 runs them (seen running it against ``mock_api.py`` with a hook in its settings):

* the hooks are read from ``<config root>/settings.json``, then the project's
  ``.claude/settings.json`` and ``.claude/settings.local.json``:
  ``{"hooks": {"SessionStart": [{"matcher": "...", "hooks": [{"type": "command",
  "command": "...", "timeout": seconds}]}]}}``; a matcher is a regular expression over the
  source (``startup``, ``resume``, ``clear``, ``compact``), empty or ``*`` for all;
* each runs in the project folder through the shell with ``CLAUDE_ENV_FILE`` (its
  ``session-env/<sessionId>/sessionstart-hook-<N>.sh``, where it appends the exports later
  commands source), ``CLAUDE_PROJECT_DIR`` and ``CLAUDE_CODE_SESSION_ID`` set, and on
  stdin ``{"session_id", "transcript_path", "cwd", "hook_event_name": "SessionStart",
  "source"}``;
* what a hook that succeeds prints goes to the model: a ``hook_success`` attachment,
  rendered as the system text ``SessionStart:<source> hook success: <stdout>`` (the first
  record of a new session, the prompt hung on it);
* ``/clear`` runs them with ``clear`` for the new session (its own ``session-env/``
  folder; the attachment is that session's first record, the command's records hang on
  it); a compaction (``/compact``, or automatic) with ``compact``, the summary's prompt id
  and the model in the input, the attachment written after the compaction's records. The
  exports a compaction's hooks write are not read again by the running session (the
  client keeps the script it read); the new session of a ``/clear`` reads its own.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid as uuidlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

JsonDict = dict[str, Any]
Source = Literal["startup", "resume", "clear", "compact"]

#: How long a hook may run when its settings give no timeout (the client's: 60 s).
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class HookCommand:
    """One command hook of the SessionStart event."""

    command: str
    matcher: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S

    def matches(self, source: str) -> bool:
        if self.matcher in ("", "*"):
            return True
        try:
            return re.fullmatch(self.matcher, source) is not None
        except re.error:
            return self.matcher == source


@dataclass(frozen=True)
class HookRun:
    """What one hook did."""

    command: str
    source: str
    stdout: str
    stderr: str
    exit_code: int
    duration_ms: int

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0

    def attachment(self, *, tool_use_id: str | None = None) -> tuple[JsonDict, str]:
        """``(attachment, rendered text)`` as the client records a hook that succeeded."""
        name = f"SessionStart:{self.source}"
        content = self.stdout.strip()
        attachment = {
            "type": "hook_success",
            "hookName": name,
            "toolUseID": tool_use_id or str(uuidlib.uuid4()),
            "hookEvent": "SessionStart",
            "content": content,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "exitCode": self.exit_code,
            "command": self.command,
            "durationMs": self.duration_ms,
        }
        return attachment, f"<system-reminder>\n{name} hook success: {content}\n</system-reminder>"


def settings_files(*, config_dir: Path, cwd: Path) -> list[Path]:
    """Where hooks are read from, in the order the client merges them."""
    return [
        config_dir / "settings.json",
        cwd / ".claude" / "settings.json",
        cwd / ".claude" / "settings.local.json",
    ]


def read_session_start_hooks(files: Sequence[Path]) -> list[HookCommand]:
    """The SessionStart command hooks of ``files``, in order; a file that is missing or
    not JSON is passed over (the client warns and goes on)."""
    found: list[HookCommand] = []
    for path in files:
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        hooks = settings.get("hooks") if isinstance(settings, dict) else None
        groups = hooks.get("SessionStart") if isinstance(hooks, dict) else None
        for group in groups if isinstance(groups, list) else ():
            if not isinstance(group, dict):
                continue
            matcher = group.get("matcher")
            for hook in group.get("hooks") or ():
                if not isinstance(hook, dict) or hook.get("type", "command") != "command":
                    continue
                command = hook.get("command")
                timeout = hook.get("timeout")
                if isinstance(command, str) and command.strip():
                    found.append(
                        HookCommand(
                            command,
                            matcher if isinstance(matcher, str) else "",
                            float(timeout)
                            if isinstance(timeout, int | float) and timeout > 0
                            else DEFAULT_TIMEOUT_S,
                        )
                    )
    return found


def run_session_start_hooks(
    hooks: Sequence[HookCommand],
    *,
    source: Source,
    session_id: str,
    transcript_path: Path,
    cwd: Path,
    env: Mapping[str, str],
    env_file: Callable[[int], Path],
    clock: Callable[[], float] = time.monotonic,
    prompt_id: str | None = None,
    model: str | None = None,
) -> list[HookRun]:
    """Run the hooks that match ``source``, one after another; ``env_file(N)`` is the
    ``CLAUDE_ENV_FILE`` of the N-th hook run (0-based). ``prompt_id`` and ``model`` go
    in the input when given, where the client puts them (after a compaction it gives
    both: the summary's prompt id and the model)."""
    fields: dict[str, str] = {
        "session_id": session_id,
        "transcript_path": str(transcript_path),
        "cwd": str(cwd),
    }
    if prompt_id is not None:
        fields["prompt_id"] = prompt_id
    fields |= {"hook_event_name": "SessionStart", "source": source}
    if model is not None:
        fields["model"] = model
    stdin = json.dumps(fields)
    runs: list[HookRun] = []
    for hook in (h for h in hooks if h.matches(source)):
        hook_env = {
            **env,
            "CLAUDE_ENV_FILE": str(env_file(len(runs))),
            "CLAUDE_PROJECT_DIR": str(cwd),
            "CLAUDE_CODE_SESSION_ID": session_id,
        }
        started = clock()
        try:
            done = subprocess.run(
                ["/bin/bash", "-c", hook.command],
                cwd=cwd,
                env=hook_env,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=hook.timeout_s,
                check=False,
            )
            code, stdout, stderr = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired:
            code, stdout, stderr = 124, "", f"timed out after {hook.timeout_s:g} s"
        except OSError as exc:
            code, stdout, stderr = 127, "", str(exc)
        duration = int((clock() - started) * 1000)
        runs.append(HookRun(hook.command, source, stdout, stderr, code, duration))
    return runs
