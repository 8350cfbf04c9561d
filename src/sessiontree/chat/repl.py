"""The interactive ``sessiontree chat``: a prompt (prompt_toolkit) over an ``AgentHost``.

The interface ``cli/chat.py`` calls (agreed with the engine's owner)::

    from sessiontree.chat import repl

    repl.run(host, env=env, environ=environ)      # env: the CLI's Env (its layout is used)
    repl.run(host, layout=layout, terminal=terminal, open_session=open_session)  # in full
    path = repl.pick_session(layout, cwd, env=environ)  # chat -r, no SESSION: Path or None

``environ`` is the environment the CLI read (``NO_COLOR``, ``EDITOR``/``VISUAL``, ``HOME``);
nothing in ``chat/`` reads the process's. Without it, the one the host's toolbox was
given is used.

- ``run(host, *, layout=None, terminal=None, open_session=None, env=None, environ=None)``:
  the loop, until ``/exit``, Ctrl+D or a second Ctrl+C on an empty input. What ``run``
  returns, the caller closes (``run_session``'s ``with``: ``sessions/<pid>.json`` goes).
- The permission prompt: ``Terminal(env=...).ask_permission(request) -> "once" | "always"
  | "deny"``, the ``ask`` of ``agent.permissions.Permissions``; it may be called from a
  tool's worker thread (the main thread asks). Without a ``terminal``, ``run`` makes one
  and sets it as ``host.ask_permission`` (what ``cli/chat.py``'s ``ask`` calls).
- ``/resume``: ``open_session(path)`` gives the host for another transcript when given;
  otherwise ``host.resume(path)`` switches the host itself.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console

from sessiontree.chat.commands import Command, help_lines, parse_command
from sessiontree.chat.pastes import fold_stored_pastes
from sessiontree.chat.render import TurnView
from sessiontree.chat.rewind_menu import ACTIONS, RewindItem, rewind_items
from sessiontree.errors import Refused, SessionTreeError
from sessiontree.storage.layout import Layout

if TYPE_CHECKING:
    from sessiontree.agent.loop import AgentHost
    from sessiontree.agent.permissions import Decision, PermissionRequest
    from sessiontree.chat.prompt import PromptBox

OpenSession = Callable[[Path], "AgentHost"]

#: Commands the host (``AgentHost`` / ``Session``) records in ``history.jsonl`` itself.
ENGINE_RECORDS = frozenset({"compact", "clear", "fork", "rewind"})

#: How long after an Esc the rest of a key's escape sequence may come (an arrow key is
#: Esc [ A): an Esc with nothing after it by then is the Esc key.
ESCAPE_WAIT_S = 0.03

#: How many records of a resumed conversation are drawn again at most (its end).
REPLAY_RECORDS = 400

#: The permission answers, in the order offered.
PERMISSION_CHOICES: tuple[tuple[Decision, str], ...] = (
    ("once", "Yes"),
    ("always", "Yes, and don't ask again for {rule} in this project"),
    ("deny", "No, and tell the model what to do differently"),
)


def parse_permission_answer(answer: str) -> Decision | None:
    """``1``/``y`` once, ``2``/``a`` always, ``3``/``n`` (or nothing) deny; None: not an answer."""
    text = answer.strip().lower()
    if text in ("1", "y", "yes"):
        return "once"
    if text in ("2", "a", "always"):
        return "always"
    if text in ("", "3", "n", "no", "d", "deny"):
        return "deny"
    return None


@dataclass
class _Ask:
    request: PermissionRequest
    answer: queue.Queue[Decision]


class Terminal:
    """The terminal face: the console (``NO_COLOR`` respected), ``$EDITOR``, and the
    permission prompt. Made before the host: :meth:`ask_permission` is the ``ask`` of
    ``Permissions``."""

    def __init__(
        self,
        *,
        env: Mapping[str, str],
        console: Console | None = None,
        input_line: Callable[[str], str] = input,
        choose: Callable[..., int | None] | None = None,
    ) -> None:
        self.env = dict(env)
        #: Shows a list and gives the index picked (None: Esc, Ctrl+C): the permission
        #: question's menu. By default ``menu.choose`` on a terminal; without one (or with
        #: an ``input_line`` given), the numbered question read with ``input_line``.
        self._choose = choose
        if choose is None and input_line is input and _is_tty(sys.stdin) and _is_tty(sys.stdout):
            from sessiontree.chat import menu

            self._choose = menu.choose
        #: Set when a permission question was cancelled (Esc, Ctrl+C in the menu): the
        #: turn stops, as after Ctrl+C.
        self.cancelled = False
        self.no_color = bool(self.env.get("NO_COLOR"))
        # The width is the terminal's as it is now: a COLUMNS exported once is stale
        # after the first resize.
        sized = {k: v for k, v in self.env.items() if k not in ("COLUMNS", "LINES")}
        self.console = console or Console(
            no_color=self.no_color, highlight=False, soft_wrap=True, emoji=False, _environ=sized
        )
        self.view = TurnView(self.console)
        self._input_line = input_line
        self._asks: queue.Queue[_Ask] = queue.Queue()
        self._asking = False
        self._saved_tty: tuple[int, list[Any], list[Any]] | None = None
        #: Keys typed while a turn ran (read to see an Esc), for the next prompt.
        self.typed_ahead = ""

    # -- permissions ---------------------------------------------------------------

    def ask_permission(self, request: PermissionRequest) -> Decision:
        """Ask the user about one tool call. From a turn's worker thread, the question
        goes to the main thread (which owns the keyboard) and this waits for its answer."""
        if threading.current_thread() is threading.main_thread():
            return self._ask_here(request)
        ask = _Ask(request, queue.Queue(maxsize=1))
        self._asks.put(ask)
        return ask.answer.get()

    def _ask_here(self, request: PermissionRequest) -> Decision:
        view = self.view
        view.finish()
        summary = getattr(request, "summary", "") or getattr(request, "tool", "a tool")
        rule = getattr(request, "rule", "") or getattr(request, "tool", "this")
        if self._choose is not None:
            return self._ask_menu(f"Allow {summary}?", rule)
        view.say(f"Allow {summary}?", style="bold")
        for number, (_decision, label) in enumerate(PERMISSION_CHOICES, 1):
            view.say(f"  {number}. {label.format(rule=rule)}")
        self._asking = True
        loud = self._loud()
        try:
            while True:
                try:
                    answer = self._input_line("choose 1-3 (Enter: no) > ")
                except (EOFError, KeyboardInterrupt):
                    return "deny"
                decision = parse_permission_answer(answer)
                if decision is not None:
                    return decision
        finally:
            self._asking = False
            loud()

    def _ask_menu(self, question: str, rule: str) -> Decision:
        """The question as a menu (↑↓ and Enter, or a number; "Yes" selected first, as
        the client's); Esc or Ctrl+C: no, and the turn stops (:attr:`cancelled`)."""
        assert self._choose is not None
        labels = [label.format(rule=rule) for _decision, label in PERMISSION_CHOICES]
        self._asking = True
        loud = self._loud()
        try:
            picked = self._choose(
                question,
                labels,
                no_color=self.no_color,
                footer="↑↓ move · Enter or 1-3 chooses · Esc: no, and stop",
            )
        finally:
            self._asking = False
            loud()
        if picked is None:
            self.cancelled = True
            self.view.say(f"{question} {PERMISSION_CHOICES[-1][1]}", style="dim")
            return "deny"
        decision, label = PERMISSION_CHOICES[picked]
        self.view.say(f"{question} {label.format(rule=rule)}", style="dim")
        return decision

    @contextlib.contextmanager
    def quiet_keys(self) -> Iterator[None]:
        """While a turn runs: keys typed are neither echoed over its output nor lost (they
        wait for the next prompt: :meth:`watch_keys`); Ctrl+C and Esc interrupt. Nothing
        when stdin is no tty."""
        try:
            import termios

            fd = sys.stdin.fileno()
            saved = termios.tcgetattr(fd) if os.isatty(fd) else None
        except (ImportError, OSError, ValueError):
            saved = None
        if saved is None:
            yield
            return
        quiet = list(saved)
        quiet[3] &= ~(termios.ECHO | termios.ICANON)
        self._saved_tty = (fd, saved, quiet)
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        try:
            yield
        finally:
            self._saved_tty = None
            termios.tcsetattr(fd, termios.TCSANOW, saved)

    def _loud(self) -> Callable[[], None]:
        """The terminal as it was (echo, lines) for a question asked during a turn; the
        function returned makes it quiet again."""
        saved = self._saved_tty
        if saved is None:
            return lambda: None
        import termios

        fd, loud, quiet = saved
        termios.tcsetattr(fd, termios.TCSANOW, loud)
        return lambda: termios.tcsetattr(fd, termios.TCSANOW, quiet)

    def watch_keys(self, timeout: float) -> bool:
        """While a turn runs (the keys quiet): wait up to ``timeout`` for keys; True when
        one is a lone Esc (the client's interrupt). The other keys are kept, in order,
        for the next prompt (:attr:`typed_ahead`). Without a tty: a plain wait."""
        saved = self._saved_tty
        if saved is None:
            time.sleep(timeout)
            return False
        fd = saved[0]
        data = _read_ready(fd, timeout)
        escape = False
        while data:
            at = data.find(b"\x1b")
            if at < 0:
                self._keep(data)
                break
            self._keep(data[:at])
            rest = data[at + 1 :]
            if not rest:  # an Esc alone, or the start of a key's sequence still coming
                rest = _read_ready(fd, ESCAPE_WAIT_S)
                if not rest:
                    escape = True
                    break
            if rest[:1] in (b"[", b"O") or rest[:1] == b"\x1b":
                self._keep(b"\x1b" + rest)  # a key's escape sequence (an arrow…): kept
                break
            escape = True  # Esc, then other keys typed after it
            data = rest
        return escape

    def _keep(self, data: bytes) -> None:
        if data:
            self.typed_ahead += data.decode("utf-8", errors="replace")

    def take_typed_ahead(self) -> str:
        typed, self.typed_ahead = self.typed_ahead, ""
        return typed

    def serve_asks(self, timeout: float, *, on_cancel: Callable[[], None] | None = None) -> None:
        """Answer the questions worker threads asked (waits up to ``timeout`` for one);
        ``on_cancel`` runs before the answer goes back when the question was cancelled."""
        try:
            ask = self._asks.get(timeout=timeout)
        except queue.Empty:
            return
        self.cancelled = False
        answer = self._ask_here(ask.request)
        if self.cancelled and on_cancel is not None:
            on_cancel()
        ask.answer.put(answer)

    # -- the editor ----------------------------------------------------------------

    def edit_file(self, path: Path) -> bool:
        """Open ``path`` in ``$VISUAL`` / ``$EDITOR``; False when none is set."""
        editor = self.env.get("VISUAL") or self.env.get("EDITOR")
        if not editor:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([*shlex.split(editor), str(path)], check=False)
        return True


class Chat:
    """The loop: read an entry, run it, draw what happened, until exit."""

    def __init__(
        self,
        host: AgentHost,
        *,
        layout: Layout,
        terminal: Terminal,
        open_session: OpenSession | None = None,
        box: PromptBox | None = None,
    ) -> None:
        self.host = host
        self.layout = layout
        self.terminal = terminal
        self.view = terminal.view
        self.open_session = open_session
        self._box = box
        self.prefill = ""

    @property
    def cwd(self) -> str:
        return self.host.session.env.cwd

    @property
    def box(self) -> PromptBox:
        if self._box is None:
            from sessiontree.chat.prompt import PromptBox
            from sessiontree.chat.recall import load_recall

            self._box = PromptBox(
                load_recall(self.layout, self.cwd), no_color=self.terminal.no_color
            )
        return self._box

    def say(self, text: str, style: str = "") -> None:
        self.view.say(text, style)

    def error(self, text: str) -> None:
        self.view.say(text, "bold red")

    # -- the loop ------------------------------------------------------------------

    def banner(self) -> None:
        session = self.host.session
        self.say(f"sessiontree chat · {self.host.model} · session {session.session_id}", "bold")
        self.say(f"{self.cwd} · /help for commands, Esc Esc to rewind, Ctrl+D to exit", "dim")

    def run(self) -> None:
        self.banner()
        self.replay()
        while self.step():
            pass
        self.say(
            f"Resume this session with: sessiontree chat -r {self.host.session.session_id}", "dim"
        )

    def step(self) -> bool:
        """Read one entry and run it; False when the chat ends. Ctrl+C while a command
        (not a turn) runs stops waiting for it and comes back to the prompt."""
        default, self.prefill = self.prefill, ""
        typed = self.terminal.take_typed_ahead()
        entry = (
            self.box.read(default=default, typed=typed) if typed else self.box.read(default=default)
        )
        if entry.kind == "exit":
            return False
        try:
            if entry.kind == "rewind":
                self.rewind_menu()
                return True
            text = entry.text
            if not text.strip():
                return True
            command = parse_command(text)
            if command is None:
                self.turn(text, entry.pastes or {})
                return True
            return self.command(command, text)
        except KeyboardInterrupt:
            self.view.finish()
            self.error("Interrupted.")
            return True

    def turn(self, text: str, pastes: Mapping[int, str]) -> None:
        """One turn in a worker thread; the main thread answers permission questions
        and turns Ctrl+C (SIGINT) or Esc into the cancel event: the same interruption,
        recorded the same way, as the client's Esc."""
        from sessiontree.agent.loop import TurnEvents

        view = self.view
        events = TurnEvents(
            on_text=view.on_text,
            on_tool_call=view.on_tool_call,
            on_tool_result=view.on_tool_result,
            on_notice=view.on_notice,
        )
        cancel = threading.Event()
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                outcome["result"] = self.host.turn(
                    text, pastes=dict(pastes) or None, events=events, cancel=cancel
                )
            except BaseException as exc:  # shown by the main thread
                outcome["error"] = exc

        def on_sigint(signum: int, frame: FrameType | None) -> None:
            if not cancel.is_set():
                cancel.set()
                view.on_notice("Interrupting…")
            if self.terminal._asking:
                raise KeyboardInterrupt

        def stop() -> None:  # a permission question cancelled: as Ctrl+C
            if not cancel.is_set():
                cancel.set()
                view.on_notice("Interrupting…")

        worker = threading.Thread(target=work, name="sessiontree-turn", daemon=True)
        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            with self.terminal.quiet_keys():
                worker.start()
                while worker.is_alive():
                    self.terminal.serve_asks(0, on_cancel=stop)
                    if self.terminal.watch_keys(0.05) and not cancel.is_set():
                        cancel.set()  # Esc: as Ctrl+C
                        view.on_notice("Interrupting…")
        finally:
            signal.signal(signal.SIGINT, previous)
        view.finish()
        error = outcome.get("error")
        if error is not None:
            self.show_error(error)
            return
        result = outcome.get("result")
        if result is not None and getattr(result, "interrupted", False):
            self.say("  ⎿  Interrupted · what should the model do instead?", "red")

    def show_error(self, error: BaseException) -> None:
        if isinstance(error, SessionTreeError | OSError | ValueError):
            self.error(f"error: {error}")
        elif isinstance(error, NotImplementedError):
            self.error("error: the agent host cannot do that yet")
        else:
            self.error(f"error: {type(error).__name__}: {error}")

    # -- slash commands ------------------------------------------------------------

    def _record_command(self, text: str) -> None:
        from sessiontree.history.pastes import record_prompt_history

        with contextlib.suppress(OSError):
            record_prompt_history(
                self.layout,
                display=text.strip(),
                pastes={},
                project=self.cwd,
                session_id=self.host.session.session_id,
            )
        self.box.remember(text.strip())

    def _provider_help(self) -> tuple[str, ...]:
        """What ``/help`` adds for the provider: the offline one's directives."""
        if self.host.provider.name != "offline":
            return ()
        from sessiontree.agent.offline import DIRECTIVE_HELP

        return DIRECTIVE_HELP

    def command(self, command: Command, text: str) -> bool:
        """Run a slash command; False when it ends the chat."""
        problem = command.problem
        if problem is not None:
            self.error(problem)
            return True
        name = command.name
        if name in ENGINE_RECORDS:  # the host writes these to history.jsonl itself
            self.box.remember(text.strip())
        else:
            self._record_command(text)
        try:
            if name == "exit":
                return False
            if name == "help":
                for line in help_lines(self._provider_help()):
                    self.say(line)
            elif name == "rewind":
                self.rewind_menu()
            elif name == "compact":
                self.say("Compacting the conversation…", "dim")
                self.host.compact(command.argument or None)
                session_id = self.host.session.session_id
                self.say(
                    "Compacted. The summary is the context from here on; nothing is deleted"
                    f" (`sessiontree show {session_id}` shows the summary, with"
                    " `--all-branches` what came before it).",
                    "green",
                )
            elif name == "clear":
                self.host.clear()
                self.say(
                    f"New session {self.host.session.session_id}; the old one can be resumed.",
                    "green",
                )
            elif name == "fork":
                old = self.host.session.session_id
                self.host.fork()
                self.say(
                    f"Forked: now in {self.host.session.session_id} (the original,"
                    f" {old}, stays as it was).",
                    "green",
                )
            elif name == "rename":
                self.host.rename(command.argument)
                self.say(f"Renamed to {command.argument}", "green")
            elif name == "cost":
                self.cost()
            elif name == "memory":
                self.memory()
            elif name == "resume":
                self.resume(command.argument)
        except Exception as exc:  # a command that fails leaves the chat running
            self.show_error(exc)
        return True

    def cost(self) -> None:
        usage = self.host.cost()
        cost = getattr(usage, "cost", None)
        self.say(f"Total cost:            {'unknown' if cost is None else f'${cost:.4f}'}")
        self.say(f"Responses:             {getattr(usage, 'responses', 0)}")
        self.say(f"Input tokens:          {getattr(usage, 'input_tokens', 0)}")
        self.say(f"Output tokens:         {getattr(usage, 'output_tokens', 0)}")
        self.say(f"Cache write tokens:    {getattr(usage, 'cache_creation_input_tokens', 0)}")
        self.say(f"Cache read tokens:     {getattr(usage, 'cache_read_input_tokens', 0)}")

    def memory_files(self) -> list[tuple[str, Path]]:
        """The memory files ``/memory`` offers to edit, as the client's menu does: the
        project's ``CLAUDE.md``, its ``CLAUDE.local.md``, the user's, and the index of the
        project's auto-memory folder (each whether it exists yet or not)."""
        from sessiontree.agent.memory import memory_folder

        cwd = Path(self.cwd)
        folder = getattr(getattr(self.host, "memory", None), "index", None)
        if not isinstance(folder, Path):
            folder = memory_folder(self.layout.root, cwd)
        return [
            ("Project memory", cwd / "CLAUDE.md"),
            ("Local project memory (not checked in)", cwd / "CLAUDE.local.md"),
            ("User memory", self.layout.root / "CLAUDE.md"),
            ("Auto-memory index", folder / "MEMORY.md"),
        ]

    def memory(self) -> None:
        memory = getattr(self.host, "memory", None)
        files = list(getattr(memory, "files", None) or [])
        if files:
            self.say("Memory loaded at start:", "bold")
            for item in files:
                kind = getattr(item, "kind", "")
                self.say(f"  {kind:<8} {getattr(item, 'path', item)}")
        else:
            self.say("No memory files were loaded at start.")
        if not (self.terminal.env.get("VISUAL") or self.terminal.env.get("EDITOR")):
            self.say("Set $EDITOR to edit a memory file from here.", "dim")
            return
        from sessiontree.chat.menu import choose

        targets = self.memory_files()
        width = max(len(label) for label, _ in targets)
        index = choose(
            "Edit which memory file?",
            [
                f"{label:<{width}}  {path}{'' if path.is_file() else ' (new)'}"
                for label, path in targets
            ],
            no_color=self.terminal.no_color,
        )
        if index is None:
            self.say("Nothing edited.", "dim")
            return
        target = targets[index][1]
        self.terminal.edit_file(target)
        from sessiontree.agent.memory import load_memory

        home = self.terminal.env.get("HOME")
        if home:
            self.host.memory = load_memory(
                cwd=Path(self.cwd), home=Path(home), config_dir=self.layout.root
            )
            self.say(f"Edited {target}; the memory is read again from it now.", "green")
        else:
            self.say(f"Edited {target}; it is read again at the next start.", "green")

    def resume(self, ref: str) -> None:
        current = self.host.session.session_id
        if ref:
            from sessiontree.catalog.resolve import resume_session

            path = resume_session(self.layout, ref)
        else:
            from sessiontree.chat.picker import pick_session

            picked = pick_session(self.layout, cwd=self.cwd, env=self.terminal.env, exclude=current)
            if picked is None:
                self.say("Nothing resumed.", "dim")
                return
            path = picked
        if self.open_session is not None:
            self.host = self.open_session(path)
        else:
            self.host_goes_on_in(path)
        session = self.host.session
        self.say(f"Resumed {session.session_id} ({path.name}).", "green")
        self.replay()

    def replay(self) -> None:
        """The conversation a resumed session goes on from, drawn as its turns were: its
        last :data:`REPLAY_RECORDS` records on the path the next request sends (only those
        are decoded: a transcript of GBs comes up as fast), an earlier part said in a line."""
        from sessiontree.agent.request import session_path
        from sessiontree.chat.render import conversation_lines
        from sessiontree.conversation.transcript import Transcript

        session = self.host.session
        try:
            transcript = Transcript.open(session.path)
            path = session_path(transcript, session.tip)
            shown = path[-REPLAY_RECORDS:]
            lines = conversation_lines(
                transcript.records(shown), limit=max(20, self.terminal.console.width - 6)
            )
        except (OSError, SessionTreeError):
            return
        if not lines:
            return
        if len(shown) < len(path):
            self.say(f"… {len(path) - len(shown)} earlier records not shown", "dim")
        self.view.replay(lines)

    def host_goes_on_in(self, path: Path) -> None:
        """Without ``open_session``: the host writes the transcript at ``path`` from now
        on (``AgentHost.resume``), as ``/clear`` and ``/fork`` switch it."""
        self.host.resume(path)

    # -- rewind --------------------------------------------------------------------

    def rewind_items(self) -> list[RewindItem]:
        session = self.host.session
        try:
            from sessiontree.conversation.transcript import Transcript

            transcript = Transcript.open(session.path)
        except (OSError, SessionTreeError):
            return []
        return rewind_items(self.layout, transcript, session.tip, project=Path(self.cwd))

    def rewind_menu(self) -> None:
        from sessiontree.chat.menu import choose

        items = self.rewind_items()
        if not items:
            self.say("Nothing to rewind to: no prompt yet.", "dim")
            return
        index = choose(
            "Rewind: go back to before which prompt?",
            [item.label(max(20, self.terminal.console.width - 30)) for item in items],
            selected=len(items) - 1,
            no_color=self.terminal.no_color,
        )
        if index is None:
            return
        item = items[index]
        actions = item.actions()
        picked = choose(
            f"Prompt {item.number}: {item.label(60)}",
            [ACTIONS[a] for a in actions],
            no_color=self.terminal.no_color,
        )
        if picked is None or actions[picked] == "cancel":
            return
        action = actions[picked]
        try:
            if action in ("summarize_from", "summarize_up_to"):
                direction: Literal["from", "up_to"] = (
                    "from" if action == "summarize_from" else "up_to"
                )
                self.say("Summarizing…", "dim")
                self.host.summarize(item.uuid, direction=direction)
                where = "from" if direction == "from" else "up to"
                self.say(f"Summarized {where} prompt {item.number}.", "green")
                return
            conversation = action in ("both", "conversation")
            code = action in ("both", "code")
            result = self.host.rewind(item.uuid, conversation=conversation, code=code)
        except Exception as exc:
            self.show_error(exc)
            return
        changed = tuple(getattr(result, "files_changed", ()) or ())
        if code:
            plural = "" if len(changed) == 1 else "s"
            self.say(f"Restored code: {len(changed)} file{plural} put back.", "green")
            for path in changed:
                self.say(f"  {path}", "dim")
        if conversation:
            self.say(f"Rewound the conversation to before prompt {item.number}.", "green")
            self.put_back(getattr(result, "prompt_text", "") or item.text)

    def put_back(self, text: str) -> None:
        """A rewound prompt back in the input for editing: its pastes as placeholders
        again (kept in the paste book, so they are sent again as they were)."""
        book = self.box.pastes
        display, pastes = fold_stored_pastes(text, first_number=book.next_number())
        book.texts.update(pastes)
        self.prefill = display


def run(
    host: AgentHost,
    *,
    layout: Layout | None = None,
    terminal: Terminal | None = None,
    open_session: OpenSession | None = None,
    env: Any = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """The interactive chat over ``host`` until the user leaves (see the module's doc).

    ``env``: the CLI's ``Env`` (its ``layout`` is used when ``layout`` is not given), as
    ``cli/chat.py`` calls it. Without a ``terminal`` one is made over ``environ`` (the
    environment the CLI read: ``NO_COLOR``, ``EDITOR``, ``HOME``; by default the one the
    host's tools were given) and offered to the host as ``host.ask_permission`` (what
    ``cli/chat.py``'s ``ask`` calls). Nothing here reads the process environment."""
    if layout is None:
        layout = getattr(env, "layout", None)
    if layout is None:
        raise TypeError("run() needs layout= (or the CLI's env=)")
    if not _is_tty(sys.stdin):
        raise Refused(
            "sessiontree chat needs a terminal to type into; to script it, use chat -p PROMPT"
        )
    if terminal is None:
        if environ is None:
            environ = getattr(getattr(host, "toolbox", None), "env", None)
        known = dict(environ or {})
        if getattr(env, "color", True) is False and "NO_COLOR" not in known:
            known["NO_COLOR"] = "1"  # the CLI found no colour wanted (no tty, NO_COLOR)
        terminal = Terminal(env=known)
        if getattr(host, "ask_permission", None) is None:
            host.ask_permission = terminal.ask_permission
    chat = Chat(host, layout=layout, terminal=terminal, open_session=open_session)
    chat.run()


def _read_ready(fd: int, timeout: float) -> bytes:
    """What can be read from ``fd`` within ``timeout`` (b"" when nothing came)."""
    import select

    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        return os.read(fd, 4096) if ready else b""
    except (OSError, ValueError):
        return b""


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # closed, or no file at all
        return False


def pick_session(
    layout: Layout, cwd: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> Path | None:
    """``chat -r`` without a SESSION: :func:`sessiontree.chat.picker.pick_session` (here
    too, as ``cli/chat.py`` calls it). ``env``: for ``NO_COLOR``."""
    from sessiontree.chat.picker import pick_session as pick

    return pick(layout, cwd=os.fspath(cwd), env=env or {})
