"""Restore code to a prompt: plan what "Restore code" would do, then apply it undoably.

The default result is the real client's: for every file tracked in the conversation
(:func:`~sessiontree.checkpoints.read.read_conversation_checkpoints`), take its entry in the
prompt's checkpoint, else its first backup (v1), else leave it (its v1 was on a branch
rewound away); a ``null`` backup means the file did not exist (delete it); otherwise copy
the backup back when it differs. Untracked files (made by Bash, subagents or the user)
are never touched.

Beyond the client: every apply first saves the current bytes of each file it will change
(:func:`apply_restore` returns an :class:`UndoRecord`; :mod:`~sessiontree.checkpoints.undo`
puts them back), and paths outside the project or behind symlinks are refused unless
asked for.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sessiontree.checkpoints.read import Checkpoint, FileBackup, tracking_path_damage
from sessiontree.checkpoints.writes import parse_agent_write
from sessiontree.errors import NotFound, Refused
from sessiontree.model.records import Record
from sessiontree.storage.atomic import copy_atomically, write_atomically
from sessiontree.storage.jsonl import iter_records
from sessiontree.storage.layout import Layout
from sessiontree.storage.owner import make_folders, owner_to_keep
from sessiontree.storage.remove import remove_file

Action = Literal["restore", "delete", "unchanged", "skip"]


@dataclass(frozen=True)
class FileStep:
    """What restoring does to one file: a tracked one (from a checkpoint backup) or, when
    asked for, one a subagent edited (from the original its tool result recorded)."""

    tracking_path: str
    path: Path
    action: Action
    backup: Path | None = None
    reason: str | None = None
    content: bytes | None = None  # the bytes to restore when they come from no backup
    #: Where the step comes from: the client's checkpoints, or what only sessiontree
    #: knows (a subagent's write, a file a Bash command changed: :mod:`.bash_capture`).
    source: Literal["checkpoint", "subagent", "bash"] = "checkpoint"

    def restored_bytes(self) -> bytes:
        if self.content is not None:
            return self.content
        assert self.backup is not None, "a restore step has a source"
        return self.backup.read_bytes()


@dataclass
class RestorePlan:
    session_id: str
    prompt_uuid: str
    project: Path
    steps: list[FileStep] = field(default_factory=list)

    def by_action(self, action: Action) -> list[FileStep]:
        return [s for s in self.steps if s.action == action]

    def as_json(self) -> dict[str, Any]:
        return {
            "restored": [str(s.path) for s in self.by_action("restore")],
            "deleted": [str(s.path) for s in self.by_action("delete")],
            "unchanged": [str(s.path) for s in self.by_action("unchanged")],
            "skipped": [{"path": str(s.path), "reason": s.reason} for s in self.by_action("skip")],
        }


def _first_backups(checkpoints: list[Checkpoint]) -> dict[str, FileBackup | None]:
    """Every tracked file and its first version (v1) in these checkpoints, None where the
    conversation has no v1 of it (first backed up on a branch rewound away)."""
    first: dict[str, FileBackup | None] = {}
    for checkpoint in checkpoints:
        for path, backup in checkpoint.files.items():
            if first.get(path) is None:
                first[path] = backup if backup.version == 1 else None
    return first


def _absolute(backup: FileBackup, project: Path) -> Path:
    """Where a tracked file lives: ``trackingPath`` is relative to the session's working
    directory (``realParentDir`` is the file's own folder, e.g. ``<proj>/src`` for
    ``src/app.py``; seen with the real client), or absolute outside it."""
    given = Path(backup.tracking_path)
    if given.is_absolute():
        return given
    return project / given


def _outside(path: Path, project: Path, resolved_project: Path) -> str | None:
    """Why ``path`` is not safely inside ``project``, or None.

    A transcript is untrusted input: ``../`` in a tracking path, an absolute path
    elsewhere, or a symlinked parent folder must not let a restore write outside.
    """
    if not Path(os.path.normpath(path)).is_relative_to(Path(os.path.normpath(project))):
        return "outside the project"
    if not path.parent.resolve().is_relative_to(resolved_project):
        return "a parent folder is a symlink that leads outside the project"
    return None


def plan_restore(
    layout: Layout,
    session_id: str,
    project: Path,
    checkpoints: list[Checkpoint],
    prompt_uuid: str,
    *,
    allow_outside: bool = False,
) -> RestorePlan:
    """What restoring code to ``prompt_uuid`` would do, file by file (changes nothing).
    Raises :class:`~sessiontree.errors.Refused` when the project folder is gone: a
    restore puts files back into it, it does not make it again."""
    target = next((c for c in checkpoints if c.message_id == prompt_uuid), None)
    if target is None:
        raise NotFound("checkpoint for prompt", prompt_uuid)
    if not project.is_dir():
        raise Refused(
            f"the project folder {project} is gone: restore puts files back into it and"
            " does not make it again (make it yourself to restore into it)"
        )
    plan = RestorePlan(session_id, prompt_uuid, project)
    first = _first_backups(checkpoints)
    resolved = project.resolve()
    for tracking_path in sorted(first):
        backup = target.files.get(tracking_path, first[tracking_path])
        where = project / tracking_path.replace("\x00", "")
        if backup is None:  # the client leaves a file it has no version of from then
            reason = "no version of it in this conversation as of that prompt"
            plan.steps.append(FileStep(tracking_path, where, "skip", reason=reason))
            continue
        if backup.damage is not None:  # a hostile path or backup name: never, even if asked
            reason = f"damaged checkpoint entry: {backup.damage}"
            plan.steps.append(FileStep(tracking_path, where, "skip", reason=reason))
            continue
        path = _absolute(backup, project)
        why = None if allow_outside else _outside(path, project, resolved)
        if why:
            reason = f"{why} (pass --allow-outside)"
            plan.steps.append(FileStep(tracking_path, path, "skip", reason=reason))
        else:
            plan.steps.append(_step(layout, session_id, backup, path))
    return plan


def plan_subagent_edits(
    plan: RestorePlan,
    edits: list[SubagentEdit],
    prompt_time: str,
    *,
    allow_outside: bool = False,
) -> None:
    """Add steps for files a subagent wrote after the prompt began and no checkpoint
    tracks (the client's blind spot): each goes back to the state its earliest such
    edit started from (``originalFile``; a created file is deleted)."""
    tracked = {os.path.normpath(s.path) for s in plan.steps}
    resolved = plan.project.resolve()
    earliest: dict[str, SubagentEdit] = {}
    for edit in sorted(edits, key=lambda e: e.timestamp):
        key = os.path.normpath(edit.path)
        if edit.timestamp > prompt_time and key not in tracked and key not in earliest:
            earliest[key] = edit
    for edit in earliest.values():
        path = Path(edit.path)
        label = f"{edit.path} (subagent {edit.agent_id})"
        damage = tracking_path_damage(edit.path)
        if damage is not None:  # never, even if asked: a NUL byte, a newline, '..'
            reason = f"damaged subagent edit: {damage}"
            plan.steps.append(FileStep(label, path, "skip", reason=reason, source="subagent"))
            continue
        why = None if allow_outside else _outside(path, plan.project, resolved)
        if why:
            plan.steps.append(
                FileStep(
                    label, path, "skip", reason=f"{why} (pass --allow-outside)", source="subagent"
                )
            )
        elif path.is_symlink() or (path.exists() and not path.is_file()):
            plan.steps.append(
                FileStep(label, path, "skip", reason="not a regular file", source="subagent")
            )
        elif edit.original is None:
            action: Action = "delete" if path.exists() else "unchanged"
            plan.steps.append(FileStep(label, path, action, source="subagent"))
        else:
            same = path.is_file() and path.read_bytes() == edit.original
            plan.steps.append(
                FileStep(
                    label,
                    path,
                    "unchanged" if same else "restore",
                    content=edit.original,
                    source="subagent",
                )
            )


@dataclass(frozen=True)
class SubagentEdit:
    """A file write a subagent's tool result records: what the file was before it."""

    agent_id: str
    path: str
    timestamp: str
    original: bytes | None  # None: the write created the file


def parse_subagent_edit(agent_id: str, record: Record) -> SubagentEdit | None:
    """The edit a subagent tool-result record describes (Write, Edit, MultiEdit), if any."""
    write = parse_agent_write(record)
    if write is None or write.timestamp is None:
        return None
    if write.created:
        return SubagentEdit(agent_id, write.path, write.timestamp, None)
    if write.original is None:
        return None
    return SubagentEdit(agent_id, write.path, write.timestamp, write.original.encode("utf-8"))


def read_subagent_edits(subagent_transcripts: list[tuple[str, Path]]) -> list[SubagentEdit]:
    """Every file write recorded in the given ``(agentId, transcript)`` files."""
    edits = []
    for agent_id, path in subagent_transcripts:
        for record in iter_records(path):
            edit = parse_subagent_edit(agent_id, record)
            if edit is not None:
                edits.append(edit)
    return edits


def _step(layout: Layout, session_id: str, backup: FileBackup, path: Path) -> FileStep:
    """The step for one undamaged checkpoint entry (:attr:`FileBackup.damage` is None: its
    backup name is a plain file name)."""
    tracking = backup.tracking_path
    if path.is_symlink():
        return FileStep(tracking, path, "skip", reason="a symlink: not followed")
    if backup.backup_file_name is None:
        if path.exists():
            return FileStep(tracking, path, "delete")
        return FileStep(tracking, path, "unchanged")
    source = layout.backup_path(session_id, backup.backup_file_name)
    if source.is_symlink():
        # A planted link in file-history/ must not copy whatever it points at.
        return FileStep(tracking, path, "skip", reason=f"backup {source.name} is a symlink")
    if not source.is_file():
        return FileStep(
            tracking,
            path,
            "skip",
            reason=f"backup {source.name} is missing: the checkpoint is gone for this file"
            " (the client keeps only its newest checkpoints' backups)",
        )
    if path.exists() and not path.is_file():
        return FileStep(tracking, path, "skip", reason="not a regular file")
    if path.exists() and not os.access(path, os.R_OK):
        return FileStep(tracking, path, "skip", reason="unreadable: cannot be saved for undo")
    try:
        same = path.is_file() and _same_bytes(path, source)
    except PermissionError:
        return FileStep(tracking, path, "skip", reason="unreadable")
    return FileStep(tracking, path, "unchanged" if same else "restore", backup=source)


def _same_bytes(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    return a.read_bytes() == b.read_bytes()


def format_diff(step: FileStep) -> str:
    """A unified diff of what the step changes; binary files are named, not diffed."""
    after = step.restored_bytes() if step.action == "restore" else b""
    return diff_with_file(step.path, after, "restored")


def diff_with_file(path: Path, after: bytes, label: str) -> str:
    """A unified diff of ``path`` now against ``after``; binary files are named."""
    before = path.read_bytes() if path.is_file() else b""
    if b"\x00" in before or b"\x00" in after:
        return f"binary file {path} differs\n"
    try:
        old, new = before.decode("utf-8"), after.decode("utf-8")
    except UnicodeDecodeError:
        return f"binary file {path} differs\n"
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{path} (now)",
        tofile=f"{path} ({label})",
    )
    return "".join(lines)


@dataclass(frozen=True)
class UndoRecord:
    """Where a restore saved what it changed: ``<config root>/backups/sessiontree-restore/
    <stamp>-<sessionId>/``, a ``manifest.json`` and the saved files
    (:mod:`~sessiontree.checkpoints.undo` reads it back)."""

    folder: Path


def undo_root(layout: Layout) -> Path:
    """The folder every restore's undo record is in."""
    return layout.backups_dir / "sessiontree-restore"


def apply_restore(
    layout: Layout, plan: RestorePlan, *, stamp: str, at: datetime | None = None
) -> UndoRecord:
    """Save what will be overwritten or deleted, then restore and delete.

    Everything is saved before anything changes: a file that is no longer a regular file
    (say, replaced by a symlink since the plan) raises
    :class:`~sessiontree.errors.Refused` with nothing changed. The undo record says
    which restore it is (session, prompt, ``at``: default now) and, for each file, what
    the restore left there (its SHA-256, or null: deleted), so an undo can tell what
    changed since. As root in a user's project, what is written keeps the user's
    ownership (:mod:`~sessiontree.storage.owner`)."""
    folder = undo_root(layout) / f"{stamp}-{plan.session_id}"
    owner = owner_to_keep(folder)
    make_folders(folder.parent, owner)
    folder.mkdir(exist_ok=False, mode=0o700)
    if owner is not None:
        os.lchown(folder, *owner)
    manifest: list[dict[str, Any]] = []
    for index, step in enumerate(plan.steps):
        if step.action not in ("restore", "delete"):
            continue
        saved: str | None = f"{index:05d}"
        try:
            copy_atomically(step.path, folder / f"{index:05d}", owner=owner)
        except (FileNotFoundError, NotADirectoryError):
            saved = None  # nothing there now: undo removes what the restore creates
        left = None
        if step.action == "restore":
            left = hashlib.sha256(step.restored_bytes()).hexdigest()
        manifest.append({"path": str(step.path), "saved": saved, "left": left})
    body = {
        "sessionId": plan.session_id,
        "prompt": plan.prompt_uuid,
        "restoredAt": (at or datetime.now(UTC)).astimezone(UTC).isoformat(),
        "project": str(plan.project),
        "files": manifest,
    }
    write_atomically(folder / "manifest.json", json.dumps(body).encode(), owner=owner)
    for step in plan.steps:
        if step.action == "delete":
            remove_file(step.path)
        elif step.action == "restore":
            keep = owner_to_keep(step.path)
            make_folders(step.path.parent, keep)
            # As the client does, a file restored from a backup takes the backup's mode.
            mode = stat.S_IMODE(step.backup.stat().st_mode) if step.backup else None
            write_atomically(step.path, step.restored_bytes(), mode=mode, owner=keep)
    return UndoRecord(folder)
