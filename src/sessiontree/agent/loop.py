"""The agent host: a turn from a prompt to its end, and the session's commands, on a
:class:`~sessiontree.session.Session`.

A turn appends the prompt, then asks the provider for a response (the request is the
context sessiontree computes for the session: :mod:`sessiontree.agent.request`), runs the
tool calls it makes through the toolbox, records each result as the client does, and asks
again until the model stops calling tools; the turn end is then written and fsynced (a
killed host loses at most the turn in flight).

* the calls of one response run and are recorded by :mod:`sessiontree.agent.calls`
  (read-only ones at once, each result on its own call, big outputs saved beside the
  transcript);
* Ctrl+C (the ``cancel`` event) and an API that fails for good are recorded as client
  2.1.328 records them (:mod:`sessiontree.agent.host_records`): what had streamed kept,
  ``[Request interrupted by user]`` (``... for tool use]``), or the ``API Error``
  record; then the ``last-prompt`` bookmark, no turn end;
* Near the model's context limit (the last response's usage), the conversation is
  compacted before the next request, as the client compacts by itself (after a new
  prompt is written, or between the responses of a turn): the turn's own request with
  the client's summary prompt added, then a boundary with ``trigger: "auto"`` that keeps
  the last response and what followed it verbatim (``preservedSegment``).
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
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from sessiontree.agent.calls import (
    ToolboxLike,
    ToolOutcomeLike,
    run_calls,
)
from sessiontree.agent.compact_prompt import COMPACT_PROMPT
from sessiontree.agent.host_records import (
    INTERRUPTED,
    INTERRUPTED_FOR_TOOL_USE,
    command_checkpoint,
    keep_partial,
    write_api_error,
    write_interruption,
    write_start_context,
)
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
from sessiontree.catalog.usage import cost_of, default_prices
from sessiontree.catalog.usage_files import read_responses
from sessiontree.checkpoints.bash_capture import copy_capture_log
from sessiontree.checkpoints.capture import FileHistory
from sessiontree.checkpoints.code import plan_restore_code, restore_code
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.conversation.summarize import tools_used
from sessiontree.errors import Refused, SessionTreeError
from sessiontree.lifecycle.live import set_session_id
from sessiontree.session.host import RunningSession
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout, subagents_dir

JsonDict = dict[str, Any]

COMPACT_SYSTEM = "You are a helpful AI assistant tasked with summarizing conversations."
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

#: ``(source, session, prompt_id) -> [(attachment, rendered text)]`` (see
#: :attr:`AgentHost.session_start_hooks`).
SessionStartHooks = Callable[
    [Literal["clear", "compact"], Session, str | None], Sequence[tuple[JsonDict, str]]
]

_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S)
_ANALYSIS = re.compile(r"<analysis>.*?</analysis>", re.S)


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
        #: Runs the SessionStart hooks for ``(source, session, prompt_id)`` and gives the
        #: attachments of those that printed something (the face's: it knows the
        #: settings); None: no hooks. ``/clear`` and compactions call it.
        self.session_start_hooks: SessionStartHooks | None = None
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
        if self.running is not None:  # the live entry names the session now written
            self.running.live = set_session_id(
                self.layout, self.running.live.pid, session.session_id
            )
            self.running.session = session
        self._titled, self._last_usage = self._read_state()

    def add_start_context(self, attachments: Sequence[tuple[JsonDict, str]]) -> None:
        """Attachments to record before the next prompt, as the client records what its
        SessionStart hooks printed: the first records of a new session (the prompt hangs
        on them), or after the end of a resumed one; sent as system text."""
        self._start_context.extend(attachments)

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
        fails for good, after recording the failure as the client does (an ``API Error``
        record the next request leaves out; the prompt stays)."""
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
        write_start_context(self.session, self._start_context)
        self._start_context.clear()
        prompt_uuid = self.session.append_prompt(prompt, pastes=pastes)
        responses = calls_made = 0
        answer = ""
        while True:
            if needs_compaction(self._last_usage, model=self.model) and self._compactable():
                _notice(events, "the context is near the model's limit: compacting")
                try:
                    self._auto_compact(prompt_uuid, cancel, keep=not compacted)
                except Interrupted:  # nothing of the summary is kept
                    write_interruption(self.session, INTERRUPTED)
                    return TurnResult(prompt_uuid, answer, True, responses, calls_made, compacted)
                compacted = True
            try:
                response = self.provider.respond(
                    self.request(), on_text=events.on_text, cancel=cancel
                )
            except Interrupted as stopped:
                keep_partial(self.session, stopped, model=self.model)
                write_interruption(self.session, INTERRUPTED)
                return TurnResult(prompt_uuid, answer, True, responses, calls_made, compacted)
            except ProviderError as failed:
                write_api_error(self.session, failed)
                raise
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
            stopped_calls = run_calls(
                self.session,
                self.toolbox,
                calls,
                cancel=cancel,
                on_call=events.on_tool_call,
                on_result=events.on_tool_result,
            )
            if stopped_calls:
                write_interruption(self.session, INTERRUPTED_FOR_TOOL_USE)
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

    def _compactable(self) -> bool:
        """Whether there is something to summarize before the last response (which is
        kept): the client compacts by itself only then (seen: a resumed session of one
        exchange near the limit is not compacted before its second prompt's request)."""
        transcript = self.session.transcript()
        responses = {
            record.message_id or record.uuid
            for record in transcript.records(session_path(transcript, self.session.tip))
            if record.type == "assistant"
        }
        return len(responses) >= 2

    def _auto_compact(
        self, prompt_uuid: str, cancel: threading.Event | None, *, keep: bool = True
    ) -> None:
        """Compact by itself before the next request, as the client does: the request the
        turn would send, with the summary prompt added to its last user message; the last
        response and what followed it (the prompt, the results) kept verbatim, unless the
        turn compacted already (``keep`` False: the client then keeps nothing)."""
        session = self.session
        request = self.request()
        messages = _with_user_text(list(request.messages), COMPACT_PROMPT)
        response = self.provider.respond(replace(request, messages=messages), cancel=cancel)
        summary = _summary_text(response.text)
        if not summary:
            raise ProviderError("the model gave an empty summary; nothing was compacted")
        transcript = session.transcript()
        assert session.tip is not None
        plan = session.plan_compact(
            summary,
            tools_used=tools_used(transcript.records(session_path(transcript, session.tip))),
            pre_tokens=context_tokens(self._last_usage) if self._last_usage else 0,
            post_tokens=max(1, len(summary) // 4),
            auto=True,
            running_prompt=prompt_uuid,
            keep_last=keep,
        )
        session._append(list(plan.records), fsync=True)
        session.tip = plan.tip
        self._last_usage = None
        self._after_compaction(plan.records)

    def _after_compaction(self, records: Sequence[JsonDict]) -> None:
        """The ``compact`` SessionStart hooks, their output written after the compaction's
        records (the summary's prompt id in their input)."""
        if self.session_start_hooks is None:
            return
        prompt_id = next((r.get("promptId") for r in records if r.get("isCompactSummary")), None)
        attachments = self.session_start_hooks("compact", self.session, prompt_id)
        write_start_context(self.session, attachments)

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
        checkpoint = command_checkpoint(session, plan.records, "compact") if typed else []
        session._append([*checkpoint, *plan.records], fsync=True)
        session.tip = plan.tip
        self._last_usage = None
        self._after_compaction(plan.records)

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
        records = list(plan.records)
        if self.session_start_hooks is not None:  # their output: the first records
            write_start_context(fresh, self.session_start_hooks("clear", fresh, None))
            records[0] = {**records[0], "parentUuid": fresh.tip}
        checkpoint = command_checkpoint(fresh, records, "clear")
        fresh._append([*checkpoint, *records], fsync=True)
        fresh.tip = plan.leaf_uuid
        self._set_session(fresh)

    def fork(self) -> None:
        """``/fork`` (``/branch``): the conversation copied into a new session, which the
        host writes from now on (the old one is left as it is), with what sessiontree kept
        of the files Bash changed in the prompts it copies."""
        fork = self.session.branch()
        fork.file_history = FileHistory(
            self.layout, fork.session_id, fork.env.cwd, clock=fork.clock
        )
        # what Bash changed in the prompts the fork keeps, so restoring code there
        # puts those files back too (the fork has none of the client's checkpoints)
        transcript = fork.transcript()
        kept = [str(r.uuid) for r in transcript.active_records() if r.is_prompt and r.uuid]
        copy_capture_log(self.session.path, fork.path, kept)
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
