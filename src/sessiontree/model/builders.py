"""Pure builders for records in Claude Code's own shape (as client 2.1.328 writes them).

Every function here returns a fresh ``dict`` with the format's camelCase keys *in the
order the real client writes them* (checked against the fixtures record by record, see
``tests/test_builders.py``). Nothing here reads a clock, draws a random id or touches a
file: callers pass uuids, message ids and timestamps in (``format_timestamp`` turns a
``datetime`` into the format's ISO-with-milliseconds string).

Who calls what, in the order the client writes a turn::

    build_snapshot(prompt uuid)          file-history-snapshot, before the prompt
    build_user_prompt(...)               the typed prompt (root: parent_uuid=None)
    build_attachment(...)                context the client injects (first prompt etc.)
    build_assistant_blocks(...)          one record per content block of one response
    build_snapshot_delta(...)            a file's first backup, before its tool result
    build_tool_result(...)               the user record carrying a tool_result block
    build_turn_duration(...)             end of turn; the next prompt hangs on it
    build_last_prompt(...)               resume bookmark (``build_rewind_marker`` on rewind)

Compaction is ``build_compact_boundary`` + ``build_compact_summary``; a ``/branch`` copy
is ``build_fork_records``; ``history.jsonl`` lines are ``build_history_entry``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sessiontree.model.records import NULL_UUID

JsonDict = dict[str, Any]

#: The client version whose shapes these builders reproduce.
CLIENT_VERSION = "2.1.328"

RenderedRole = Literal["user", "system"]

WRITE_CREATED_TEXT = (
    "File created successfully at: {path} (file state is current in your context \u2014 "
    "no need to Read it back)"
)
FILE_UPDATED_TEXT = (
    "The file {path} has been updated successfully. (file state is current in your "
    "context \u2014 no need to Read it back)"
)
BASH_NO_OUTPUT_TEXT = "(Bash completed with no output)"
COMPACT_BOUNDARY_TEXT = "Conversation compacted"
LOCAL_COMMAND_CAVEAT = (
    "<local-command-caveat>The command below was run directly in Claude Code, not sent to "
    "you as a request, and its output goes straight to the user. It's recorded here as "
    "context for later messages.</local-command-caveat>"
)

#: Pastes longer than this many characters go to ``paste-cache/`` (history keeps a hash).
INLINE_PASTE_LIMIT = 1024
#: ``lastPrompt`` is the prompt with whitespace collapsed, cut to this many characters.
LAST_PROMPT_LIMIT = 200

_PLACEHOLDER = re.compile(r"\[Pasted text #(\d+)(?: \+\d+ lines)?\]")


# -- time ------------------------------------------------------------------------------


def format_timestamp(moment: datetime) -> str:
    """``2026-11-29T19:16:27.352Z``: UTC, milliseconds, ``Z`` (naive means UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the epoch, as ``history.jsonl`` stores ``timestamp``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


# -- the envelope shared by chain records ----------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Envelope:
    """Who wrote a chain record: the fields every user/assistant/system/attachment carries.

    ``agent_id`` is set only for a subagent's sidechain transcript (its records then carry
    ``isSidechain: true`` and ``agentId``). ``slug`` and ``session_kind`` are written by the
    client only in some sessions (after compaction, in background sessions).
    """

    session_id: str
    cwd: str
    version: str = CLIENT_VERSION
    git_branch: str = "HEAD"
    user_type: str = "external"
    entrypoint: str = "cli"
    slug: str | None = None
    session_kind: str | None = None
    agent_id: str | None = None

    @property
    def is_sidechain(self) -> bool:
        return self.agent_id is not None


def _head(env: Envelope, parent_uuid: str | None) -> JsonDict:
    return {"parentUuid": parent_uuid, "isSidechain": env.is_sidechain}


def _agent(env: Envelope) -> JsonDict:
    return {"agentId": env.agent_id} if env.agent_id is not None else {}


def _echo(env: Envelope, echo: bool) -> JsonDict:
    """The snake_case ``session_id`` duplicate the client adds to some main-chain records."""
    return {"session_id": env.session_id} if echo and not env.is_sidechain else {}


def _tail(env: Envelope) -> JsonDict:
    tail: JsonDict = {
        "userType": env.user_type,
        "entrypoint": env.entrypoint,
        "cwd": env.cwd,
        "sessionId": env.session_id,
        "version": env.version,
        "gitBranch": env.git_branch,
    }
    if env.slug is not None:
        tail["slug"] = env.slug
    if env.session_kind is not None:
        tail["sessionKind"] = env.session_kind
    return tail


# -- user records ----------------------------------------------------------------------


def build_user_prompt(
    env: Envelope,
    *,
    uuid: str,
    parent_uuid: str | None,
    prompt_id: str,
    content: str | list[JsonDict],
    timestamp: str,
    prompt_index: int,
    turn_index: int | None = None,
    permission_mode: str = "default",
    origin: Mapping[str, Any] | None = None,
    prompt_source: str = "typed",
    turn_origin: str = "human",
    queue_skip_attachments: bool = False,
) -> JsonDict:
    """A prompt the user typed (or, with ``origin``, one the client queued for them).

    ``prompt_index`` counts prompts on the active path (a re-send after a rewind reuses
    the index of the prompt it replaces); ``turn_index`` also counts task-notification
    turns and defaults to ``prompt_index``.
    """
    record: JsonDict = {
        **_head(env, parent_uuid),
        "promptId": prompt_id,
        "type": "user",
        "message": {"role": "user", "content": content},
        "uuid": uuid,
        "timestamp": timestamp,
        "permissionMode": permission_mode,
        "origin": dict(origin) if origin is not None else {"kind": "human"},
        "promptSource": prompt_source,
        "turnOrigin": turn_origin,
        "turnPosition": {
            "promptIndex": prompt_index,
            "turnIndex": prompt_index if turn_index is None else turn_index,
        },
    }
    if queue_skip_attachments:
        record["queueSkipAttachments"] = True
    return {**record, **_tail(env)}


def build_task_notification(
    env: Envelope,
    *,
    uuid: str,
    parent_uuid: str,
    prompt_id: str,
    content: str,
    timestamp: str,
    prompt_index: int,
    turn_index: int,
    run_id: str,
    permission_mode: str = "default",
) -> JsonDict:
    """The ``<task-notification>`` user record that starts a turn when a background task ends."""
    return build_user_prompt(
        env,
        uuid=uuid,
        parent_uuid=parent_uuid,
        prompt_id=prompt_id,
        content=content,
        timestamp=timestamp,
        prompt_index=prompt_index,
        turn_index=turn_index,
        permission_mode=permission_mode,
        origin={"kind": "task-notification", "producer": "session-task", "runId": run_id},
        prompt_source="system",
        turn_origin="task_notification",
        queue_skip_attachments=True,
    )


def build_user_text(
    env: Envelope,
    *,
    uuid: str,
    parent_uuid: str | None,
    prompt_id: str,
    content: str,
    timestamp: str,
    is_meta: bool = False,
    echo_session_id: bool = True,
) -> JsonDict:
    """A user record the client writes itself: a caveat (``is_meta``), a slash command,
    its ``<local-command-stdout>``, or a subagent's first prompt (``env.agent_id`` set)."""
    record: JsonDict = {
        **_head(env, parent_uuid),
        "promptId": prompt_id,
        **_agent(env),
        "type": "user",
        "message": {"role": "user", "content": content},
    }
    if is_meta:
        record["isMeta"] = True
    record["uuid"] = uuid
    record["timestamp"] = timestamp
    return {**record, **_echo(env, echo_session_id), **_tail(env)}


def build_tool_result(
    env: Envelope,
    *,
    uuid: str,
    parent_uuid: str,
    prompt_id: str,
    tool_use_id: str,
    content: str | list[JsonDict],
    tool_use_result: Any,
    timestamp: str,
    is_error: bool | None = None,
    sandboxed: bool | None = None,
    permission_decision: Mapping[str, Any] | None = None,
) -> JsonDict:
    """The user record holding one ``tool_result`` block, after the tool_use record
    ``parent_uuid`` (which is also its ``sourceToolAssistantUUID``). ``sandboxed`` is
    written for Bash; ``permission_decision`` defaults to an accept by config."""
    block: JsonDict = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    record: JsonDict = {
        **_head(env, parent_uuid),
        "promptId": prompt_id,
        **_agent(env),
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "uuid": uuid,
        "timestamp": timestamp,
        "toolUseResult": tool_use_result,
    }
    if sandboxed is not None:
        record["sandboxed"] = sandboxed
    record["sourceToolAssistantUUID"] = parent_uuid
    record["permissionDecision"] = (
        dict(permission_decision)
        if permission_decision is not None
        else {"decision": "accept", "source": "config", "reasonType": "mode"}
    )
    return {**record, **_echo(env, True), **_tail(env)}


# -- assistant records -----------------------------------------------------------------


def build_usage(
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
    service_tier: str = "standard",
) -> JsonDict:
    """``message.usage`` as 2.1.328 stores it (cache creation counted as 5-minute)."""
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_creation_input_tokens,
        "cache_read_input_tokens": cache_read_input_tokens,
        "output_tokens": output_tokens,
        "output_tokens_details": {"thinking_tokens": 0},
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": service_tier,
        "cache_creation": {
            "ephemeral_1h_input_tokens": 0,
            "ephemeral_5m_input_tokens": cache_creation_input_tokens,
        },
        "inference_geo": "",
        "iterations": [],
        "speed": "standard",
        "fallback_credit": None,
    }


def build_assistant_blocks(
    env: Envelope,
    *,
    uuids: Sequence[str],
    parent_uuid: str,
    message_id: str,
    request_ref: str,
    blocks: Sequence[JsonDict],
    timestamps: Sequence[str],
    model: str,
    stop_reason: str,
    usage: Mapping[str, Any],
    effort: str = "medium",
    attribution_agent: str | None = None,
    tool_input_stream_ms: int = 1,
) -> list[JsonDict]:
    """One API response as the client stores it: one record per content block.

    The records chain one after another (the first on ``parent_uuid``) and share
    ``message.id``, ``requestRef`` (the id of the ``api-request`` record; older clients
    wrote ``requestId``), ``stop_reason`` and ``usage`` (count it once per message id).
    ``attribution_agent`` is the subagent type, for sidechain records.
    """
    if not (len(uuids) == len(blocks) == len(timestamps)) or not blocks:
        raise ValueError("need one uuid and one timestamp per block, and at least one block")
    records: list[JsonDict] = []
    parent = parent_uuid
    for index, (uuid, block, timestamp) in enumerate(zip(uuids, blocks, timestamps, strict=True)):
        record: JsonDict = {
            **_head(env, parent),
            **_agent(env),
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [dict(block)],
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": dict(usage),
                "stop_details": None,
            },
        }
        if block.get("type") == "tool_use":
            record["toolInputStreamMs"] = tool_input_stream_ms
        record.update(
            {
                "apiBlockIndex": index,
                "requestRef": request_ref,
                "requestedModel": model,
                "promptCacheRequested": "5m",
            }
        )
        if attribution_agent is not None:
            record["attributionAgent"] = attribution_agent
        record.update(
            {
                "type": "assistant",
                "uuid": uuid,
                "timestamp": timestamp,
                "effort": effort,
                "perTurnEffort": effort,
                "madeBy": "model",
            }
        )
        records.append({**record, **_echo(env, True), **_tail(env)})
        parent = uuid
    return records


def text_block(text: str) -> JsonDict:
    return {"type": "text", "text": text}


def tool_use_block(tool_use_id: str, name: str, tool_input: Mapping[str, Any]) -> JsonDict:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": dict(tool_input)}


# -- attachments and system records ----------------------------------------------------


def build_attachment(
    env: Envelope,
    *,
    uuid: str,
    parent_uuid: str,
    attachment: Mapping[str, Any],
    timestamp: str,
    rendered: Sequence[str] = (),
    rendered_role: RenderedRole | None = None,
    rendered_beside_tool_result: bool = False,
    echo_session_id: bool = False,
) -> JsonDict:
    """Context the client injected (``attachment.type``: environment, date, file, …).

    ``rendered`` texts are what the model is sent, in ``rendered_role``; attachments with
    no rendered text (``session_context``, ``prompt_snapshot``) are not sent at all.
    """
    record: JsonDict = {
        **_head(env, parent_uuid),
        **_agent(env),
        "attachment": dict(attachment),
        "type": "attachment",
        "uuid": uuid,
        "timestamp": timestamp,
    }
    if rendered:
        record["rendered"] = [{"content": text} for text in rendered]
        record["renderedRole"] = rendered_role or "user"
        if rendered_beside_tool_result:
            record["renderedBesideToolResult"] = True
    return {**record, **_echo(env, echo_session_id), **_tail(env)}


def date_attachment(day: str) -> tuple[JsonDict, str]:
    """``(attachment, rendered text)`` for the ``date`` attachment (``day`` = YYYY-MM-DD)."""
    return (
        {"type": "date", "date": day},
        f"<system-reminder>\nToday's date is {day}.\n</system-reminder>",
    )


def environment_attachment(
    cwd: str,
    *,
    is_git_repo: bool = False,
    platform: str = "linux",
    shell: str = "bash",
    os_version: str = "Linux",
) -> tuple[JsonDict, str]:
    """``(attachment, rendered text)`` for the ``environment`` attachment of a first prompt."""
    attachment = {
        "type": "environment",
        "snapshot": {
            "workingDirectory": cwd,
            "isWorktree": False,
            "isGitRepo": is_git_repo,
            "additionalWorkingDirectories": [],
            "platform": platform,
            "shell": shell,
            "osVersion": os_version,
        },
    }
    text = (
        "<system-reminder>\n# Environment\nYou have been invoked in the following "
        f"environment: \n - Primary working directory: {cwd}\n"
        f" - Is a git repository: {str(is_git_repo).lower()}\n - Platform: {platform}\n"
        f" - Shell: {shell}\n - OS Version: {os_version}\n</system-reminder>"
    )
    return attachment, text


def build_turn_duration(
    env: Envelope,
    *,
    uuid: str,
    parent_uuid: str,
    duration_ms: int,
    message_count: int,
    timestamp: str,
    pending_background_agents: int | None = None,
) -> JsonDict:
    """``system/turn_duration``: the end of an interactive turn (``-p`` writes none)."""
    record: JsonDict = {
        **_head(env, parent_uuid),
        "type": "system",
        "subtype": "turn_duration",
        "durationMs": duration_ms,
        "messageCount": message_count,
    }
    if pending_background_agents is not None:
        record["pendingBackgroundAgentCount"] = pending_background_agents
    record.update({"timestamp": timestamp, "uuid": uuid, "isMeta": False})
    return {**record, **_tail(env)}


@dataclass(frozen=True)
class PreservedSegment:
    """Kept messages of a compaction: ``head``..``tail`` are re-linked after ``anchor``."""

    head_uuid: str
    anchor_uuid: str
    tail_uuid: str
    uuids: tuple[str, ...]


def build_compact_boundary(
    env: Envelope,
    *,
    uuid: str,
    logical_parent_uuid: str,
    timestamp: str,
    pre_tokens: int,
    post_tokens: int,
    trigger: Literal["manual", "auto"] = "manual",
    duration_ms: int = 0,
    messages_summarized: int | None = None,
    preserved: PreservedSegment | None = None,
) -> JsonDict:
    """``system/compact_boundary``: a new root (``parentUuid`` null) after compaction.

    ``logical_parent_uuid`` is the last record before compaction; the summarized history
    stays on disk behind it. With ``preserved``, the kept messages are not re-written:
    readers re-link ``head`` after ``anchor`` (the summary, or the boundary itself).
    """
    metadata: JsonDict = {"trigger": trigger, "preTokens": pre_tokens}
    if messages_summarized is not None:
        metadata["messagesSummarized"] = messages_summarized
    metadata.update({"postTokens": post_tokens, "cumulativeDroppedTokens": 0})
    metadata["durationMs"] = duration_ms
    if preserved is not None:
        metadata["preservedSegment"] = {
            "headUuid": preserved.head_uuid,
            "anchorUuid": preserved.anchor_uuid,
            "tailUuid": preserved.tail_uuid,
        }
        metadata["preservedMessages"] = {
            "anchorUuid": preserved.anchor_uuid,
            "uuids": list(preserved.uuids),
            "allUuids": list(preserved.uuids),
        }
    metadata["preCompactOrganizationsCoverStart"] = False
    return {
        "parentUuid": None,
        "logicalParentUuid": logical_parent_uuid,
        "isSidechain": env.is_sidechain,
        "type": "system",
        "subtype": "compact_boundary",
        "content": COMPACT_BOUNDARY_TEXT,
        "level": "info",
        "compactMetadata": metadata,
        "uuid": uuid,
        "timestamp": timestamp,
        **_tail(env),
    }


def format_compact_summary(
    summary: str,
    *,
    transcript_path: str,
    tools_used: Iterable[str],
    continue_directly: bool = True,
    has_preserved_messages: bool = True,
) -> str:
    """The text of the summary message the client sends after compaction."""
    tools = ", ".join(sorted(set(tools_used)))
    text = (
        "This session is being continued from a previous conversation that ran out of "
        "context. The summary below covers the earlier portion of the conversation.\n\n"
        f"<system-reminder>\n<tools-used-before-summary>{tools}</tools-used-before-summary>\n"
        f"</system-reminder>\nSummary:\n{summary}\n\n"
        "If you need specific details from before compaction (like exact code snippets, "
        "error messages, or content you generated), read the full transcript at: "
        f"{transcript_path}"
    )
    if continue_directly:
        text += (
            "\nContinue the conversation from where it left off without asking the user any "
            "further questions. Resume directly \u2014 do not acknowledge the summary, do not "
            'recap what was happening, do not preface with "I\'ll continue" or similar. '
            "Pick up the last task as if the break never happened."
        )
    if has_preserved_messages:
        text += (
            "\n\nThe messages after this summary are the most recent messages from before "
            "compaction, kept verbatim. The summary was written without seeing them, so "
            "something it says has not happened yet may already have happened in them."
        )
    return text


def build_compact_summary(
    env: Envelope,
    *,
    uuid: str,
    boundary_uuid: str,
    prompt_id: str,
    text: str,
    timestamp: str,
    prompt_index: int,
    turn_index: int | None = None,
    direction: Literal["from", "up_to"] | None = None,
    messages_summarized: int | None = None,
) -> JsonDict:
    """The ``isCompactSummary`` user record, child of its boundary.

    Full ``/compact`` writes it ``isVisibleInTranscriptOnly``; a partial "summarize from
    here / up to here" (``direction``) writes ``summarizeMetadata`` instead.
    """
    record: JsonDict = {
        "parentUuid": boundary_uuid,
        "isSidechain": env.is_sidechain,
        "promptId": prompt_id,
        "type": "user",
        "message": {"role": "user", "content": text},
    }
    if direction is None:
        record["isVisibleInTranscriptOnly"] = True
        record["isCompactSummary"] = True
    else:
        record["isCompactSummary"] = True
        record["summarizeMetadata"] = {
            "messagesSummarized": messages_summarized or 0,
            "direction": direction,
        }
    record.update(
        {
            "uuid": uuid,
            "timestamp": timestamp,
            "turnPosition": {
                "promptIndex": prompt_index,
                "turnIndex": prompt_index if turn_index is None else turn_index,
            },
        }
    )
    return {**record, **_echo(env, direction is None), **_tail(env)}


# -- metadata records ------------------------------------------------------------------


def format_last_prompt(text: str) -> str:
    """``lastPrompt``: whitespace collapsed, cut to 200 characters with an ellipsis."""
    collapsed = " ".join(text.split())
    if len(collapsed) <= LAST_PROMPT_LIMIT:
        return collapsed
    return collapsed[: LAST_PROMPT_LIMIT - 1] + "\u2026"


def build_last_prompt(
    session_id: str, *, last_prompt: str, leaf_uuid: str, explicit: bool = False
) -> JsonDict:
    """The resume bookmark: ``leaf_uuid`` is the active leaf when it was written."""
    record: JsonDict = {
        "type": "last-prompt",
        "lastPrompt": format_last_prompt(last_prompt),
        "leafUuid": leaf_uuid,
    }
    if explicit:
        record["explicit"] = True
    record["sessionId"] = session_id
    return record


def build_rewind_marker(session_id: str) -> JsonDict:
    """The all-zero ``last-prompt`` written right after a prompt sent from a rewind."""
    return {"type": "last-prompt", "leafUuid": NULL_UUID, "explicit": True, "sessionId": session_id}


def build_custom_title(session_id: str, title: str) -> JsonDict:
    """A title the user set (``/rename``, ``/branch``): wins over the AI title."""
    return {"type": "custom-title", "customTitle": title, "sessionId": session_id}


def build_ai_title(session_id: str, title: str) -> JsonDict:
    return {"type": "ai-title", "aiTitle": title, "sessionId": session_id}


@dataclass(frozen=True)
class Backup:
    """One tracked file's checkpoint: ``backup_file_name`` None means "did not exist"."""

    backup_file_name: str | None
    version: int
    backup_time: str
    real_parent_dir: str

    def to_json(self) -> JsonDict:
        return {
            "backupFileName": self.backup_file_name,
            "version": self.version,
            "backupTime": self.backup_time,
            "realParentDir": self.real_parent_dir,
        }


def build_snapshot(
    message_id: str,
    tracked: Mapping[str, Backup],
    *,
    timestamp: str,
    is_update: bool = False,
    has_untracked_changes: bool = False,
) -> JsonDict:
    """``file-history-snapshot`` for the prompt ``message_id``: every tracked file, keyed by
    its path relative to the project (absolute outside it)."""
    snapshot: JsonDict = {
        "messageId": message_id,
        "trackedFileBackups": {path: backup.to_json() for path, backup in tracked.items()},
        "timestamp": timestamp,
    }
    if has_untracked_changes:
        snapshot["hasUntrackedChanges"] = True
    return {
        "type": "file-history-snapshot",
        "messageId": message_id,
        "snapshot": snapshot,
        "isSnapshotUpdate": is_update,
    }


def build_snapshot_delta(
    message_id: str,
    *,
    snapshot_message_id: str,
    tracking_path: str,
    backup: Backup,
    timestamp: str,
) -> JsonDict:
    """``file-history-delta``: one file's first backup in a prompt, folded into the snapshot
    of ``snapshot_message_id``; ``message_id`` is the tool_use record that edits it."""
    return {
        "type": "file-history-delta",
        "messageId": message_id,
        "snapshotMessageId": snapshot_message_id,
        "trackingPath": tracking_path,
        "backup": backup.to_json(),
        "timestamp": timestamp,
    }


# -- forks -----------------------------------------------------------------------------


def build_fork_records(
    path_records: Iterable[Mapping[str, Any]], *, new_session_id: str
) -> list[JsonDict]:
    """What ``/branch`` writes: the conversation's chain records copied into a new session.

    uuids are kept; ``sessionId`` becomes the new one; ``parentUuid`` is rebuilt as a
    linear chain over the copies; ``sessionKind`` is dropped; each copy gets ``forkedFrom:
    {sessionId, messageUuid}`` naming its original. Sidechain records are not copied.
    """
    out: list[JsonDict] = []
    parent: str | None = None
    for record in path_records:
        if record.get("isSidechain") is True or not isinstance(record.get("uuid"), str):
            continue
        copy = {k: v for k, v in record.items() if k != "sessionKind"}
        copy.update(
            {
                "sessionId": new_session_id,
                "parentUuid": parent,
                "isSidechain": False,
                "forkedFrom": {"sessionId": record.get("sessionId"), "messageUuid": record["uuid"]},
            }
        )
        if "session_id" in copy:
            copy["session_id"] = new_session_id
        out.append(copy)
        parent = record["uuid"]
    return out


def fork_title(title: str, *, taken: Iterable[str] = ()) -> str:
    """``"<title> (Branch)"``, then ``(Branch 2)``, ``(Branch 3)``… if already taken."""
    used = set(taken)
    candidate = f"{title} (Branch)"
    number = 2
    while candidate in used:
        candidate = f"{title} (Branch {number})"
        number += 1
    return candidate


# -- history.jsonl ---------------------------------------------------------------------


def paste_placeholder(paste_id: int, text: str) -> str:
    """``[Pasted text #N +L lines]`` as the prompt box shows a paste (L = its newlines)."""
    return f"[Pasted text #{paste_id} +{text.count(chr(10))} lines]"


def is_large_paste(text: str) -> bool:
    """True when the client stores the paste in ``paste-cache/`` instead of inline."""
    return len(text) > INLINE_PASTE_LIMIT


def build_pasted_text(paste_id: int, text: str, *, content_hash: str | None = None) -> JsonDict:
    """One ``pastedContents`` entry: inline ``content``, or ``contentHash`` for a large paste
    (``content_hash`` = ``sha256(text)[:16]``, the stem of its paste-cache file)."""
    if content_hash is not None:
        return {"id": paste_id, "type": "text", "contentHash": content_hash}
    return {"id": paste_id, "type": "text", "content": text}


def expand_pastes(
    display: str, texts: Mapping[int, str], *, tag_ids: Mapping[int, str] | None = None
) -> str:
    """The prompt text sent for ``display``: each placeholder replaced by its paste.

    With a ``tag_ids`` entry the paste is wrapped as the transcript stores large pastes:
    ``\\n\\n<pasted_content id="X">\\n…\\n</pasted_content id="X">\\n\\n``.
    """

    def replace(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number not in texts:
            return match.group(0)
        tag = (tag_ids or {}).get(number)
        if tag is None:
            return texts[number]
        return f'\n\n<pasted_content id="{tag}">\n{texts[number]}\n</pasted_content id="{tag}">\n\n'

    return _PLACEHOLDER.sub(replace, display)


def build_history_entry(
    *,
    display: str,
    timestamp_ms: int,
    project: str,
    session_id: str,
    pasted_contents: Mapping[int, JsonDict] | None = None,
) -> JsonDict:
    """One ``history.jsonl`` line: what the user typed (slash commands included)."""
    return {
        "display": display,
        "pastedContents": {str(k): dict(v) for k, v in (pasted_contents or {}).items()},
        "timestamp": timestamp_ms,
        "project": project,
        "sessionId": session_id,
    }


# -- tool results (``toolUseResult`` and the text the model sees) ----------------------


def build_structured_patch(old: str, new: str, *, context: int = 3) -> list[JsonDict]:
    """Hunks ``{oldStart, oldLines, newStart, newLines, lines}`` like the client's Edit."""
    a, b = old.splitlines(), new.splitlines()
    hunks: list[JsonDict] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines: list[str] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines.extend(" " + line for line in a[a1:a2])
            else:
                lines.extend("-" + line for line in a[a1:a2])
                lines.extend("+" + line for line in b[b1:b2])
        hunks.append(
            {
                "oldStart": i1 + 1 if i2 > i1 else i1,
                "oldLines": i2 - i1,
                "newStart": j1 + 1 if j2 > j1 else j1,
                "newLines": j2 - j1,
                "lines": lines,
            }
        )
    return hunks


def write_result(
    file_path: str, content: str, *, original: str | None = None
) -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of a Write (``original`` None: file created)."""
    result: JsonDict = {
        "type": "create" if original is None else "update",
        "filePath": file_path,
        "content": content,
        "structuredPatch": [] if original is None else build_structured_patch(original, content),
        "originalFile": original,
        "userModified": False,
    }
    template = WRITE_CREATED_TEXT if original is None else FILE_UPDATED_TEXT
    return template.format(path=file_path), result


def edit_result(
    file_path: str, *, original: str, old_string: str, new_string: str, replace_all: bool = False
) -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of an Edit of ``original``."""
    count = -1 if replace_all else 1
    updated = original.replace(old_string, new_string, count)
    result: JsonDict = {
        "filePath": file_path,
        "oldString": old_string,
        "newString": new_string,
        "originalFile": original,
        "structuredPatch": build_structured_patch(original, updated),
        "userModified": False,
        "replaceAll": replace_all,
    }
    return FILE_UPDATED_TEXT.format(path=file_path), result


def read_result(file_path: str, content: str) -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of a whole-file Read (``N\\tline`` numbering)."""
    lines = content.split("\n")
    text = "\n".join(f"{number}\t{line}" for number, line in enumerate(lines, 1))
    result: JsonDict = {
        "type": "text",
        "file": {
            "filePath": file_path,
            "content": content,
            "numLines": len(lines),
            "startLine": 1,
            "totalLines": len(lines),
        },
    }
    return text, result


def bash_result(stdout: str, stderr: str = "") -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of a Bash call that exited normally."""
    result: JsonDict = {
        "stdout": stdout,
        "stderr": stderr,
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }
    text = "\n".join(part for part in (stdout, stderr) if part) or BASH_NO_OUTPUT_TEXT
    return text, result


def build_subagent_meta(
    *,
    agent_type: str,
    description: str,
    tool_use_id: str,
    model: str,
    finished: bool = True,
    background: bool = True,
) -> JsonDict:
    """``subagents/agent-<id>.meta.json`` beside a subagent's sidechain transcript."""
    return {
        "agentType": agent_type,
        "isBuiltIn": True,
        "launchedWithDefaults": True,
        "description": description,
        "toolUseId": tool_use_id,
        "spawnDepth": 1,
        "requestShape": "background" if background else "foreground",
        "requestNonInteractive": True,
        "model": model,
        "pickedEffortModel": model,
        "finished": finished,
    }
