"""The records a host writes itself, beside the model's responses and the tools' results,
each as client 2.1.328 writes it (seen driving it against stand-in APIs):

* a turn the user stopped (:func:`write_interruption`): what had streamed, kept as a
  response with no stop reason (:func:`keep_partial`); the user record
  ``[Request interrupted by user]`` (``... for tool use]`` when tools were running); the
  ``last-prompt`` bookmark; no turn end;
* a turn the API failed (:func:`write_api_error`): a ``<synthetic>`` assistant record
  ``API Error: <status> <message>`` flagged ``isApiErrorMessage``, then the bookmark;
* what SessionStart hooks printed (:func:`write_start_context`): attachments the prompt
  hangs on, sent as system text;
* a slash command's checkpoint (:func:`command_checkpoint`): ``/compact`` and ``/clear``
  get a ``file-history-snapshot`` for their command record, as a prompt does.

They reach into :class:`Session` for its appender and the prompt in progress; what they
write is fsynced where it ends a turn.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from typing import Any, cast

from sessiontree.agent.provider import Interrupted, ProviderError
from sessiontree.model.builders import (
    build_assistant_blocks,
    build_attachment,
    build_last_prompt,
    build_user_text,
    format_timestamp,
)
from sessiontree.session.session import Session

JsonDict = dict[str, Any]

#: What the client records when the user stops a response as it streams.
INTERRUPTED = "[Request interrupted by user]"
#: ... and when the user stops while tools run.
INTERRUPTED_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
#: The model the client names on records it writes itself.
SYNTHETIC_MODEL = "<synthetic>"

ZERO_USAGE: JsonDict = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def keep_partial(session: Session, stopped: Interrupted, *, model: str) -> None:
    """What had streamed when the user stopped a response: the text and thinking blocks
    that arrived, as a response with no stop reason (nothing when none had)."""
    blocks = [
        b
        for b in stopped.partial
        if (b.get("type") == "text" and b.get("text"))
        or (b.get("type") == "thinking" and b.get("thinking"))
    ]
    if blocks:
        session.append_response(
            blocks,
            model=stopped.model or model,
            stop_reason=cast(str, None),  # the client writes null: the response never stopped
            usage=stopped.usage or ZERO_USAGE,
            message_id=stopped.message_id,
        )


def _bookmark(session: Session, leaf: str) -> JsonDict:
    return build_last_prompt(session.session_id, last_prompt=session._prompt_text, leaf_uuid=leaf)


def write_interruption(session: Session, text: str) -> str:
    """The user record that says the turn was stopped, and the bookmark on it, fsynced."""
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
    session._append([record, _bookmark(session, uuid)], fsync=True)
    session.tip = uuid
    return uuid


def api_error_text(error: ProviderError) -> str:
    """``API Error: 400 <message>``, as the client shows and records it."""
    status = f"{error.status} " if error.status is not None else ""
    return f"API Error: {status}{error.message}"


def write_api_error(session: Session, error: ProviderError) -> str:
    """The record of a request the API failed for good, and the bookmark, fsynced."""
    if session.tip is None:
        raise ValueError("an API error answers a prompt")
    uuid = session.new_id()
    (record,) = build_assistant_blocks(
        session.env,
        uuids=[uuid],
        parent_uuid=session.tip,
        message_id=str(uuidlib.uuid4()),
        request_ref=session.new_id(),
        blocks=[{"type": "text", "text": api_error_text(error)}],
        timestamps=[format_timestamp(session.clock())],
        model=SYNTHETIC_MODEL,
        stop_reason="stop_sequence",
        usage=ZERO_USAGE,
    )
    record["message"]["stop_sequence"] = ""
    for key in ("requestRef", "requestedModel", "promptCacheRequested", "apiBlockIndex"):
        record.pop(key, None)
    record |= {"error": "unknown", "isApiErrorMessage": True}
    if error.status is not None:
        record["apiErrorStatus"] = error.status
    if error.error_type is not None:
        record["apiErrorType"] = error.error_type
    session._append([record, _bookmark(session, uuid)], fsync=True)
    session.tip = uuid
    return uuid


def write_start_context(session: Session, attachments: Sequence[tuple[JsonDict, str]]) -> None:
    """Attachments sent as system text (``(attachment, rendered text)``), one after
    another from the tip (the first record of a new session)."""
    for attachment, text in attachments:
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


def command_checkpoint(
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
