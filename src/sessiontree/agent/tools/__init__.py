"""The client's tools (Read, Write, Edit, Bash, Glob, Grep), run on real files.

A :class:`Toolbox` holds what the tools keep between calls (the shell's working
directory) and checks each call's permission; :meth:`Toolbox.run` gives a
:class:`ToolOutcome` in the shape client 2.1.328 writes. The loop records it::

    outcome = toolbox.run(name, tool_input, tool_use_id=block_id, cancel=cancel)
    record_outcome(session, block_id, name, outcome)

:func:`record_outcome` appends the result as the client does: a Bash result that is not
an error through :meth:`Session.append_bash_result`'s path (an output over 30,000 bytes
spilled to ``tool-results/`` with the ``<persisted-output>`` preview; ``is_error: false``
and ``sandboxed: false`` as the client writes on Bash results), anything else through
:meth:`Session.append_tool_result` with its ``is_error``.

What happens on disk before a result is recorded, in the client's order (the result
record comes after): Write and Edit call :meth:`Session.before_edit` before changing the
file (its ``file-history-delta`` follows the tool_use record); a Bash call is followed
by the prompt's snapshot again with ``hasUntrackedChanges`` (once per prompt, as the
client writes it) and, with ``capture_bash``, by sessiontree's own record of the files
the command changed (:mod:`sessiontree.checkpoints.bash_capture`), so "restore code"
covers them.

Permission: :class:`~sessiontree.agent.permissions.Permissions` answers before a call
runs (after its input is checked, as the client asks only about valid calls); a refusal
is the outcome, in the client's words.

Parallel tool use: a loop may run one response's calls from several threads.
:meth:`Toolbox.concurrency_safe` says which ones the client runs side by side (reads,
searches, commands that only look); the others take a lock and run one at a time (the
shell's directory, the checkpoints and the Bash capture are shared). Record the results
in the order the calls finish, each on its own call (``Session.append_tool_result``).

Cancelling (``cancel`` set, Ctrl+C): a running command is stopped with its process
group; a call not started yet is not started. Either way the outcome is the client's
"doesn't want to take this action" text with ``is_error``; how the turn records the
interruption is the loop's.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiontree.agent.tools.commands import is_read_only, split_command
from sessiontree.agent.tools.files import (
    FileCall,
    check_edit,
    files_seen,
    run_edit,
    run_read,
    run_write,
)
from sessiontree.agent.tools.outcome import (
    REJECTED_RESULT,
    ToolError,
    ToolOutcome,
    error_outcome,
    validate_input,
)
from sessiontree.agent.tools.schemas import INPUT_SCHEMAS, TOOL_NAMES, build_tool_schemas
from sessiontree.agent.tools.search import SearchCall, run_glob, run_grep
from sessiontree.agent.tools.shell import (
    BashRun,
    Shell,
    expects_no_output,
    format_duration,
    timeout_of,
)
from sessiontree.checkpoints.bash_capture import BashCapture, CaptureRecord
from sessiontree.model.builders.envelope import JsonDict
from sessiontree.model.builders.tools import bash_result
from sessiontree.session import Session

if TYPE_CHECKING:  # (at run time permissions imports this package's globs)
    from sessiontree.agent.permissions import Permissions

__all__ = [
    "INTERRUPTED_TEXT",
    "TOOL_NAMES",
    "ToolError",
    "ToolOutcome",
    "Toolbox",
    "build_tool_schemas",
    "record_outcome",
]

#: The tool_result of a call the user stopped (Ctrl+C while it ran), the client's words.
INTERRUPTED_TEXT = (
    "The user doesn't want to take this action right now. STOP what you are doing and wait "
    "for the user to tell you how to proceed."
)


class Toolbox:
    """The tools of one session in one project (``cwd``). ``env`` is the environment
    commands run with; ``capture_bash`` keeps what Bash changes (beyond the client).
    ``ripgrep``: the ``rg`` Grep runs (default: the one on ``env``'s PATH; None, or
    none found: a Python search). ``session_env``: the script a command's shell runs
    first, given the session id (what SessionStart hooks exported: the host's
    ``read_session_env``); read once per session and kept, as the client keeps it, until
    :meth:`reload_session_env` (hooks ran again)."""

    def __init__(
        self,
        session: Session,
        *,
        cwd: Path,
        permissions: Permissions,
        env: Mapping[str, str],
        capture_bash: bool = True,
        ripgrep: str | bool | None = True,
        session_env: Callable[[str], str] | None = None,
    ) -> None:
        self.session_env = session_env
        #: The session env script read for the session it names (see ``session_env``).
        self._env_script: tuple[str, str] | None = None
        self.cwd = Path(os.path.normpath(cwd))
        self.permissions = permissions
        self.env = dict(env)
        self.shell = Shell(self.cwd, self.env)
        self.home_dir = self.env.get("HOME")
        search_path = self.env.get("PATH")
        self.git = shutil.which("git", path=search_path)
        self.capture_bash = capture_bash
        self.capture: BashCapture | None = None
        if ripgrep is True:
            self.ripgrep: str | None = shutil.which("rg", path=search_path)
        else:
            self.ripgrep = ripgrep or None
        #: What the last Bash capture found (None: nothing changed, or no capture).
        self.last_capture: CaptureRecord | None = None
        #: Files whose whole content the model has, with that content (what Edit's
        #: result says); rebuilt from the transcript whenever :attr:`session` is set.
        self.in_context: dict[Path, str] = {}
        #: Calls that change things run one at a time (see :meth:`concurrency_safe`).
        self._serial = threading.Lock()
        self.session = session

    @property
    def session(self) -> Session:
        """The session the tools checkpoint in. Setting it (a resumed session, ``/resume``,
        ``/clear``, ``/fork``) rebuilds what the model has seen of the project's files from
        that session's conversation, as the client does on resume
        (:func:`~sessiontree.agent.tools.files.files_seen`), and keeps what Bash changes
        from then on beside that session's transcript."""
        return self._session

    @session.setter
    def session(self, session: Session) -> None:
        self._session = session
        if self.capture_bash:  # what Bash changes is kept beside this session's transcript
            self.capture = BashCapture(
                session.path, self.cwd, tracked=self._tracked, git=self.git, env=self.env
            )
        self.in_context = {}
        if session.path.exists() and session.tip is not None:
            transcript = session.transcript()
            records = transcript.records(transcript.tree.path_to(session.tip))
            starts = [n for n, r in enumerate(records) if r.subtype == "compact_boundary"]
            kept = records[starts[-1] :] if starts else records  # what the model still has
            self.in_context = files_seen(kept, cwd=self.cwd, home_dir=self.home_dir)

    def _tracked(self) -> list[str]:
        history = self.session.file_history
        return [t.path for t in history.files.values()] if history is not None else []

    def reload_session_env(self) -> None:
        """Read the session env script again before the next command (hooks ran)."""
        self._env_script = None

    def _session_env_script(self) -> str:
        if self.session_env is None:
            return ""
        session_id = self.session.session_id
        if self._env_script is None or self._env_script[0] != session_id:
            self._env_script = (session_id, self.session_env(session_id))
        return self._env_script[1]

    @property
    def current_dir(self) -> Path:
        """Where the next command starts, and relative paths are taken from."""
        return self.shell.cwd

    def concurrency_safe(self, name: str, tool_input: JsonDict) -> bool:
        """Whether this call may run beside others of the same response, as the client
        runs them: reads and searches, and commands that only look. The rest (Write,
        Edit, other commands) run one at a time even if called from several threads:
        the shell's directory, the checkpoints and the Bash capture are shared."""
        if name in ("Read", "Glob", "Grep"):
            return True
        if name == "Bash" and isinstance(tool_input.get("command"), str):
            parts = split_command(tool_input["command"])
            return bool(parts) and all(is_read_only(part) for part in parts)
        return False

    def schemas(self) -> list[JsonDict]:
        """The request's ``tools``: the client's names and input schemas."""
        return build_tool_schemas()

    def run(
        self,
        name: str,
        tool_input: JsonDict,
        *,
        tool_use_id: str,
        cancel: threading.Event | None = None,
    ) -> ToolOutcome:
        """Run one call (checked, asked about, done); never raises for a bad call: the
        outcome is then the error the client would give the model. Safe to call from
        several threads (see :meth:`concurrency_safe`)."""
        if self.concurrency_safe(name, tool_input):
            return self._run(name, tool_input, tool_use_id, cancel)
        with self._serial:
            return self._run(name, tool_input, tool_use_id, cancel)

    def _run(
        self,
        name: str,
        tool_input: JsonDict,
        tool_use_id: str,
        cancel: threading.Event | None,
    ) -> ToolOutcome:
        if name not in INPUT_SCHEMAS:
            return error_outcome(f"Error: No such tool available: {name}", validation=True)
        try:
            validate_input(name, INPUT_SCHEMAS[name], tool_input)
            files = FileCall(
                self.current_dir, self.session, tool_use_id, self.home_dir, self.in_context
            )
            if name == "Edit":
                check_edit(files, tool_input)
            check = self.permissions.check(name, tool_input, cwd=self.current_dir)
            if not check.allowed:
                message = check.message or f"Permission to use {name} has been denied."
                result = REJECTED_RESULT if check.user_rejected else f"Error: {message}"
                return ToolOutcome(message, result, True, check.decision)
            return replace(
                self._call(name, tool_input, tool_use_id, cancel, files),
                permission_decision=check.decision,
            )
        except ToolError as exc:
            return exc.outcome()

    def _call(
        self,
        name: str,
        tool_input: JsonDict,
        tool_use_id: str,
        cancel: threading.Event | None,
        files: FileCall,
    ) -> ToolOutcome:
        try:
            if cancel is not None and cancel.is_set():
                return ToolOutcome(INTERRUPTED_TEXT, f"Error: {INTERRUPTED_TEXT}", is_error=True)
            if name == "Read":
                return run_read(files, tool_input)
            if name == "Write":
                return run_write(files, tool_input)
            if name == "Edit":
                return run_edit(files, tool_input)
            search = SearchCall(self.current_dir, self.ripgrep, self.git, self.home_dir, self.env)
            if name == "Glob":
                return run_glob(search, tool_input)
            if name == "Grep":
                return run_grep(search, tool_input)
            return self._bash(tool_input, tool_use_id, cancel)
        except ToolError as exc:
            return exc.outcome()

    def _bash(
        self, tool_input: JsonDict, tool_use_id: str, cancel: threading.Event | None
    ) -> ToolOutcome:
        command: str = tool_input["command"]
        history = self.session.file_history
        capture = self.capture
        prompt = history.current_prompt if history is not None else None
        if prompt is None:
            capture = None  # no checkpoints (``-p``): nothing to restore to
        before = capture.before() if capture is not None else None
        run = self.shell.run(
            command,
            timeout_ms=timeout_of(tool_input.get("timeout")),
            cancel=cancel,
            prelude=self._session_env_script(),
        )
        self.last_capture = None
        if capture is not None and before is not None:
            self.last_capture = capture.after(
                before, prompt_id=prompt or "", tool_use_id=tool_use_id, command=command
            )
        if history is not None and prompt is not None:
            self.session.note_untracked_changes()
        return bash_outcome(run, command)


def bash_outcome(run: BashRun, command: str) -> ToolOutcome:
    """The client's result for one command's run."""
    if run.interrupted:
        result: dict[str, Any] = {
            "stdout": run.output,
            "stderr": run.note,
            "interrupted": True,
            "isImage": False,
            "noOutputExpected": False,
        }
        return ToolOutcome(INTERRUPTED_TEXT, result, is_error=True)
    if run.exit_code != 0 or run.timed_out:
        parts = [f"Exit code {run.exit_code}", run.output, run.note.lstrip("\n")]
        if run.timed_out:
            parts.append(f"Command timed out after {format_duration(run.timeout_ms)}")
        message = "\n".join(part for part in parts if part)
        return ToolOutcome(message, f"Error: {message}", is_error=True)
    text, result = bash_result(run.output, run.note, no_output_expected=expects_no_output(command))
    return ToolOutcome(text, result)


def record_outcome(session: Session, tool_use_id: str, name: str, outcome: ToolOutcome) -> str:
    """Append ``outcome`` as the client records a tool's result (see the module); the
    record's uuid."""
    result = outcome.tool_use_result
    bash = name == "Bash"
    plain_output = (
        bash
        and not outcome.is_error
        and isinstance(result, dict)
        and not result.get("stderr")
        and not result.get("noOutputExpected")
    )
    if plain_output:  # the one case the client may spill to tool-results/
        return session.append_bash_result(tool_use_id, result["stdout"])
    return session.append_tool_result(
        tool_use_id,
        outcome.content,
        tool_use_result=result,
        is_error=outcome.is_error if bash else (True if outcome.is_error else None),
        sandboxed=False if bash else None,
    )
