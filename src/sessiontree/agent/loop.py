"""The agent host: a turn from a prompt to its end, and the session's commands, on a
:class:`~sessiontree.session.Session`.

A turn appends the prompt, then asks the provider for a response (the request is the
context sessiontree computes for the session: :mod:`sessiontree.agent.request`), runs the
tool calls it makes through the toolbox, records each result as the client does, and asks
again until the model stops calling tools; the turn end is then written and fsynced (a
killed host loses at most the turn in flight).

* A Bash output over 30,000 bytes is saved to ``tool-results/`` beside the transcript and
  the model gets the ``<persisted-output>`` preview, as the client does.
* Parallel calls (several ``tool_use`` blocks in one response): read-only tools next to
  each other run at once; each result hangs on its own call and is written in the order
  they finish (:meth:`Session.append_tool_result`); the others run one after another.
* Ctrl+C (the ``cancel`` event) is recorded as client 2.1.328 records an interruption
  (seen driving it in tmux): while the response streams, what had streamed is kept as a
  response with no stop reason and a user record ``[Request interrupted by user]``
  follows; while tools run, the command stopped and each call not yet run get the
  rejection result (:data:`REJECTED`, ``toolUseResult`` "User rejected tool use") and
  ``[Request interrupted by user for tool use]`` follows. Then the ``last-prompt``
  bookmark, no turn end; fsynced, and the turn is over.
* Near the model's context limit (the last response's usage), the conversation is
  compacted before the next prompt (a summary asked of the provider).
* After the first exchange of an untitled session the provider is asked for a short
  title (``ai-title``).

The commands a face offers (``/compact``, ``/rewind``'s summaries, ``/clear``, ``/fork``,
``/rename``, ``/cost``) are here too, over :class:`Session` and the library below it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from sessiontree.agent.provider import (
    Interrupted,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
)
from sessiontree.agent.request import (
    Environment,
    build_request,
    build_system,
    context_tokens,
    needs_compaction,
    session_context,
    session_path,
)
from sessiontree.catalog.usage import cost_of, default_prices, read_responses
from sessiontree.checkpoints.capture import FileHistory
from sessiontree.checkpoints.code import plan_restore_code, restore_code
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.conversation.spill import spill_tool_output
from sessiontree.conversation.summarize import tools_used
from sessiontree.errors import Refused, SessionTreeError
from sessiontree.model.builders import (
    build_attachment,
    build_last_prompt,
    build_user_text,
    format_timestamp,
)
from sessiontree.session.host import RunningSession
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout, subagents_dir

JsonDict = dict[str, Any]

#: What the client records when the user stops a response as it streams.
INTERRUPTED = "[Request interrupted by user]"
#: ... and when the user stops while tools run.
INTERRUPTED_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
#: The result of each call the user stopped (client 2.1.328), and its ``toolUseResult``.
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. "
    "if it was a file edit, the new_string was NOT written to the file). STOP what you are "
    "doing and wait for the user to tell you how to proceed."
)
REJECTED_RESULT = "User rejected tool use"

#: Tools Ctrl+C stops while they run (a command is killed); the others finish, and their
#: result is kept.
STOPPABLE_TOOLS = frozenset({"Bash"})
#: Tools that change nothing: next to each other in one response, they run at once.
READ_ONLY_TOOLS = frozenset({"Read", "Glob", "Grep"})

COMPACT_SYSTEM = "You are a helpful AI assistant tasked with summarizing conversations."
COMPACT_PROMPT = """\
CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.

Your task is to create a detailed summary of the conversation so far, paying close \
attention to the user's explicit requests and your previous actions. The summary should \
capture the technical details, code patterns and decisions needed to continue the work \
without losing context.

First think in <analysis> tags, then give the summary in <summary> tags with these \
sections: 1. Primary Request and Intent, 2. Key Technical Concepts, 3. Files and Code \
Sections, 4. Errors and fixes, 5. Problem Solving, 6. All user messages, 7. Pending Tasks, \
8. Current Work, 9. Optional Next Step."""
SUMMARIZE_FROM = (
    "Summarize only the part of the conversation that starts with the user message "
    "beginning {start!r}; what came before it stays as it is."
)
SUMMARIZE_UP_TO = (
    "Summarize the conversation above, which ends just before the user message "
    "beginning {start!r}; what follows it stays as it is."
)
TITLE_SYSTEM = (
    "Generate a concise, sentence-case title (3-7 words) that captures the main topic or "
    "goal of this coding session, from the user's first message. Respond with JSON only: "
    '{"title": "..."}'
)

_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S)
_ANALYSIS = re.compile(r"<analysis>.*?</analysis>", re.S)


class ToolOutcomeLike(Protocol):
    """What a tool call gave (``agent.tools.ToolOutcome``)."""

    @property
    def content(self) -> str | list[JsonDict]: ...
    @property
    def tool_use_result(self) -> Any: ...
    @property
    def is_error(self) -> bool: ...


class ToolboxLike(Protocol):
    """The tools a turn runs (``agent.tools.Toolbox``). Its ``session`` is the one its
    Write and Edit checkpoint through; the host sets it when ``/clear`` or ``/fork``
    changes the session."""

    session: Session

    def schemas(self) -> list[JsonDict]: ...

    def run(
        self,
        name: str,
        tool_input: JsonDict,
        *,
        tool_use_id: str,
        cancel: threading.Event | None = None,
    ) -> ToolOutcomeLike: ...


class MemoryLike(Protocol):
    """The project's memory (``agent.memory.Memory``)."""

    def reminder(self) -> str | None: ...


@dataclass
class TurnEvents:
    """Callbacks a face draws with; all optional."""

    on_text: Callable[[str], None] | None = None
    on_tool_call: Callable[[str, JsonDict], None] | None = None
    on_tool_result: Callable[[str, ToolOutcomeLike], None] | None = None
    on_notice: Callable[[str], None] | None = None


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended: its prompt, the final answer's text, whether it was interrupted,
    how many responses and tool calls it took, whether it compacted first."""

    prompt_uuid: str
    text: str
    interrupted: bool = False
    responses: int = 0
    tool_calls: int = 0
    compacted: bool = False


@dataclass(frozen=True)
class RewindResult:
    """What a rewind did: the prompt's text (back in the input for editing), whether the
    conversation and the code were rewound, and the files the code restore changed."""

    prompt_text: str
    conversation: bool
    code: bool
    files_changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class RewindPoint:
    """A prompt ``/rewind`` lists: its uuid and text, and how many files its turn
    changed (what "Restore code" there would put back of that turn's work)."""

    prompt_uuid: str
    text: str
    files_changed: int
    has_checkpoint: bool


@dataclass(frozen=True)
class Usage:
    """Tokens and cost of this session's API responses (each counted once)."""

    responses: int
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    #: USD; None when a model's price is unknown.
    cost: float | None


@dataclass(frozen=True)
class _Simple:
    """A tool outcome the host makes itself (an error, an interruption)."""

    content: str | list[JsonDict]
    tool_use_result: Any
    is_error: bool = True


def _notice(events: TurnEvents, text: str) -> None:
    if events.on_notice is not None:
        events.on_notice(text)


def _summary_text(answer: str) -> str:
    """The summary in a compaction answer (its ``<summary>``, the analysis left out)."""
    found = _SUMMARY.search(answer)
    if found is not None:
        return found.group(1).strip()
    return _ANALYSIS.sub("", answer).strip()


def _with_user_text(messages: list[JsonDict], text: str) -> list[JsonDict]:
    """``messages`` and a user text at the end (joined to a user message that ends them:
    the API takes no two user messages in a row)."""
    block = {"type": "text", "text": text}
    if messages and messages[-1].get("role") == "user":
        last = messages[-1]
        content = last.get("content")
        rest = [{"type": "text", "text": content}] if isinstance(content, str) else content
        return [*messages[:-1], {**last, "content": [*(rest or []), block]}]
    return [*messages, {"role": "user", "content": [block]}]


def parse_title(answer: str) -> str | None:
    """The title in a title answer: JSON ``{"title": ...}`` or plain text; None if empty."""
    text = answer.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("title"), str):
        text = data["title"].strip()
    text = text.strip().strip('"').splitlines()[0].strip() if text.strip() else ""
    return text[:120] or None


class AgentHost:
    """Runs turns and the session's commands; :attr:`session` is the one being written
    (``/clear`` and ``/fork`` replace it).

    ``running``: the session's entry in ``sessions/`` (:func:`run_session`), marked busy
    during a turn. ``environment``: what the system prompt says about the machine (by
    default the session's cwd, this platform, the session clock's date). ``title``: ask
    for an AI title after the first exchange of an untitled session."""

    def __init__(
        self,
        session: Session,
        provider: Provider,
        toolbox: ToolboxLike,
        *,
        model: str,
        layout: Layout,
        memory: MemoryLike | None = None,
        running: RunningSession | None = None,
        environment: Environment | None = None,
        title: bool = True,
        max_tokens: int = 32000,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.session = session
        self.provider = provider
        self.toolbox = toolbox
        self.model = model
        self.layout = layout
        self.memory = memory
        self.running = running
        self.max_tokens = max_tokens
        self.monotonic = monotonic
        self.environment = environment or Environment(
            cwd=session.env.cwd,
            platform=sys.platform,
            today=session.clock().date().isoformat(),
        )
        self.want_title = title
        #: How the face answers a permission prompt (``Permissions``' ``ask`` can call
        #: it); None: what needs asking is denied.
        self.ask_permission: Callable[[Any], str] | None = None
        #: Context to record before the next prompt (SessionStart hooks' output):
        #: ``(attachment, rendered system text)``, see :meth:`add_start_context`.
        self._start_context: list[tuple[JsonDict, str]] = []
        self._titled, self._last_usage = self._read_state()

    # -- state read back from the transcript --------------------------------------------

    def _read_state(self) -> tuple[bool, JsonDict | None]:
        """Whether the session has a title, and the usage of its last response."""
        if not self.session.path.exists():
            return False, None
        transcript = self.session.transcript()
        titled = bool(transcript.metadata("ai-title", "custom-title"))
        usage = None
        tip = self.session.tip
        for record in reversed(transcript.records(transcript.tree.path_to(tip)) if tip else []):
            if record.type == "compact_boundary" or record.subtype == "compact_boundary":
                break
            found = record.message.get("usage") if record.type == "assistant" else None
            if isinstance(found, dict):
                usage = found
                break
        return titled, usage

    def _set_session(self, session: Session) -> None:
        self.session = session
        self.toolbox.session = session
        self._titled, self._last_usage = self._read_state()

    def add_start_context(self, attachments: Sequence[tuple[JsonDict, str]]) -> None:
        """Attachments to record before the next prompt, as the client records what its
        SessionStart hooks printed: the first records of a new session (the prompt hangs
        on them), or after the end of a resumed one; sent as system text."""
        self._start_context.extend(attachments)

    def _write_start_context(self) -> None:
        session = self.session
        for attachment, text in self._start_context:
            uuid = session.new_id()
            record = build_attachment(
                session.env,
                uuid=uuid,
                parent_uuid=session.tip,  # type: ignore[arg-type]  # None: the first record
                attachment=attachment,
                timestamp=format_timestamp(session.clock()),
                rendered=[text],
                rendered_role="system",
            )
            session._append([record])
            session.tip = uuid
        self._start_context.clear()

    # -- a turn ---------------------------------------------------------------------------

    def system(self) -> list[JsonDict]:
        """The system prompt blocks a turn sends."""
        return build_system(self.environment, model=self.model)

    def request(self) -> ModelRequest:
        """The request for the next response of the session as it is written now."""
        return build_request(
            self.session.transcript(),
            self.session.tip,
            model=self.model,
            system=self.system(),
            tools=self.toolbox.schemas(),
            reminder=self.memory.reminder() if self.memory is not None else None,
            max_tokens=self.max_tokens,
        )

    def turn(
        self,
        prompt: str,
        *,
        pastes: Mapping[int, str] | None = None,
        events: TurnEvents | None = None,
        cancel: threading.Event | None = None,
    ) -> TurnResult:
        """One prompt to the end of its turn. Raises :class:`ProviderError` when the model
        fails for good (the prompt stays written; the next turn sends it again with its
        own)."""
        events = events or TurnEvents()
        if self.running is not None:
            self.running.busy()
        try:
            return self._turn(prompt, pastes, events, cancel)
        finally:
            if self.running is not None:
                self.running.idle()

    def _turn(
        self,
        prompt: str,
        pastes: Mapping[int, str] | None,
        events: TurnEvents,
        cancel: threading.Event | None,
    ) -> TurnResult:
        started = self.monotonic()
        compacted = False
        if self.session.tip is not None and needs_compaction(self._last_usage, model=self.model):
            _notice(events, "the context is near the model's limit: compacting first")
            self._compact(None, typed=False, cancel=cancel)
            compacted = True
        self._write_start_context()
        prompt_uuid = self.session.append_prompt(prompt, pastes=pastes)
        responses = calls_made = 0
        answer = ""
        while True:
            try:
                response = self.provider.respond(
                    self.request(), on_text=events.on_text, cancel=cancel
                )
            except Interrupted as stopped:
                self._keep_partial(stopped)
                self._interrupted(INTERRUPTED)
                return TurnResult(prompt_uuid, answer, True, responses, calls_made, compacted)
            responses += 1
            self._last_usage = response.usage
            if response.content:
                self.session.append_response(
                    response.content,
                    model=response.model,
                    stop_reason=response.stop_reason,
                    usage=response.usage,
                    message_id=response.message_id,
                )
            answer = response.text
            calls = response.tool_calls
            if not calls:
                break
            calls_made += len(calls)
            if self._run_calls(calls, events, cancel):
                self._interrupted(INTERRUPTED_FOR_TOOL_USE)
                return TurnResult(prompt_uuid, answer, True, responses, calls_made, compacted)
        if self.session.tip != prompt_uuid or responses:
            self._end_turn(started)
        if self.want_title and not self._titled:
            self._title(events)
        return TurnResult(prompt_uuid, answer, False, responses, calls_made, compacted)

    def _end_turn(self, started: float) -> None:
        tip = self.session.tip
        assert tip is not None
        path = self.session.transcript().tree.path_to(tip)
        self.session.end_turn(
            duration_ms=int((self.monotonic() - started) * 1000), message_count=len(path) + 1
        )

    # -- tool calls -----------------------------------------------------------------------

    def _run_calls(
        self, calls: list[JsonDict], events: TurnEvents, cancel: threading.Event | None
    ) -> bool:
        """Run one response's calls and record their results; True when ``cancel`` stopped
        them (the calls left are answered as interrupted)."""
        at = 0
        while at < len(calls):
            if cancel is not None and cancel.is_set():
                for call in calls[at:]:
                    self._record(call, _interrupted_outcome(), events)
                return True
            group = [calls[at]]
            if calls[at].get("name") in READ_ONLY_TOOLS:
                while at + len(group) < len(calls) and (
                    calls[at + len(group)].get("name") in READ_ONLY_TOOLS
                ):
                    group.append(calls[at + len(group)])
            for call in group:
                if events.on_tool_call is not None:
                    events.on_tool_call(str(call.get("name")), dict(call.get("input") or {}))
            if len(group) == 1:
                self._record(group[0], self._run_one(group[0], cancel), events)
            else:
                with ThreadPoolExecutor(max_workers=min(len(group), 8)) as pool:
                    running: dict[Future[ToolOutcomeLike], JsonDict] = {
                        pool.submit(self._run_one, call, cancel): call for call in group
                    }
                    for done in as_completed(running):  # in the order they finish
                        self._record(running[done], done.result(), events)
            at += len(group)
        return cancel is not None and cancel.is_set()

    def _run_one(self, call: JsonDict, cancel: threading.Event | None) -> ToolOutcomeLike:
        name, tool_id = str(call.get("name")), str(call.get("id"))
        tool_input = call.get("input")
        if not isinstance(tool_input, dict):
            tool_input = {}
        try:
            outcome = self.toolbox.run(name, tool_input, tool_use_id=tool_id, cancel=cancel)
        except Exception as exc:  # a tool's failure is the model's to read, not a crash
            message = str(exc) or type(exc).__name__
            return _Simple(f"<tool_use_error>{message}</tool_use_error>", f"Error: {message}")
        if name in STOPPABLE_TOOLS and cancel is not None and cancel.is_set():
            return _interrupted_outcome()  # the command was stopped: as the client says it
        return outcome

    def _record(self, call: JsonDict, outcome: ToolOutcomeLike, events: TurnEvents) -> None:
        name, tool_id = str(call.get("name")), str(call.get("id"))
        bash = name == "Bash"
        content, result = outcome.content, outcome.tool_use_result
        if bash and isinstance(content, str):  # a big output goes beside the transcript
            spilled = spill_tool_output(self.session.path, output=content)
            if spilled is not None:
                content = spilled.content
                if isinstance(result, dict):
                    result = {**result, **spilled.tool_use_result_fields()}
        self.session.append_tool_result(
            tool_id,
            content,
            tool_use_result=result,
            is_error=True if outcome.is_error else (False if bash else None),
            sandboxed=False if bash else None,
        )
        if events.on_tool_result is not None:
            events.on_tool_result(tool_id, outcome)

    def _keep_partial(self, stopped: Interrupted) -> None:
        """What had streamed when the user stopped a response, kept as the client keeps it:
        the blocks that arrived, as a response with no stop reason."""
        blocks = [
            b
            for b in stopped.partial
            if (b.get("type") == "text" and b.get("text"))
            or (b.get("type") == "thinking" and b.get("thinking"))
        ]
        if not blocks:
            return
        self.session.append_response(
            blocks,
            model=stopped.model or self.model,
            stop_reason=cast(str, None),  # the client writes null: the response never stopped
            usage=stopped.usage or {"input_tokens": 0, "output_tokens": 0},
            message_id=stopped.message_id,
        )

    def _interrupted(self, text: str) -> None:
        """The user record that says the turn was stopped, then the ``last-prompt``
        bookmark on it (no turn end: client 2.1.328 writes none), fsynced."""
        session = self.session
        uuid = session.new_id()
        record = build_user_text(
            session.env,
            uuid=uuid,
            parent_uuid=session.tip,
            prompt_id=session._prompt_id,
            content=text,
            timestamp=format_timestamp(session.clock()),
        )
        record["message"]["content"] = [{"type": "text", "text": text}]
        bookmark = build_last_prompt(
            session.session_id, last_prompt=session._prompt_text, leaf_uuid=uuid
        )
        session._append([record, bookmark], fsync=True)
        session.tip = uuid

    # -- titles ---------------------------------------------------------------------------

    def _title(self, events: TurnEvents) -> None:
        transcript = self.session.transcript()
        prompts = [r for r in transcript.active_records() if r.is_prompt]
        if not prompts:
            return
        request = ModelRequest(
            model=self.model,
            system=[{"type": "text", "text": TITLE_SYSTEM}],
            messages=[{"role": "user", "content": prompts[0].text()[:2000]}],
            tools=[],
            max_tokens=100,
        )
        try:
            title = parse_title(self.provider.respond(request).text)
        except (ProviderError, Interrupted) as exc:
            _notice(events, f"no title: {exc}")
            return
        if title is not None:
            self.session.set_ai_title(title)
            self._titled = True

    # -- commands -------------------------------------------------------------------------

    def _ask(self, messages: list[JsonDict], cancel: threading.Event | None) -> ModelResponse:
        request = ModelRequest(
            model=self.model,
            system=[{"type": "text", "text": COMPACT_SYSTEM}],
            messages=messages,
            tools=[],
            max_tokens=self.max_tokens,
        )
        return self.provider.respond(request, cancel=cancel)

    def compact(self, instructions: str | None = None) -> None:
        """``/compact [instructions]``: the provider summarizes the conversation; the
        summary replaces it in what later turns send (nothing is deleted)."""
        self._compact(instructions, typed=True, cancel=None)

    def _compact(
        self, instructions: str | None, *, typed: bool, cancel: threading.Event | None
    ) -> None:
        session = self.session
        if session.tip is None:
            raise Refused("nothing to compact yet")
        transcript = session.transcript()
        prompt = COMPACT_PROMPT
        if instructions:
            prompt += f"\n\nAdditional Instructions:\n{instructions}"
        messages = _with_user_text(session_context(transcript, session.tip), prompt)
        response = self._ask(messages, cancel)
        summary = _summary_text(response.text)
        if not summary:
            raise ProviderError("the model gave an empty summary; nothing was compacted")
        used = tools_used(transcript.records(session_path(transcript, session.tip)))
        pre = context_tokens(self._last_usage) if self._last_usage else 0
        if typed:  # Session.compact, with the command's checkpoint the client takes
            session._record_history("/compact", {})
        plan = session.plan_compact(
            summary,
            tools_used=used,
            typed=typed,
            pre_tokens=pre,
            post_tokens=max(1, len(summary) // 4),
        )
        checkpoint = _command_checkpoint(session, plan.records, "compact") if typed else []
        session._append([*checkpoint, *plan.records], fsync=True)
        session.tip = plan.tip
        self._last_usage = None

    def summarize(self, prompt_uuid: str, *, direction: Literal["from", "up_to"]) -> None:
        """``/rewind`` → "Summarize from here" / "up to here" at a prompt of the path."""
        session = self.session
        transcript = session.transcript()
        prompt = transcript.record(prompt_uuid)
        if prompt is None or not prompt.is_prompt:
            raise Refused(f"{prompt_uuid} is not a prompt of this session")
        start = prompt.text()[:80]
        if direction == "from":
            messages = session_context(transcript, session.tip)
            ask = SUMMARIZE_FROM.format(start=start)
        else:
            messages = session_context(transcript, session.tip, before=prompt_uuid)
            ask = SUMMARIZE_UP_TO.format(start=start)
        response = self._ask(_with_user_text(messages, f"{COMPACT_PROMPT}\n\n{ask}"), None)
        summary = _summary_text(response.text)
        if not summary:
            raise ProviderError("the model gave an empty summary; nothing was summarized")
        session.summarize(
            prompt_uuid, summary, direction=direction, transcript=transcript, typed=True
        )
        self._last_usage = None

    def rewind(self, prompt_uuid: str, *, conversation: bool, code: bool) -> RewindResult:
        """``/rewind`` to just before a prompt: the conversation (the next prompt hangs
        where it did), the code (the files as at its checkpoint; undoable with
        ``sessiontree restore --undo``), or both. Returns the prompt's text."""
        session = self.session
        transcript = session.transcript()
        prompt = transcript.record(prompt_uuid)
        if prompt is None or not prompt.is_prompt:
            raise Refused(f"{prompt_uuid} is not a prompt of this session")
        changed: tuple[str, ...] = ()
        if code:
            plan = plan_restore_code(self.layout, transcript, prompt_uuid)
            restore_code(plan)
            changed = tuple(str(step.path) for step in plan.changes)
        if conversation:
            session.rewind(prompt_uuid)
            self._last_usage = self._read_state()[1]
        return RewindResult(prompt.text(), conversation, code, changed)

    def rewind_points(self) -> list[RewindPoint]:
        """The prompts of the active path, oldest first, with their file-change counts:
        the files whose checkpointed state differs from the next prompt's checkpoint (for
        the last prompt, from the files now)."""
        transcript = self.session.transcript()
        path = session_path(transcript, self.session.tip)
        prompts = [r for r in transcript.records(path) if r.is_prompt and r.uuid]
        checkpoints = {c.message_id: c for c in read_checkpoints(transcript)}
        points = []
        for n, prompt in enumerate(prompts):
            assert prompt.uuid is not None
            here = checkpoints.get(prompt.uuid)
            changed = 0
            if here is not None:
                after = checkpoints.get(prompts[n + 1].uuid or "") if n + 1 < len(prompts) else None
                if after is not None:
                    changed = sum(
                        1
                        for key, entry in after.files.items()
                        if key not in here.files
                        or here.files[key].backup_file_name != entry.backup_file_name
                    ) + sum(1 for key in here.files if key not in after.files)
                else:
                    changed = self._changed_since(transcript, prompt.uuid)
            points.append(RewindPoint(prompt.uuid, prompt.text(), changed, here is not None))
        return points

    def _changed_since(self, transcript: Any, prompt_uuid: str) -> int:
        try:
            return len(plan_restore_code(self.layout, transcript, prompt_uuid).changes)
        except SessionTreeError:
            return 0

    def resume(self, path: str | os.PathLike[str]) -> None:
        """``/resume``: write another session of this project from now on (opened where its
        active path ends, its checkpoints loaded)."""
        session = Session.open(
            path,
            history_layout=self.session.history_layout,
            clock=self.session.clock,
            new_id=self.session.new_id,
        )
        session.file_history = FileHistory.load(
            self.layout, session.transcript(), cwd=session.env.cwd, clock=session.clock
        )
        self._set_session(session)

    def clear(self) -> None:
        """``/clear``: a new session goes on from an empty conversation."""
        session = self.session  # Session.clear, with the command's checkpoint
        session._record_history("/clear", {})  # under the old session, as the client does
        plan = session.plan_clear()
        fresh = Session(
            plan.path,
            plan.env,
            clock=session.clock,
            new_id=session.new_id,
            history_layout=session.history_layout,
        )
        fresh.file_history = FileHistory(
            self.layout, fresh.session_id, fresh.env.cwd, clock=fresh.clock
        )
        checkpoint = _command_checkpoint(fresh, plan.records, "clear")
        fresh._append([*checkpoint, *plan.records], fsync=True)
        fresh.tip = plan.leaf_uuid
        self._set_session(fresh)

    def fork(self) -> None:
        """``/fork`` (``/branch``): the conversation copied into a new session, which the
        host writes from now on (the old one is left as it is)."""
        fork = self.session.branch()
        fork.file_history = FileHistory(
            self.layout, fork.session_id, fork.env.cwd, clock=fork.clock
        )
        self._set_session(fork)

    def rename(self, title: str) -> None:
        """``/rename``: a custom title, which wins over the AI one."""
        title = title.strip()
        if not title:
            raise Refused("a title cannot be empty")
        self.session.set_title(title)
        self._titled = True

    def cost(self) -> Usage:
        """Tokens and cost of this session's responses, its subagents' included."""
        path = self.session.path
        files = [path] if path.exists() else []
        folder = subagents_dir(path)
        if folder.is_dir():
            files += sorted(folder.glob("*.jsonl"))
        responses = read_responses(files).values()
        prices = default_prices()
        total = [0, 0, 0, 0]
        cost: float | None = 0.0
        for response in responses:
            tokens = response.tokens
            total = [
                total[0] + tokens.input,
                total[1] + tokens.output,
                total[2] + tokens.cache_write,
                total[3] + tokens.cache_read,
            ]
            price = prices.price_for(response.model or "")
            if price is None:
                cost = None
            elif cost is not None:
                cost += cost_of(tokens, price)
        return Usage(len(responses), total[0], total[1], total[2], total[3], cost)


def _command_checkpoint(
    session: Session, records: Sequence[JsonDict], command: str
) -> list[JsonDict]:
    """The checkpoint client 2.1.328 takes for a slash command it records, as for a
    prompt: a ``file-history-snapshot`` for the command's record, written before the
    command's records (fixtures 06-compact, 10-clear). None without checkpoints."""
    if session.file_history is None:
        return []
    opener = f"<command-name>/{command}</command-name>"
    for record in records:
        content = record.get("message", {}).get("content")
        if record.get("type") == "user" and isinstance(content, str) and opener in content:
            return [session.file_history.snapshot(str(record["uuid"]))]
    return []


def _interrupted_outcome() -> _Simple:
    return _Simple(REJECTED, REJECTED_RESULT)
