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

import os
import uuid as uuidlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sessiontree.catalog.index import transcript_no_conversation
from sessiontree.catalog.resolve import latest_session, resume_session
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
    build_assistant_blocks,
    build_attachment,
    build_custom_title,
    build_last_prompt,
    build_local_command,
    build_system,
    build_tool_result,
    build_turn_duration,
    build_user_prompt,
    build_user_text,
    format_command,
    format_timestamp,
)
from sessiontree.model.conversation import format_no_conversation
from sessiontree.model.records import Record, SessionId, prompt_index
from sessiontree.storage.jsonl import append_records
from sessiontree.storage.layout import Layout, StrPath

JsonDict = dict[str, Any]


def _new_id() -> str:
    return str(uuidlib.uuid4())


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ClearPlan:
    """What ``/clear`` writes: a new session's file, opened with the command's records."""

    session_id: str
    path: Path
    env: Envelope
    records: tuple[JsonDict, ...]
    #: The end of the new session's active path (the next prompt hangs on it).
    leaf_uuid: str


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
    history: Layout | None = None
    _tool_uses: dict[str, str] = field(default_factory=dict, repr=False)

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
            history=layout if record_history else None,
        )

    @classmethod
    def open(
        cls,
        path: StrPath,
        *,
        history: Layout | None = None,
        clock: Callable[[], datetime] = _now,
        new_id: Callable[[], str] = _new_id,
    ) -> Session:
        """Continue an existing transcript (resume without forking appends to it): new
        records hang on the end of its active path, as the client's do."""
        return cls.from_transcript(
            Transcript.open(Path(path)), history=history, clock=clock, new_id=new_id
        )

    @classmethod
    def from_transcript(
        cls,
        transcript: Transcript,
        *,
        history: Layout | None = None,
        clock: Callable[[], datetime] = _now,
        new_id: Callable[[], str] = _new_id,
    ) -> Session:
        """:meth:`open` for a transcript already read (a command that also resolves a
        prompt in it reads a large file once)."""
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
            history=history,
        )
        if prompts:  # the turn in progress: its prompt id and text carry on
            last = prompts[-1]
            prompt_id = last.get("promptId")
            session._prompt_id = prompt_id if isinstance(prompt_id, str) else None
            session._prompt_text = last.text()
        session._tool_uses = _open_tool_calls(records)
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
        history = layout if record_history else None
        return cls.open(path, history=history, clock=clock, new_id=new_id)

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
        history = layout if record_history else None
        transcript = Transcript.open(resume_session(layout, ref, cache_file=cache_file))
        reason = transcript_no_conversation(transcript)  # a leaf on a sidechain, say
        if reason is not None:
            raise NotASession(str(transcript.path), reason, format_no_conversation(reason))
        return cls.from_transcript(transcript, history=history, clock=clock, new_id=new_id)

    @property
    def session_id(self) -> SessionId:
        return SessionId(self.env.session_id)

    def _stamp(self) -> str:
        return format_timestamp(self.clock())

    def _append(self, records: Sequence[JsonDict], *, fsync: bool = False) -> None:
        append_records(self.path, records, fsync=fsync)

    def _record_history(self, display: str, pastes: Mapping[int, str]) -> None:
        if self.history is not None:
            record_prompt_history(
                self.history,
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
        record = build_user_prompt(
            self.env,
            uuid=uuid,
            parent_uuid=self.tip,
            prompt_id=self._prompt_id,
            content=content,
            timestamp=self._stamp(),
            prompt_index=self.prompt_index,
        )
        self._append([record])
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
    ) -> str:
        """The result of a tool call made in this session's last response.

        As the client writes it: the result hangs on its own call's record (with parallel
        calls, each on its own block, in the order they finish), and what comes next
        hangs on the result written last."""
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
        )
        record["sourceToolAssistantUUID"] = source
        self._append([record])
        self.tip = uuid
        return uuid

    def append_bash_result(
        self, tool_use_id: str, stdout: str, stderr: str = "", *, spill: bool = True
    ) -> str:
        """The result of a Bash call, as the client records it: an output over 30,000
        bytes is saved to ``<sessionId>/tool-results/`` and the model gets the
        ``<persisted-output>`` reference with a preview (``spill=False`` keeps it inline;
        so does any stderr, as the client's wording for that case is not known here)."""
        text, result = bash_result(stdout, stderr)
        spilled = spill_tool_output(self.path, output=stdout) if spill and not stderr else None
        if spilled is not None:
            text, result = spilled.content, {**result, **spilled.tool_use_result_fields()}
        return self.append_tool_result(tool_use_id, text, tool_use_result=result)

    def append_attachment(
        self,
        attachment: Mapping[str, Any],
        *,
        rendered: Sequence[str] = (),
        rendered_role: Literal["user", "system"] = "user",
    ) -> str:
        """Context the host injects. ``rendered`` is what the model is sent, as a
        ``rendered_role`` message; an attachment with no rendered text is kept in the file
        but not sent. The client sends the stored text of a type it does not know; types
        it knows (``file``, ``date``, ``hook_additional_context``…) it checks against
        their data, so give those with all the fields it writes. Whether system-role
        texts go as system messages or as user text depends on the model (the client's
        "system turns")."""
        if self.tip is None:
            raise ValueError("an attachment hangs on a prompt or a response")
        uuid = self.new_id()
        record = build_attachment(
            self.env,
            uuid=uuid,
            parent_uuid=self.tip,
            attachment=attachment,
            timestamp=self._stamp(),
            rendered=rendered,
            rendered_role=rendered_role,
        )
        self._append([record])
        self.tip = uuid
        return uuid

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
        uuid = self.new_id()
        record = build_system(
            self.env,
            uuid=uuid,
            parent_uuid=self.tip,
            subtype=subtype,
            timestamp=self._stamp(),
            content=content,
            level=level,
            fields=fields,
        )
        self._append([record])
        self.tip = uuid
        return uuid

    def end_turn(self, *, duration_ms: int = 0, message_count: int | None = None) -> str:
        """Close the turn: ``system/turn_duration`` and the ``last-prompt`` bookmark,
        then fsync (a durable turn commit). The next prompt hangs on the turn end."""
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
            ),
            build_last_prompt(self.session_id, last_prompt=self._prompt_text, leaf_uuid=uuid),
        ]
        self._append(records, fsync=True)
        self.tip = uuid
        return uuid

    def plan_compact(self, summary: str, *, tools_used: Sequence[str] = ()) -> CompactPlan:
        """What :meth:`compact` would append (nothing is written)."""
        if self.tip is None:
            raise ValueError("nothing to compact")
        return plan_compact(
            summary,
            tip=self.tip,
            env=self.env,
            transcript_path=str(self.path),
            timestamp=self._stamp(),
            new_id=self.new_id,
            prompt_index=self.prompt_index,
            last_prompt=self._prompt_text,
            tools_used=tools_used,
        )

    def compact(self, summary: str, *, tools_used: Sequence[str] = ()) -> str:
        """Full compaction, as ``/compact`` writes it: a ``compact_boundary`` (a new root
        whose ``logicalParentUuid`` is the current tip) and the summary under it; the
        originals stay on disk. Returns the summary's uuid (the new tip)."""
        plan = self.plan_compact(summary, tools_used=tools_used)
        self._append(plan.records, fsync=True)
        self.tip = plan.summary_uuid
        return plan.summary_uuid

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
    ) -> SummarizePlan:
        """``/rewind`` → "Summarize from here" (``direction="from"``) or "up to here"
        (``"up_to"``) at a prompt on the active path: a boundary and the summary, the
        kept records re-linked by readers, nothing re-written or removed (see
        :mod:`sessiontree.conversation.summarize`). The next record hangs on the returned
        plan's leaf."""
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
            plan.path, plan.env, clock=self.clock, new_id=self.new_id, history=self.history
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
