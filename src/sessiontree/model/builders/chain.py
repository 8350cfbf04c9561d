"""Chain records of a turn: prompts, assistant blocks, tool results, attachments, turn end."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from sessiontree.model.builders.envelope import Envelope, JsonDict, _agent, _echo, _head, _tail

RenderedRole = Literal["user", "system"]


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
    prompt_id: str | None,
    content: str,
    timestamp: str,
    is_meta: bool = False,
    echo_session_id: bool = True,
) -> JsonDict:
    """A user record the client writes itself: a caveat (``is_meta``), a slash command,
    its ``<local-command-stdout>``, or a subagent's first prompt (``env.agent_id`` set).
    The records that open a session after ``/clear`` carry no ``promptId`` (None)."""
    record: JsonDict = {**_head(env, parent_uuid)}
    if prompt_id is not None:
        record["promptId"] = prompt_id
    record |= {
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


def format_command(name: str, args: str = "") -> str:
    """How a slash command is recorded: ``<command-name>/clear</command-name>`` and so on."""
    return (
        f"<command-name>/{name}</command-name>\n            <command-message>{name}"
        f"</command-message>\n            <command-args>{args}</command-args>"
    )


def build_local_command(
    env: Envelope,
    *,
    uuid: str,
    parent_uuid: str | None,
    content: str,
    timestamp: str,
    command: str | None = None,
    args: str = "",
) -> JsonDict:
    """``system/local_command``: a slash command or its ``<local-command-stdout>``, which
    the model is sent as user text. ``command`` adds ``commandRun`` (on the stdout record)."""
    record: JsonDict = {
        **_head(env, parent_uuid),
        "type": "system",
        "subtype": "local_command",
        "content": content,
        "level": "info",
        "timestamp": timestamp,
        "uuid": uuid,
        "isMeta": False,
    }
    if command is not None:
        record["commandRun"] = {"command": command, "args": args}
    return {**record, **_tail(env)}


def build_system(
    env: Envelope,
    *,
    uuid: str,
    parent_uuid: str | None,
    subtype: str,
    timestamp: str,
    content: str | None = None,
    level: str = "info",
    fields: Mapping[str, Any] | None = None,
) -> JsonDict:
    """A ``system`` record of any ``subtype`` (``informational``, ``api_error``, …), extra
    ``fields`` as given. Of system records, the model is sent ``local_command`` only."""
    record: JsonDict = {**_head(env, parent_uuid), "type": "system", "subtype": subtype}
    if content is not None:
        record["content"] = content
    record.update({"level": level, **dict(fields or {})})
    record.update({"timestamp": timestamp, "uuid": uuid, "isMeta": False})
    return {**record, **_tail(env)}


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
