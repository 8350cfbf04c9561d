"""Writing a session in Claude Code's own format: the porcelain agent builders call.

A :class:`Session` appends the records the real client writes for a conversation
(prompt, one record per assistant content block, tool results, the turn end and its
``last-prompt`` bookmark, titles), each hung on the one before, so that the real client
resumes it with the context sessiontree computes (``tests/interop``). The transcript
file is created with the first record, not before (as the client does), and written
only by appending whole lines under its lock; :meth:`Session.end_turn` fsyncs: a turn
the caller has seen end is on disk.

The lifecycle is the client's too: :meth:`Session.continue_latest` (``-c``) and
:meth:`Session.resume` (``-r``) append to an existing file where its active path ends;
:meth:`Session.compact` and :meth:`Session.summarize` (partial compaction) append a
boundary and a summary, never removing anything; :meth:`Session.clear` starts a new
file; typed prompts can go to ``history.jsonl`` with their pastes, and large Bash output
to ``tool-results/``. What a live host keeps beside the file is in
:mod:`sessiontree.session.host`.
"""

from __future__ import annotations

import json
import os
import uuid as uuidlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sessiontree.catalog.index import transcript_no_conversation
from sessiontree.catalog.resolve import latest_session, resume_session
from sessiontree.checkpoints.capture import FileHistory
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.checkpoints.restore import RestorePlan, apply_restore, plan_restore
from sessiontree.conversation.fork import apply_fork, plan_fork
from sessiontree.conversation.spill import spill_tool_output
from sessiontree.conversation.summarize import (
    CompactPlan,
    Direction,
    SummarizePlan,
    plan_compact,
    plan_summarize,
)
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import NotASession, NotFound
from sessiontree.history.pastes import build_prompt_text, record_prompt_history
from sessiontree.model.builders import (
    LOCAL_COMMAND_CAVEAT,
    Envelope,
    bash_result,
    build_ai_title,
    build_assistant_blocks,
    build_attachment,
    build_custom_title,
    build_last_prompt,
    build_local_command,
    build_queue_operation,
    build_rewind_marker,
    build_subagent_meta,
    build_system,
    build_task_notification,
    build_tool_result,
    build_turn_duration,
    build_user_prompt,
    build_user_text,
    format_command,
    format_timestamp,
)
from sessiontree.model.conversation import format_no_conversation
from sessiontree.model.records import Record, SessionId, prompt_index
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.jsonl import append_records
from sessiontree.storage.layout import Layout, StrPath, subagent_meta_path, subagents_dir

JsonDict = dict[str, Any]


def _new_id() -> str:
    return str(uuidlib.uuid4())


def _now() -> datetime:
    return datetime.now(UTC)


def _turn_offset(records: Sequence[Record]) -> int:
    """turnIndex - promptIndex of the last turn position on a path: the turns a task
    notification started, which count as turns but not as prompts."""
    for record in reversed(records):
        position = record.get("turnPosition")
        if isinstance(position, dict):
            prompt, turn = position.get("promptIndex"), position.get("turnIndex")
            if isinstance(prompt, int) and isinstance(turn, int):
                return turn - prompt
    return 0


@dataclass(frozen=True)
class ClearPlan:
    """What ``/clear`` writes: a new session's file, opened with the command's records."""

    session_id: str
    path: Path
    env: Envelope
    records: tuple[JsonDict, ...]
    #: The end of the new session's active path (the next prompt hangs on it).
    leaf_uuid: str


def _renamed(history_layout: Layout | None, history: Layout | None) -> Layout | None:
    """``history=``, the old name of ``history_layout=`` (it holds a layout, not a
    history), still accepted with a warning."""
    if history is None:
        return history_layout
    warnings.warn("history= is now history_layout=", DeprecationWarning, stacklevel=3)
    return history if history_layout is None else history_layout


def _open_tool_calls(records: Sequence[Record]) -> dict[str, str]:
    """Tool calls on the path still waiting for their result: tool_use id -> the uuid of
    the assistant record that made it (a host killed mid-turn answers them on resume)."""
    calls: dict[str, str] = {}
    for record in records:
        content = record.content
        if not isinstance(content, list) or record.uuid is None:
            continue
        for block in content:
            if record.type == "assistant" and block.get("type") == "tool_use":
                calls[str(block.get("id"))] = record.uuid
            elif record.type == "user" and block.get("type") == "tool_result":
                calls.pop(str(block.get("tool_use_id")), None)
    return calls


@dataclass
class Session:
    """One session's transcript, being written. Create with :meth:`create` or :meth:`open`."""

    path: Path
    env: Envelope
    #: The record the next one hangs on (the end of the active path), None before any.
    tip: str | None = None
    prompt_index: int = 0
    clock: Callable[[], datetime] = field(default=_now, repr=False)
    new_id: Callable[[], str] = field(default=_new_id, repr=False)
    _prompt_id: str | None = field(default=None, repr=False)
    _prompt_text: str = field(default="", repr=False)
    #: Where typed prompts are recorded (the ``history.jsonl`` of this config root), as an
    #: interactive client does; None (the default) records nothing, as ``claude -p``.
    history_layout: Layout | None = None
    _tool_uses: dict[str, str] = field(default_factory=dict, repr=False)
    #: The session's file checkpoints, kept as the interactive client keeps them: with
    #: it set, each prompt is preceded by its ``file-history-snapshot`` and
    #: :meth:`before_edit` backs a file up before its first edit. None: no checkpoints.
    file_history: FileHistory | None = field(default=None, repr=False)
    #: The subagent type (``general-purpose``…) of a subagent's transcript (see
    #: :meth:`start_subagent`); its responses carry it as their ``attributionAgent``.
    agent_type: str | None = None
    #: turnIndex - promptIndex: the task-notification turns on the path.
    _turn_offset: int = field(default=0, repr=False)
    #: A rewind is pending: the next prompt is followed by the all-zero marker.
    _rewound: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)  # a str or os.PathLike given is taken as a path

    @classmethod
    def create(
        cls,
        layout: Layout,
        cwd: StrPath,
        *,
        session_id: str | None = None,
        git_branch: str = "HEAD",
        entrypoint: str = "sdk-py",
        record_history: bool = False,
        clock: Callable[[], datetime] = _now,
        new_id: Callable[[], str] = _new_id,
    ) -> Session:
        """A new session of ``cwd``; its file appears with the first record.
        ``record_history``: write typed prompts to ``history.jsonl`` (interactive use)."""
        sid = session_id or new_id()
        cwd = os.fspath(cwd)
        env = Envelope(session_id=sid, cwd=cwd, git_branch=git_branch, entrypoint=entrypoint)
        return cls(
            layout.transcript_path(cwd, sid),
            env,
            clock=clock,
            new_id=new_id,
            history_layout=layout if record_history else None,
        )

    @classmethod
    def open(
        cls,
        path: StrPath,
        *,
        history_layout: Layout | None = None,
        clock: Callable[[], datetime] = _now,
        new_id: Callable[[], str] = _new_id,
        history: Layout | None = None,
    ) -> Session:
        """Continue an existing transcript (resume without forking appends to it): new
        records hang on the end of its active path, as the client's do.
        ``history_layout``: the config root whose ``history.jsonl`` gets typed prompts
        (None: not recorded). ``history`` is its old, deprecated name."""
        return cls.from_transcript(
            Transcript.open(Path(path)),
            history_layout=_renamed(history_layout, history),
            clock=clock,
            new_id=new_id,
        )

    @classmethod
    def from_transcript(
        cls,
        transcript: Transcript,
        *,
        history_layout: Layout | None = None,
        clock: Callable[[], datetime] = _now,
        new_id: Callable[[], str] = _new_id,
        history: Layout | None = None,
    ) -> Session:
        """:meth:`open` for a transcript already read (a command that also resolves a
        prompt in it reads a large file once)."""
        history_layout = _renamed(history_layout, history)
        path = transcript.path
        active = transcript.active_path
        records = transcript.records(active)
        first = next((r for r in records if isinstance(r.get("cwd"), str)), None)
        slug = next((r.get("slug") for r in reversed(records) if r.get("slug")), None)
        env = Envelope(
            session_id=transcript.session_id,
            cwd=str(first.get("cwd")) if first else str(path.parent),
            git_branch=str(first.get("gitBranch", "HEAD")) if first else "HEAD",
            entrypoint=str(first.get("entrypoint", "sdk-py")) if first else "sdk-py",
            slug=str(slug) if slug else None,
        )
        prompts = [r for r in records if r.is_prompt]
        session = cls(
            path,
            env,
            tip=active[-1] if active else None,
            prompt_index=prompt_index(records),
            clock=clock,
            new_id=new_id,
            history_layout=history_layout,
        )
        if prompts:  # the turn in progress: its prompt id and text carry on
            last = prompts[-1]
            prompt_id = last.get("promptId")
            session._prompt_id = prompt_id if isinstance(prompt_id, str) else None
            session._prompt_text = last.text()
        session._tool_uses = _open_tool_calls(records)
        session._turn_offset = _turn_offset(records)
        return session

    @classmethod
    def continue_latest(
        cls,
        layout: Layout,
        cwd: StrPath,
        *,
        record_history: bool = False,
        clock: Callable[[], datetime] = _now,
        new_id: Callable[[], str] = _new_id,
    ) -> Session:
        """``claude -c``: continue the most recently modified session of ``cwd`` (files that
        hold no conversation passed over, as the client does: :func:`latest_session`)."""
        path = latest_session(layout, cwd)
        if path is None:
            raise NotFound("session to continue in", os.fspath(cwd))
        history_layout = layout if record_history else None
        return cls.open(path, history_layout=history_layout, clock=clock, new_id=new_id)

    @classmethod
    def resume(
        cls,
        layout: Layout,
        ref: StrPath,
        *,
        record_history: bool = False,
        cache_file: StrPath | None = None,
        clock: Callable[[], datetime] = _now,
        new_id: Callable[[], str] = _new_id,
    ) -> Session:
        """``claude -r REF``: a full id, a unique prefix, a title, a path, or a search term
        matching one session's title, first prompt or cwd. A file that holds no conversation
        raises :class:`~sessiontree.errors.NotASession`, as the client refuses it.
        ``cache_file``: the listing cache a title or search may use (None: none is read or
        written; see :func:`~sessiontree.catalog.index.list_sessions`)."""
        history_layout = layout if record_history else None
        transcript = Transcript.open(resume_session(layout, ref, cache_file=cache_file))
        reason = transcript_no_conversation(transcript)  # a leaf on a sidechain, say
        if reason is not None:
            raise NotASession(str(transcript.path), reason, format_no_conversation(reason))
        return cls.from_transcript(
            transcript, history_layout=history_layout, clock=clock, new_id=new_id
        )

    @property
    def session_id(self) -> SessionId:
        return SessionId(self.env.session_id)

    def _stamp(self) -> str:
        return format_timestamp(self.clock())

    def _append(self, records: Sequence[JsonDict], *, fsync: bool = False) -> None:
        append_records(self.path, records, fsync=fsync)

    def _append_on_tip(self, build: Callable[..., JsonDict], **fields: Any) -> str:
        """Append the one record ``build(env, uuid=, parent_uuid=, timestamp=, **fields)``
        makes, hung on the tip; it becomes the tip. Returns its uuid."""
        uuid = self.new_id()
        record = build(self.env, uuid=uuid, parent_uuid=self.tip, timestamp=self._stamp(), **fields)
        self._append([record])
        self.tip = uuid
        return uuid

    def _record_history(self, display: str, pastes: Mapping[int, str]) -> None:
        if self.history_layout is not None:
            record_prompt_history(
                self.history_layout,
                display=display,
                pastes=pastes,
                project=self.env.cwd,
                session_id=self.session_id,
                clock=lambda: self.clock().timestamp(),
            )

    def append_prompt(
        self, content: str | list[JsonDict], *, pastes: Mapping[int, str] | None = None
    ) -> str:
        """A prompt the user typed; returns its uuid (what ``/rewind`` lists).

        ``pastes``: the texts of ``[Pasted text #N +L lines]`` placeholders in ``content``;
        the transcript gets them in place (wrapped as the client wraps them), the history
        line keeps the placeholders and large pastes go to ``paste-cache/``."""
        if pastes and not isinstance(content, str):
            raise ValueError("pastes go with a text prompt that holds their placeholders")
        if isinstance(content, str):
            self._record_history(content, pastes or {})
        display = content
        if pastes and isinstance(content, str):
            content = build_prompt_text(content, pastes, session_id=self.session_id)
        uuid, self._prompt_id = self.new_id(), self.new_id()
        self.prompt_index += 1
        # the checkpoint of the files as they are before the prompt, written before it
        records = [] if self.file_history is None else [self.file_history.snapshot(uuid)]
        records.append(
            build_user_prompt(
                self.env,
                uuid=uuid,
                parent_uuid=self.tip,
                prompt_id=self._prompt_id,
                content=content,
                timestamp=self._stamp(),
                prompt_index=self.prompt_index,
                turn_index=self.prompt_index + self._turn_offset if self._turn_offset else None,
            )
        )
        if self._rewound:  # the first prompt after a /rewind, as the client marks it
            records.append(build_rewind_marker(self.session_id))
            self._rewound = False
        self._append(records)
        self.tip = uuid
        self._prompt_text = display if isinstance(display, str) else ""
        return uuid

    def append_response(
        self,
        blocks: Sequence[JsonDict],
        *,
        model: str = "claude-sonnet-4-5",
        stop_reason: str = "end_turn",
        usage: Mapping[str, Any] | None = None,
        message_id: str | None = None,
    ) -> list[str]:
        """One API response: one record per content block, sharing ``message.id``."""
        if self.tip is None:
            raise ValueError("a response needs a prompt before it")
        uuids = [self.new_id() for _ in blocks]
        stamp = self._stamp()
        records = build_assistant_blocks(
            self.env,
            uuids=uuids,
            parent_uuid=self.tip,
            message_id=message_id or f"msg_{self.new_id().replace('-', '')[-24:]}",
            request_ref=self.new_id(),
            blocks=blocks,
            timestamps=[stamp] * len(blocks),
            model=model,
            stop_reason=stop_reason,
            usage=dict(usage or {"input_tokens": 0, "output_tokens": 0}),
            attribution_agent=self.agent_type,
        )
        self._append(records)
        for record_uuid, block in zip(uuids, blocks, strict=True):
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                self._tool_uses[block["id"]] = record_uuid
        self.tip = uuids[-1]
        return uuids

    def append_tool_result(
        self,
        tool_use_id: str,
        content: str | list[JsonDict],
        *,
        tool_use_result: Any = None,
        is_error: bool | None = None,
        sandboxed: bool | None = None,
    ) -> str:
        """The result of a tool call made in this session's last response.

        As the client writes it: the result hangs on its own call's record (with parallel
        calls, each on its own block, in the order they finish), and what comes next
        hangs on the result written last. ``sandboxed``: whether a command ran in the
        sandbox, which the client records on Bash results (None: not recorded)."""
        source = self._tool_uses.pop(tool_use_id, None)  # a call is answered once
        if source is None or self.tip is None:
            raise ValueError(f"no tool_use {tool_use_id!r} in this session to answer")
        uuid = self.new_id()
        record = build_tool_result(
            self.env,
            uuid=uuid,
            parent_uuid=source,
            prompt_id=self._prompt_id or self.new_id(),
            tool_use_id=tool_use_id,
            content=content,
            tool_use_result=tool_use_result if tool_use_result is not None else content,
            timestamp=self._stamp(),
            is_error=is_error,
            sandboxed=sandboxed,
        )
        self._append([record])
        self.tip = uuid
        return uuid

    def append_bash_result(
        self, tool_use_id: str, stdout: str, stderr: str = "", *, spill: bool = True
    ) -> str:
        """The result of a Bash call, as the client records it: an output over 30,000
        bytes is saved to ``<sessionId>/tool-results/`` and the model gets the
        ``<persisted-output>`` reference with a preview (``spill=False`` keeps it inline;
        so does any stderr, as the client's wording for that case is not known here).
        Like the client's, the result says ``is_error: false`` and ``sandboxed: false``."""
        text, result = bash_result(stdout, stderr)
        spilled = spill_tool_output(self.path, output=stdout) if spill and not stderr else None
        if spilled is not None:
            text, result = spilled.content, {**result, **spilled.tool_use_result_fields()}
        return self.append_tool_result(
            tool_use_id, text, tool_use_result=result, is_error=False, sandboxed=False
        )

    def append_attachment(
        self,
        attachment: Mapping[str, Any],
        *,
        rendered: Sequence[str] = (),
        rendered_role: Literal["user", "system"] = "user",
        echo_session_id: bool = False,
    ) -> str:
        """Context the host injects. ``rendered`` is what the model is sent, as a
        ``rendered_role`` message; an attachment with no rendered text is kept in the file
        but not sent. The client sends the stored text of a type it does not know; types
        it knows (``file``, ``date``, ``hook_additional_context``…) it checks against
        their data, so give those with all the fields it writes. Whether system-role
        texts go as system messages or as user text depends on the model (the client's
        "system turns"). ``echo_session_id`` adds the snake_case ``session_id`` copy the
        client writes on some attachments (``date``)."""
        if self.tip is None:
            raise ValueError("an attachment hangs on a prompt or a response")
        return self._append_on_tip(
            build_attachment,
            attachment=attachment,
            rendered=rendered,
            rendered_role=rendered_role,
            echo_session_id=echo_session_id,
        )

    def append_system(
        self,
        subtype: str,
        *,
        content: str | None = None,
        level: str = "info",
        fields: Mapping[str, Any] | None = None,
    ) -> str:
        """A ``system`` record (``subtype`` e.g. ``informational``, ``api_error``,
        ``local_command``); extra ``fields`` are written as given. Only ``local_command``
        content is sent to the model (as user text), as the client does."""
        return self._append_on_tip(
            build_system, subtype=subtype, content=content, level=level, fields=fields
        )

    def end_turn(
        self,
        *,
        duration_ms: int = 0,
        message_count: int | None = None,
        pending_background_agents: int | None = None,
    ) -> str:
        """Close the turn: ``system/turn_duration`` and the ``last-prompt`` bookmark,
        then fsync (a durable turn commit). The next prompt hangs on the turn end.
        ``pending_background_agents``: background subagents still running, which the
        client counts in the turn end."""
        if self.tip is None:
            raise ValueError("no turn to end")
        uuid = self.new_id()
        records = [
            build_turn_duration(
                self.env,
                uuid=uuid,
                parent_uuid=self.tip,
                duration_ms=duration_ms,
                message_count=message_count if message_count is not None else 0,
                timestamp=self._stamp(),
                pending_background_agents=pending_background_agents,
            ),
            build_last_prompt(self.session_id, last_prompt=self._prompt_text, leaf_uuid=uuid),
        ]
        self._append(records, fsync=True)
        self.tip = uuid
        return uuid

    def plan_compact(
        self,
        summary: str,
        *,
        tools_used: Sequence[str] = (),
        typed: bool = False,
        pre_tokens: int = 0,
        post_tokens: int = 0,
        auto: bool = False,
        running_prompt: str | None = None,
        keep_last: bool = True,
    ) -> CompactPlan:
        """What :meth:`compact` would append, with the same arguments (nothing is written).

        ``auto``: as the client compacts by itself when the context nears the limit,
        before a request of a turn (``running_prompt``: its prompt's uuid): ``trigger:
        "auto"``, the last response and what followed it kept verbatim (not with
        ``keep_last`` False: the client keeps nothing when a turn compacts a second time),
        the tokens the session's compactions dropped counted on from the last boundary."""
        if self.tip is None:
            raise ValueError("nothing to compact")
        keep = typed or (auto and keep_last)
        preserved = self._last_response_and_turn_end() if keep else ()
        dropped = 0
        if auto:
            dropped = self._dropped_tokens() + max(0, pre_tokens - post_tokens)
        return plan_compact(
            summary,
            tip=self.tip,
            env=self.env,
            transcript_path=str(self.path),
            stamp=self._stamp,
            new_id=self.new_id,
            prompt_index=self.prompt_index,
            turn_index=self.prompt_index + self._turn_offset if self._turn_offset else None,
            last_prompt=self._prompt_text,
            tools_used=tools_used,
            preserved_uuids=preserved,
            typed=typed,
            pre_tokens=pre_tokens,
            post_tokens=post_tokens,
            trigger="auto" if auto else "manual",
            cumulative_dropped_tokens=dropped,
            running_prompt=running_prompt if auto else None,
            prompt_id=self._prompt_id if auto else None,
        )

    def compact(
        self,
        summary: str,
        *,
        tools_used: Sequence[str] = (),
        typed: bool = False,
        pre_tokens: int = 0,
        post_tokens: int = 0,
    ) -> str:
        """Full compaction, as ``/compact`` writes it: a ``compact_boundary`` (a new root
        whose ``logicalParentUuid`` is the current tip) and the summary under it; the
        originals stay on disk. Returns the summary's uuid (the new tip).

        ``typed``: as the interactive client writes a ``/compact`` the user typed
        (fixture 06): the last response and its turn end are kept verbatim (the
        boundary's ``preservedSegment``, which readers re-link after the summary), the
        command's caveat, the command and its output follow the summary, no
        ``last-prompt`` is written, and the command goes to ``history.jsonl``; the
        returned uuid (the new tip) is then the command output's. ``pre_tokens`` and
        ``post_tokens``: the context's size before and after, as the boundary records it.
        """
        if self.tip is None:
            raise ValueError("nothing to compact")
        if typed:
            self._record_history("/compact", {})
        plan = self.plan_compact(
            summary,
            tools_used=tools_used,
            typed=typed,
            pre_tokens=pre_tokens,
            post_tokens=post_tokens,
        )
        self._append(plan.records, fsync=True)
        self.tip = plan.tip
        return plan.tip

    def _dropped_tokens(self) -> int:
        """``cumulativeDroppedTokens`` of the last compaction on the path to the tip."""
        assert self.tip is not None
        transcript = self.transcript()
        for uuid in reversed(transcript.tree.path_to(self.tip)):
            record = transcript.record(uuid)
            if record is None or record.subtype != "compact_boundary":
                continue
            metadata = record.get("compactMetadata")
            dropped = metadata.get("cumulativeDroppedTokens") if isinstance(metadata, dict) else 0
            return dropped if isinstance(dropped, int) and not isinstance(dropped, bool) else 0
        return 0

    def _last_response_and_turn_end(self) -> tuple[str, ...]:
        """The uuids from the last response on the path to the tip (its first record: a
        response written one record per block has them all under one message id)."""
        transcript = self.transcript()
        assert self.tip is not None
        path = transcript.tree.path_to(self.tip)
        for at in range(len(path) - 1, -1, -1):
            record = transcript.record(path[at])
            if record is not None and record.type == "assistant":
                message_id = record.message_id
                while at > 0 and message_id is not None:
                    before = transcript.record(path[at - 1])
                    if before is None or before.type != "assistant":
                        break
                    if before.message_id != message_id:
                        break
                    at -= 1
                return tuple(path[at:])
        return ()

    def plan_summarize(
        self,
        prompt_uuid: str,
        summary: str,
        *,
        direction: Direction,
        transcript: Transcript | None = None,
    ) -> SummarizePlan:
        """What :meth:`summarize` would append (nothing is written). ``transcript``: this
        session as just read, if the caller has it (else it is read now)."""
        return plan_summarize(
            transcript or self.transcript(),
            prompt_uuid,
            summary,
            direction=direction,
            env=self.env,
            timestamp=self._stamp(),
            new_id=self.new_id,  # the summary gets a prompt id of its own (fixtures 07, 08)
        )

    def summarize(
        self,
        prompt_uuid: str,
        summary: str,
        *,
        direction: Direction,
        transcript: Transcript | None = None,
        typed: bool = False,
    ) -> SummarizePlan:
        """``/rewind`` → "Summarize from here" (``direction="from"``) or "up to here"
        (``"up_to"``) at a prompt on the active path: a boundary and the summary, the
        kept records re-linked by readers, nothing re-written or removed (see
        :mod:`sessiontree.conversation.summarize`). The next record hangs on the returned
        plan's leaf. ``typed``: the user typed ``/rewind`` (it goes to ``history.jsonl``)."""
        if typed:
            self._record_history("/rewind", {})
        plan = self.plan_summarize(prompt_uuid, summary, direction=direction, transcript=transcript)
        self._append(plan.records, fsync=True)
        self.tip = plan.leaf_uuid
        return plan

    def plan_clear(self) -> ClearPlan:
        """What :meth:`clear` would write: the new session's first records (nothing is
        written, and no ``history.jsonl`` line)."""
        session_id = self.new_id()
        env = replace(self.env, session_id=session_id)
        caveat, command, stdout = self.new_id(), self.new_id(), self.new_id()
        stamp = self._stamp()
        records = (
            build_user_text(
                env,
                uuid=caveat,
                parent_uuid=None,
                prompt_id=None,
                content=LOCAL_COMMAND_CAVEAT,
                timestamp=stamp,
                is_meta=True,
                echo_session_id=False,
            ),
            build_user_text(
                env,
                uuid=command,
                parent_uuid=caveat,
                prompt_id=None,
                content=format_command("clear"),
                timestamp=stamp,
                echo_session_id=False,
            ),
            build_local_command(
                env,
                uuid=stdout,
                parent_uuid=command,
                content="<local-command-stdout></local-command-stdout>",
                timestamp=stamp,
                command="clear",
            ),
        )
        path = self.path.with_name(f"{session_id}.jsonl")
        return ClearPlan(session_id, path, env, records, leaf_uuid=stdout)

    def clear(self) -> Session:
        """``/clear``: a new session in the same directory, opened as the client opens it
        (the command's caveat, the command, its empty output; the next prompt hangs on
        that). This session's file is left as it is."""
        self._record_history("/clear", {})  # under this session's id, as the client does
        plan = self.plan_clear()
        fresh = Session(
            plan.path,
            plan.env,
            clock=self.clock,
            new_id=self.new_id,
            history_layout=self.history_layout,
        )
        fresh._append(plan.records, fsync=True)
        fresh.tip = plan.leaf_uuid
        return fresh

    def set_title(self, title: str) -> None:
        """A custom title (what ``/rename`` writes); the newest one wins."""
        self._append([build_custom_title(self.session_id, title)], fsync=True)

    def transcript(self) -> Transcript:
        """The session as written so far, read back."""
        return Transcript.open(self.path)

    # -- what the interactive client writes for its commands and background work ------------

    def set_ai_title(self, title: str) -> None:
        """The title the client has the model generate for a session (``ai-title``); a
        custom title (:meth:`set_title`) wins over it."""
        self._append([build_ai_title(self.session_id, title)], fsync=True)

    def before_edit(self, path: str | os.PathLike[str], *, tool_use_id: str) -> None:
        """Call before the tool call ``tool_use_id`` (of the last response) edits, creates
        or deletes ``path``: the first time the session touches the file it is backed up
        (:meth:`FileHistory.before_edit`) and the ``file-history-delta`` is appended.
        Needs :attr:`file_history`."""
        files = self.file_history
        prompt = files.current_prompt if files is not None else None
        source = self._tool_uses.get(tool_use_id)
        if files is None or prompt is None or source is None:
            raise ValueError(f"no checkpoint or no open tool call {tool_use_id!r} to back up for")
        delta = files.before_edit(path, prompt_uuid=prompt, tool_use_record_uuid=source)
        if delta is not None:
            self._append([delta])

    def note_untracked_changes(self) -> None:
        """After a tool that may change files unseen (Bash): the prompt's checkpoint again,
        flagged ``hasUntrackedChanges`` (once per prompt), as the client writes it. Needs
        :attr:`file_history`."""
        if self.file_history is None:
            raise ValueError("this session keeps no file checkpoints")
        record = self.file_history.note_untracked_changes()
        if record is not None:
            self._append([record])

    def rewind(self, prompt_uuid: str, *, restore_code: bool = False) -> RestorePlan | None:
        """``/rewind`` to just before ``prompt_uuid`` (a prompt on this session's path), as
        the live client does it: nothing is written now; the next prompt hangs on that
        prompt's parent and is followed by the all-zero ``last-prompt`` marker, and the
        abandoned branch stays in the file. The command goes to ``history.jsonl``.

        ``restore_code`` ("Restore code and conversation"): the tracked files are put
        back as they were at that prompt's checkpoint (:func:`plan_restore`,
        :func:`apply_restore`, which saves what it overwrites first); the plan is
        returned. Needs :attr:`file_history`. (A rewind done with no live session uses
        :mod:`sessiontree.conversation.rewind` instead.)
        """
        transcript = self.transcript()
        on_path = transcript.tree.path_to(self.tip) if self.tip is not None else []
        prompt = transcript.record(prompt_uuid)
        if prompt is None or not prompt.is_prompt or prompt_uuid not in on_path:
            raise ValueError(f"{prompt_uuid} is not a prompt on this session's path")
        plan = None
        if restore_code:
            if self.file_history is None:
                raise ValueError("this session keeps no file checkpoints to restore")
            layout = self.file_history.layout
            plan = plan_restore(
                layout,
                self.session_id,
                Path(self.file_history.cwd),
                read_checkpoints(transcript),
                prompt_uuid,
            )
            now = self.clock()
            apply_restore(layout, plan, stamp=now.strftime("%Y%m%dT%H%M%S%fZ"), at=now)
        self._record_history("/rewind", {})
        kept = transcript.records(on_path[: on_path.index(prompt_uuid)])
        self.tip = kept[-1].uuid if kept else None
        self.prompt_index = prompt_index(kept)
        self._turn_offset = _turn_offset(kept)
        self._rewound = True
        return plan

    def append_task_notification(self, content: str) -> str:
        """A background task (a subagent, a shell) finished: its ``<task-notification>``
        is queued and taken (two ``queue-operation`` records) and starts a turn of its
        own, a user record that counts as a turn but not as a prompt. Returns its uuid."""
        if self.tip is None:
            raise ValueError("a task notification hangs on the conversation before it")
        enqueue = build_queue_operation(
            self.session_id, operation="enqueue", timestamp=self._stamp(), content=content
        )
        dequeue = build_queue_operation(
            self.session_id, operation="dequeue", timestamp=self._stamp()
        )
        uuid, self._prompt_id = self.new_id(), self.new_id()
        self._turn_offset += 1
        record = build_task_notification(
            self.env,
            uuid=uuid,
            parent_uuid=self.tip,
            prompt_id=self._prompt_id,
            content=content,
            timestamp=self._stamp(),
            prompt_index=self.prompt_index,
            turn_index=self.prompt_index + self._turn_offset,
            run_id=self.new_id().replace("-", "")[:12],
        )
        self._append([enqueue, dequeue, record])
        self.tip = uuid
        return uuid

    def start_subagent(
        self,
        agent_id: str,
        task: str,
        *,
        agent_type: str,
        description: str,
        tool_use_id: str,
        model: str,
        background: bool = True,
    ) -> Session:
        """The transcript of a subagent launched by the tool call ``tool_use_id``:
        ``subagents/agent-<agent_id>.jsonl`` beside this session's file, with its
        ``.meta.json``. Its first record, the ``task``, is written; the returned session
        appends the subagent's turns (sidechain records, attributed to ``agent_type``)."""
        path = subagents_dir(self.path) / f"agent-{agent_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = build_subagent_meta(
            agent_type=agent_type,
            description=description,
            tool_use_id=tool_use_id,
            model=model,
            background=background,
        )
        write_atomically(subagent_meta_path(path), json.dumps(meta).encode())
        sub = Session(
            path,
            replace(self.env, agent_id=agent_id),
            prompt_index=self.prompt_index,
            clock=self.clock,
            new_id=self.new_id,
            agent_type=agent_type,
        )
        sub._prompt_id, sub._prompt_text = self._prompt_id, task
        uuid = sub.new_id()
        first = build_user_text(
            sub.env,
            uuid=uuid,
            parent_uuid=None,
            prompt_id=self._prompt_id,
            content=task,
            timestamp=sub._stamp(),
        )
        sub._append([first])
        sub.tip = uuid
        return sub

    def branch(self, *, title: str | None = None, session_id: str | None = None) -> Session:
        """``/branch``: copy the conversation up to the tip into a new session (same uuids,
        ``forkedFrom``, a ``"<title> (Branch)"`` custom title; see
        :mod:`sessiontree.conversation.fork`) and return a session that continues it. The
        command goes to ``history.jsonl`` under this session. The new session keeps no
        file checkpoints until its :attr:`file_history` is set."""
        if self.tip is None:
            raise ValueError("an empty session has nothing to branch")
        self._record_history("/branch", {})
        plan = plan_fork(
            self.transcript(), new_session_id=session_id or self.new_id(), at=self.tip, title=title
        )
        apply_fork(plan)
        return Session.open(
            plan.path, history_layout=self.history_layout, clock=self.clock, new_id=self.new_id
        )
