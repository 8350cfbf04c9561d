"""Metadata records (no uuid, last one wins): resume bookmarks, titles, checkpoints, and
the ``/branch`` copy of a conversation."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sessiontree.model.builders.envelope import JsonDict
from sessiontree.model.records import NULL_UUID, one_line

#: ``lastPrompt`` is the prompt with whitespace collapsed, cut to this many characters.
LAST_PROMPT_LIMIT = 200


def format_last_prompt(text: str) -> str:
    """``lastPrompt``: whitespace collapsed, cut to 200 characters with an ellipsis."""
    return one_line(text, LAST_PROMPT_LIMIT)


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


def build_queue_operation(
    session_id: str, *, operation: str, timestamp: str, content: str | None = None
) -> JsonDict:
    """``queue-operation``: a queued input (``enqueue`` with its content, ``dequeue``)."""
    record: JsonDict = {
        "type": "queue-operation",
        "operation": operation,
        "timestamp": timestamp,
        "sessionId": session_id,
    }
    if content is not None:
        record["content"] = content
    return record


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
