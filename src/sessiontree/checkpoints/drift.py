"""Drift: tracked files changed by someone else since their last known state.

A restore overwrites or deletes files. The client's "Restore code" does so blindly, so
an edit made outside the session's tracked edits — by the user, through Bash, by a
subagent or by another session — is lost without a word. :func:`find_drift` names every
such file as a :class:`Conflict` before anything is written.

Definition. For each step of a :class:`~sessiontree.checkpoints.restore.RestorePlan` that would
*restore* (overwrite) or *delete* a file that exists now, find the file's **last known
state**, the latest of:

- a *backup observation*: a checkpoint entry says the file's content was backup X
  (``backupFileName: null``: it did not exist). A snapshot observes the file when it is
  taken (its ``timestamp``, or the entry's ``backupTime`` when later: a new version made
  for this snapshot), a ``file-history-delta`` at its ``backupTime``, just before the
  edit it protects;
- an *agent write*: a tool result whose ``toolUseResult`` has ``filePath`` and
  ``structuredPatch`` (Write, Edit, MultiEdit all do). Write (``type`` ``create`` or
  ``update``) records the new file as ``content``; Edit records ``originalFile`` and the
  ``structuredPatch`` applied to it (``oldString`` → ``newString`` is the fallback when
  the patch does not fit). Failed edits record a string, not a dict, and are ignored.

"Latest" is by timestamp, then by line in the transcript (a backup is written before the
edit it protects, so a tie goes to the later line); when some event of a file has no
readable timestamp, that file's events are ordered by line alone. The file **has
drifted** when its current bytes differ from its last known state. The comparison
ignores CRLF against LF and a byte-order mark, since the client's Edit tool rewrites
line endings and encodings it read; anything else is a difference.

A last known state that cannot be had (an Edit whose patch does not apply, a backup
missing from ``file-history``) is reported as a conflict too, with the reason: saying
nothing would claim the file is safe to overwrite.

Not conflicts: steps that leave the file alone (unchanged, skipped); a file missing now
(restoring re-creates it, nothing is lost); files no checkpoint tracks (never in a plan,
so a Bash-made file never appears). Backups no record names (the one the client writes
at ``/exit``) are not used: nothing says when they were taken.

Only the records needed are decoded: the ``file-history-*`` metadata lines and the tool
results whose bytes contain ``"structuredPatch"``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sessiontree.checkpoints.read import FileBackup, iter_checkpoint_records
from sessiontree.checkpoints.restore import FileStep, RestorePlan
from sessiontree.checkpoints.writes import (
    apply_structured_patch,
    parse_agent_write,
    written_content,
)
from sessiontree.conversation.transcript import Transcript
from sessiontree.storage.jsonl import iter_raw_lines, read_records
from sessiontree.storage.layout import Layout

__all__ = [
    "Conflict",
    "ConflictKind",
    "KnownState",
    "apply_structured_patch",
    "find_drift",
    "latest_state",
    "parse_time",
    "same_content",
    "written_content",
]

ConflictKind = Literal["modified", "created", "unverifiable"]


@dataclass(frozen=True)
class Conflict:
    """A file the restore would overwrite or delete that someone else changed."""

    path: Path
    reason: str
    kind: ConflictKind = "modified"

    def as_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "reason": self.reason}


@dataclass(frozen=True)
class KnownState:
    """One moment the file's content is known: a backup observation or an agent write."""

    line: int
    time: datetime | None
    source: str  # for the reason: "backup a.txt v2 (…)", "Edit (…)"
    content: bytes | None = None  # an agent write, reconstructed
    backup_file_name: str | None = None  # a backup observation with content
    absent: bool = False  # a backup observation of "did not exist"
    unknown: str | None = None  # why the content cannot be had


def parse_time(value: Any) -> datetime | None:
    """A record timestamp as an aware datetime (naive ones taken as UTC), or None."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def latest_state(states: list[KnownState]) -> KnownState | None:
    """The last known state: by time then line, or by line if any time is missing."""
    if not states:
        return None
    if all(s.time is not None for s in states):
        return max(states, key=lambda s: (s.time, s.line))
    return max(states, key=lambda s: s.line)


# -- agent writes -------------------------------------------------------------------


def _agent_writes(transcript: Transcript, wanted: set[str]) -> dict[str, list[KnownState]]:
    """Agent writes per normalized absolute path, for the paths in ``wanted``."""
    candidates = [
        line
        for line in transcript.lines_of_type("user")
        if line.skeleton is not None and line.skeleton.toolUseResult
    ]
    # Pre-filter on bytes: most tool results (Bash, Read, …) are not writes and may be big.
    chosen = [
        line
        for line, raw in zip(
            candidates, iter_raw_lines(transcript.lines_from, candidates), strict=True
        )
        if b'"structuredPatch"' in raw
    ]
    found: dict[str, list[KnownState]] = {}
    for record in read_records(transcript.lines_from, chosen):
        write = parse_agent_write(record)
        if write is None:
            continue
        key = os.path.normpath(write.path)
        if key not in wanted:
            continue
        when, content = write.timestamp, write.content
        found.setdefault(key, []).append(
            KnownState(
                line=write.line,
                time=parse_time(when),
                source=f"the agent's {write.tool} ({when or f'line {write.line}'})",
                content=content.encode("utf-8") if content is not None else None,
                unknown=None if content is not None else "the agent's edit cannot be replayed",
            )
        )
    return found


# -- backup observations --------------------------------------------------------------


def _observation(backup: FileBackup, line: int, seen: str | None) -> KnownState:
    """What one checkpoint entry says the file was, and when (see the module doc)."""
    when, shown = parse_time(seen), seen
    backup_time = parse_time(backup.backup_time)
    if backup_time is not None and (when is None or backup_time > when):
        when, shown = backup_time, backup.backup_time
    shown = shown or f"line {line}"
    if backup.damage is not None:
        return KnownState(line, when, "a checkpoint", unknown=backup.damage)
    if backup.backup_file_name is None:
        return KnownState(line, when, f"its checkpoint ({shown}: did not exist)", absent=True)
    return KnownState(
        line,
        when,
        f"its backup {backup.tracking_path} v{backup.version} ({shown})",
        backup_file_name=backup.backup_file_name,
    )


def _backup_observations(transcript: Transcript, wanted: set[str]) -> dict[str, list[KnownState]]:
    """Backup observations per tracking path, for the tracking paths in ``wanted``."""
    found: dict[str, list[KnownState]] = {}
    records = transcript.metadata("file-history-snapshot", "file-history-delta")
    for parsed in iter_checkpoint_records(records):
        for backup in parsed.files:
            if backup.tracking_path in wanted:
                state = _observation(backup, parsed.line, parsed.observed_at)
                found.setdefault(backup.tracking_path, []).append(state)
    return found


# -- comparing ------------------------------------------------------------------------

_BOMS = (b"\xef\xbb\xbf",)


def _normalized(data: bytes) -> bytes:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            data = data.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            return data
    for bom in _BOMS:
        data = data.removeprefix(bom)
    return data.replace(b"\r\n", b"\n")


def same_content(current: bytes, expected: bytes) -> bool:
    """Equal bytes, or equal but for CRLF/LF and a byte-order mark (see module doc)."""
    return current == expected or _normalized(current) == _normalized(expected)


def _read_current(path: Path) -> bytes | None:
    """The file's bytes, or None if there is no regular file to overwrite."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _check(
    step: FileStep, state: KnownState | None, layout: Layout, session_id: str
) -> Conflict | None:
    try:
        current = _read_current(step.path)
    except OSError as exc:
        return Conflict(step.path, f"cannot check for changes: {exc.strerror}", "unverifiable")
    if current is None:
        return None  # nothing there to overwrite
    if state is None:
        return Conflict(step.path, "cannot check for changes: no known state", "unverifiable")
    if state.unknown is not None:
        return Conflict(
            step.path,
            f"cannot check for changes since {state.source}: {state.unknown}",
            "unverifiable",
        )
    if state.absent:
        return Conflict(step.path, f"exists, but did not at {state.source}", "created")
    expected = state.content
    if state.backup_file_name is not None:
        try:
            expected = layout.backup_path(session_id, state.backup_file_name).read_bytes()
        except OSError:
            return Conflict(
                step.path,
                f"cannot check for changes: {state.source} is missing from file-history",
                "unverifiable",
            )
    if expected is None:
        return Conflict(step.path, f"cannot check for changes since {state.source}", "unverifiable")
    if same_content(current, expected):
        return None
    return Conflict(step.path, f"changed since {state.source}")


def find_drift(transcript: Transcript, plan: RestorePlan, *, layout: Layout) -> list[Conflict]:
    """Files the plan would overwrite or delete that changed since their last known state.

    ``layout`` locates the backups (``file-history/<sessionId>/``); ``transcript`` is the
    plan's session. Conflicts come in the plan's order.
    """
    steps = [
        s for s in plan.steps if s.action in ("restore", "delete") and s.source == "checkpoint"
    ]
    if not steps:
        return []
    by_path = {os.path.normpath(s.path): s for s in steps}
    writes = _agent_writes(transcript, set(by_path))
    backups = _backup_observations(transcript, {s.tracking_path for s in steps})
    conflicts = []
    for step in steps:
        states = [
            *backups.get(step.tracking_path, []),
            *writes.get(os.path.normpath(step.path), []),
        ]
        conflict = _check(step, latest_state(states), layout, plan.session_id)
        if conflict is not None:
            conflicts.append(conflict)
    return conflicts
