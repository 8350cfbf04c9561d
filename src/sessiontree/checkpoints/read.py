"""File checkpoints (``file-history``): the snapshots a transcript records, deltas folded in.

At each prompt the client writes a ``file-history-snapshot`` (``messageId`` = the prompt's
uuid) listing every tracked file; newer clients add ``file-history-delta`` records for
single files first backed up during a prompt (``messageId`` = the tool call's record,
``snapshotMessageId`` = the prompt; several between the results of parallel edits), older
ones ``isSnapshotUpdate`` snapshots (top-level ``messageId`` = the tool call's record).
Folding a delta into the snapshot it names gives the checkpoint as the client's "Restore
code" sees it.

The client knows only the checkpoints of the conversation it has loaded: snapshots and
deltas written for records of a branch that was rewound away are not its (seen with
2.1.328: after a rewind, a file first backed up on the abandoned branch has no first
version in the conversation, and restoring to a prompt before it leaves it alone).
:func:`read_conversation_checkpoints` gives that view; :func:`read_checkpoints` gives
every branch's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import Problem, Record, is_session_id
from sessiontree.storage.layout import Layout

#: Control characters (a newline, a NUL, an escape): never in a path the client tracks,
#: and a name with a newline would print as two rows of ``checkpoints``.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The longest file name most file systems take (bytes); a longer one is ENAMETOOLONG.
NAME_MAX = 255


def tracking_path_damage(tracking_path: str) -> str | None:
    """Why a ``trackingPath`` must not be restored, whatever the project, or None.

    A transcript is untrusted input: ``..`` climbs out of the project, a control
    character hides what the path is. (An absolute path elsewhere depends on the project:
    see :func:`outside_project`.)"""
    if _CONTROL.search(tracking_path):
        return f"tracking path {tracking_path!r} holds a control character"
    parts = tracking_path.replace("\\", "/").split("/")
    if ".." in parts:
        return f"tracking path {tracking_path!r} leads outside the project with '..'"
    if any(len(p.encode("utf-8", "surrogatepass")) > NAME_MAX for p in parts):
        return f"tracking path {tracking_path[:60]!r}… has a name too long for a file"
    return None


def backup_name_damage(name: Any) -> str | None:
    """Why a ``backupFileName`` cannot name a file in ``file-history/<session>/``, or None.
    ``null`` is fine: the file did not exist."""
    if name is None:
        return None
    if not isinstance(name, str):
        return f"backupFileName is {type(name).__name__}, not a file name or null"
    if (
        not name
        or "/" in name
        or "\\" in name
        or name.startswith(".")
        or _CONTROL.search(name)
        or len(name.encode("utf-8", "surrogatepass")) > NAME_MAX
    ):
        return f"backupFileName {name[:60]!r} is not a plain file name"
    return None


def outside_project(tracking_path: str, cwds: Collection[str]) -> str | None:
    """Why an absolute ``trackingPath`` is under none of the session's working
    directories, or None. (The real client tracks files it edited in a folder it moved
    to, ``/tmp/x/a.py`` in a session started in ``~``: that is not damage.)"""
    if not cwds or not os.path.isabs(tracking_path):
        return None
    path = os.path.normpath(tracking_path)
    for cwd in cwds:
        root = os.path.normpath(cwd)
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return None
    return f"tracking path {tracking_path!r} is outside every folder the session worked in"


@dataclass(frozen=True)
class FileBackup:
    """One tracked file in a checkpoint: which backup holds its content (None = absent).

    ``damage`` says why the entry must not be used (a hostile path or backup name, see
    :func:`tracking_path_damage` and :func:`backup_name_damage`): it is listed as damaged,
    never restored."""

    tracking_path: str
    version: int
    backup_file_name: str | None
    backup_time: str | None
    real_parent_dir: str | None
    damage: str | None = None

    @classmethod
    def parse(cls, tracking_path: str, raw: Any) -> FileBackup | None:
        if not isinstance(raw, dict):
            return None
        name = raw.get("backupFileName")
        version = raw.get("version")
        return cls(
            tracking_path=tracking_path,
            version=version if isinstance(version, int) else 0,
            backup_file_name=name if isinstance(name, str) else None,
            backup_time=raw.get("backupTime") if isinstance(raw.get("backupTime"), str) else None,
            real_parent_dir=(
                raw.get("realParentDir") if isinstance(raw.get("realParentDir"), str) else None
            ),
            damage=tracking_path_damage(tracking_path) or backup_name_damage(name),
        )


@dataclass
class Checkpoint:
    """The tracked files as of one prompt (``message_id`` = the prompt record's uuid)."""

    message_id: str
    timestamp: str | None
    files: dict[str, FileBackup] = field(default_factory=dict)
    has_untracked_changes: bool = False


@dataclass(frozen=True)
class CheckpointRecord:
    """What one ``file-history-snapshot`` or ``file-history-delta`` record says.

    ``prompt_uuid`` is the checkpoint it belongs to (a snapshot's ``messageId``, a delta's
    ``snapshotMessageId``; None when the record names none), ``written_for`` the record it
    was written for (see :func:`parse_checkpoint_record`), ``timestamp`` the snapshot's own
    time (a delta's: its record's), ``record_timestamp`` the record's. A delta has one
    file; an entry that is not an object is left out."""

    line: int
    prompt_uuid: str | None
    written_for: str | None
    timestamp: str | None
    record_timestamp: str | None
    files: tuple[FileBackup, ...]
    has_untracked_changes: bool = False

    @property
    def observed_at(self) -> str | None:
        """When the files were seen as listed: the snapshot's time, else the record's."""
        return self.timestamp or self.record_timestamp


def _written_for(record: Record) -> str | None:
    """The record a snapshot or delta was written for: the tool call that changed the
    file (a delta, an ``isSnapshotUpdate`` snapshot), else the prompt."""
    snapshot = record.get("snapshot")
    for value in (
        record.get("messageId"),
        record.get("snapshotMessageId"),
        snapshot.get("messageId") if isinstance(snapshot, dict) else None,
    ):
        if isinstance(value, str):
            return value
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_checkpoint_record(record: Record) -> CheckpointRecord | None:
    """The checkpoint entries of a ``file-history-snapshot`` or ``-delta`` record, or None
    when it is neither (or its ``snapshot`` is not an object, a delta names no path)."""
    line = record.line or 0
    if record.type == "file-history-snapshot":
        snapshot = record.get("snapshot")
        if not isinstance(snapshot, dict):
            return None
        message_id = snapshot.get("messageId") or record.get("messageId")
        tracked = snapshot.get("trackedFileBackups")
        files = [
            FileBackup.parse(path, raw)
            for path, raw in (tracked.items() if isinstance(tracked, dict) else ())
        ]
        return CheckpointRecord(
            line,
            _text(message_id),
            _written_for(record),
            _text(snapshot.get("timestamp")),
            record.timestamp,
            tuple(f for f in files if f is not None),
            bool(snapshot.get("hasUntrackedChanges")),
        )
    if record.type == "file-history-delta":
        path = record.get("trackingPath")
        if not isinstance(path, str):
            return None
        backup = FileBackup.parse(path, record.get("backup"))
        return CheckpointRecord(
            line,
            _text(record.get("snapshotMessageId")),
            _written_for(record),
            record.timestamp,
            record.timestamp,
            () if backup is None else (backup,),
        )
    return None


def iter_checkpoint_records(records: Iterable[Record]) -> Iterator[CheckpointRecord]:
    """:func:`parse_checkpoint_record` of each record that is a checkpoint record."""
    for record in records:
        parsed = parse_checkpoint_record(record)
        if parsed is not None:
            yield parsed


def fold_checkpoints(
    records: list[Record], *, conversation: Collection[str] | None = None
) -> list[Checkpoint]:
    """Snapshots and deltas, in file order, folded into one checkpoint per prompt; with
    ``conversation`` (record uuids), only those written for its records."""
    by_id: dict[str, Checkpoint] = {}
    for parsed in iter_checkpoint_records(records):
        if conversation is not None and parsed.written_for not in conversation:
            continue
        if parsed.prompt_uuid is None:
            continue
        checkpoint = by_id.setdefault(
            parsed.prompt_uuid, Checkpoint(parsed.prompt_uuid, parsed.timestamp)
        )
        for backup in parsed.files:
            checkpoint.files[backup.tracking_path] = backup
        if parsed.has_untracked_changes:
            checkpoint.has_untracked_changes = True
    return list(by_id.values())


def read_checkpoints(transcript: Transcript) -> list[Checkpoint]:
    """The checkpoints of a transcript, every branch's, oldest first."""
    return fold_checkpoints(transcript.metadata("file-history-snapshot", "file-history-delta"))


def read_conversation_checkpoints(
    transcript: Transcript, prompt_uuid: str | None = None
) -> list[Checkpoint]:
    """The checkpoints the client knows when it resumes: those of the active path. For a
    prompt off it (a rewound branch, which only sessiontree restores to), those of the
    conversation through that prompt: its ancestors and everything below it."""
    path = transcript.active_path
    if prompt_uuid is None or prompt_uuid in path:
        conversation: set[str] = set(path)
    else:
        conversation = set(transcript.tree.path_to(prompt_uuid))
        below = [prompt_uuid]
        while below:
            for child in transcript.tree.children.get(below.pop(), ()):
                if child not in conversation:
                    conversation.add(child)
                    below.append(child)
    records = transcript.metadata("file-history-snapshot", "file-history-delta")
    return fold_checkpoints(records, conversation=conversation)


def find_missing_backups(
    layout: Layout,
    session_id: str,
    checkpoints: list[Checkpoint],
    path: str,
    *,
    pruned: Callable[[str], bool] | None = None,
) -> list[Problem]:
    """Backups a checkpoint names that are not on disk: ``missing-backup``, or
    ``pruned-backup`` where ``pruned(name)`` says the client's own retention removed it
    (:func:`~sessiontree.checkpoints.retention.pruned_by_client`). Damaged entries are
    :func:`find_hostile_entries`' to report, and are not looked up."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for checkpoint in checkpoints:
        for backup in checkpoint.files.values():
            name = backup.backup_file_name
            if name is None or name in seen or backup.damage is not None:
                continue
            seen.add(name)
            if _backup_present(layout, session_id, name):
                continue
            what = f"{backup.tracking_path} v{backup.version}: {name}"
            if pruned is not None and pruned(name):
                detail = (
                    f"{what} pruned by the client (only its newest checkpoints keep their"
                    " backups): restoring code to an older prompt cannot bring this version back"
                )
                problems.append(Problem("pruned-backup", path, None, detail))
            else:
                problems.append(
                    Problem("missing-backup", path, None, f"{what} not in file-history")
                )
    return problems


def _backup_present(layout: Layout, session_id: str, name: str) -> bool:
    try:
        return layout.backup_path(session_id, name).is_file()
    except (OSError, ValueError):
        return False


def checkpoints_gone(
    layout: Layout | Collection[str], session_id: str, checkpoints: list[Checkpoint]
) -> set[str]:
    """The prompts (message ids) whose checkpoint names a backup no longer on disk: the
    client prunes those of all but its newest checkpoints, so "Restore code" to such a
    prompt cannot bring every file back (:func:`find_missing_backups` says which). A
    transcript not named by a session id has no ``file-history/`` of its own: none.
    ``layout`` may instead be the names of the session's backups that are kept (a
    stored session's, in the store)."""
    if not is_session_id(session_id):
        return set()
    if isinstance(layout, Layout):
        root = layout

        def present(name: str) -> bool:
            return _backup_present(root, session_id, name)
    else:
        kept = set(layout)

        def present(name: str) -> bool:
            return name in kept

    return {
        checkpoint.message_id
        for checkpoint in checkpoints
        if any(
            backup.backup_file_name is not None
            and backup.damage is None
            and not present(backup.backup_file_name)
            for backup in checkpoint.files.values()
        )
    }


def find_hostile_entries(
    checkpoints: list[Checkpoint], path: str, *, cwds: Collection[str] = ()
) -> list[Problem]:
    """Checkpoint entries a restore refuses: hostile paths or backup names, each once."""
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for checkpoint in checkpoints:
        for backup in checkpoint.files.values():
            why = backup.damage or outside_project(backup.tracking_path, cwds)
            if why is None or (backup.tracking_path, why) in seen:
                continue
            seen.add((backup.tracking_path, why))
            detail = f"checkpoint {checkpoint.message_id}: {why}"
            problems.append(Problem("hostile-path", path, None, detail))
    return problems


def checkpoint_as_json(checkpoint: Checkpoint) -> dict[str, Any]:
    """The ``checkpoints --json`` object for one checkpoint; a damaged entry (see
    :class:`FileBackup`) also has ``damage``, the reason it is never restored."""
    files: dict[str, Any] = {}
    for path, b in checkpoint.files.items():
        entry: dict[str, Any] = {"version": b.version, "backupFileName": b.backup_file_name}
        if b.damage is not None:
            entry["damage"] = b.damage
        files[path] = entry
    return {"messageId": checkpoint.message_id, "timestamp": checkpoint.timestamp, "files": files}
