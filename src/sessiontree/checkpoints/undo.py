"""Undoing a restore: its undo record read back, checked whole, then put back.

Before it changes anything, :func:`~sessiontree.checkpoints.restore.apply_restore` saves
each file it will overwrite or delete in ``<config root>/backups/sessiontree-restore/
<stamp>-<sessionId>/``, beside a ``manifest.json``::

    {"sessionId": …, "prompt": <prompt uuid>, "restoredAt": <ISO time>, "project": …,
     "files": [{"path": <absolute>, "saved": <name in the folder> | null,
                "left": <SHA-256 of what the restore left> | null}]}

``saved`` null: the file did not exist before (the undo removes it); ``left`` null: the
restore deleted it. (Records written before ``left`` and ``restoredAt`` were kept lack
them: what changed since such a restore cannot be told.)

Which restore: the newest of the session not undone yet (:func:`latest_undo`). Undoing
marks its folder (``undone.json``), so the next undo walks back the restore before it;
the plan says which one it is (:class:`RestoreMade`) and how many newer ones are undone.

Later work: a file that is no longer what the restore left (edited, made again after
the restore deleted it, or that cannot be told) is a conflict, named in the plan, as
``restore`` names its own. Putting it back would lose that work for good, so
:func:`apply_undo` first keeps a copy of it in the folder (``kept-NNNNN``) and says where.

The record is untrusted input: whoever can write the config root can edit it, to name
``../../..`` or any other file. :func:`plan_undo` checks every entry before anything
changes, as a restore checks its plan: each path absolute, with no ``..`` and no control
character, inside the project (or asked for with ``allow_outside``, as the restore that
wrote it was), behind no symlinked folder leading out, a regular file or nothing now;
each saved copy a plain name of a regular file in the record's own folder. A bad record
is one :class:`~sessiontree.errors.DataError` (or :class:`~sessiontree.errors.Refused`,
for a path outside) with nothing changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessiontree.checkpoints.read import backup_name_damage, tracking_path_damage
from sessiontree.checkpoints.restore import _outside, diff_with_file, undo_root
from sessiontree.errors import DataError, Refused
from sessiontree.storage.atomic import copy_atomically, write_atomically
from sessiontree.storage.layout import Layout
from sessiontree.storage.owner import make_folders, owner_to_keep
from sessiontree.storage.remove import remove_file

_MANIFEST = "manifest.json"
#: Written into an undo folder once it has been undone: it is not undone twice.
_UNDONE = "undone.json"
#: How a folder's name starts: the time of the restore (:func:`restore_code`'s stamp).
_STAMP = "%Y%m%dT%H%M%S%fZ"


def _undo_folders(layout: Layout, session_id: str) -> list[Path]:
    root = undo_root(layout)
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob(f"*-{session_id}") if (p / _MANIFEST).is_file())


def latest_undo(layout: Layout, session_id: str) -> Path:
    """The undo folder of the latest restore of ``session_id`` not undone yet."""
    folders = [p for p in _undo_folders(layout, session_id) if not (p / _UNDONE).exists()]
    if not folders:
        raise Refused(f"no restore of session {session_id} to undo")
    return folders[-1]


@dataclass(frozen=True)
class RestoreMade:
    """Which restore an undo undoes: its session, the prompt it restored to, when."""

    folder: Path
    session_id: str
    prompt_uuid: str | None
    restored_at: datetime | None
    #: The prompt's number on the session's active path, when it is on it (the caller
    #: knows the transcript: :func:`~sessiontree.checkpoints.code.plan_undo_code_restore`).
    prompt_number: int | None = None

    def describe(self) -> str:
        """``the restore of session 0f31836f to prompt 3 (8d6b6ac3) made 2026-…``."""
        to = "to a prompt it does not name"
        if self.prompt_uuid is not None:
            number = f"{self.prompt_number} " if self.prompt_number is not None else ""
            to = f"to prompt {number}({self.prompt_uuid[:8]})"
        when = (
            self.restored_at.astimezone(UTC).strftime(" made %Y-%m-%d %H:%M:%S UTC")
            if self.restored_at is not None
            else ""
        )
        return f"the restore of session {self.session_id[:8]} {to}{when}"

    def as_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "promptUuid": self.prompt_uuid,
            "promptNumber": self.prompt_number,
            "restoredAt": self.restored_at.isoformat() if self.restored_at else None,
            "folder": str(self.folder),
        }


#: ``left`` of a record that did not keep it: what the restore left is not known.
_UNKNOWN = "?"


@dataclass(frozen=True)
class UndoStep:
    """One file an undo puts back: from its saved copy, or removed (``saved`` None: the
    restore created it). ``conflict``: why putting it back loses work done since."""

    index: int
    path: Path
    saved: Path | None
    left: str | None  # the SHA-256 of what the restore left, None: deleted, "?": unknown
    conflict: str | None = None

    def diff(self) -> str:
        """A unified diff of the file now against what the undo leaves."""
        after = self.saved.read_bytes() if self.saved is not None else b""
        return diff_with_file(self.path, after, "after undo" if self.saved else "removed by undo")

    def as_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "action": "put back" if self.saved else "remove"}


@dataclass(frozen=True)
class UndoPlan:
    """What undoing one restore does (nothing changed until :func:`apply_undo`)."""

    restore: RestoreMade
    steps: tuple[UndoStep, ...]
    #: Newer restores of the session, undone already: this undo walks back before them.
    later_undone: int = 0

    @property
    def conflicts(self) -> list[UndoStep]:
        return [s for s in self.steps if s.conflict is not None]

    def conflicts_as_json(self) -> list[dict[str, Any]]:
        return [{"path": str(s.path), "reason": s.conflict} for s in self.conflicts]


@dataclass(frozen=True)
class KeptFile:
    """A file changed since the restore, copied aside before the undo put it back."""

    path: Path
    reason: str
    kept_as: Path


@dataclass(frozen=True)
class UndoDone:
    """What :func:`apply_undo` did: the files put back, and the later work it kept."""

    undone: list[str]
    kept: list[KeptFile] = field(default_factory=list)

    def conflicts_as_json(self) -> list[dict[str, Any]]:
        return [
            {"path": str(k.path), "reason": k.reason, "keptAs": str(k.kept_as)} for k in self.kept
        ]


# -- reading the record, checked ----------------------------------------------------------


def _read_now(path: Path) -> bytes | None:
    """The file's bytes (never through a link), or None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _conflict(path: Path, left: str | None) -> str | None:
    """Why putting ``path`` back loses work done since the restore, or None."""
    try:
        now = _read_now(path)
    except OSError as exc:
        return f"cannot check for changes since the restore: {exc.strerror}"
    if now is None:
        return None  # gone since: putting it back loses nothing
    if left == _UNKNOWN:
        return "cannot check for changes since the restore: its undo record predates that check"
    if left is None:
        return "made since the restore (which deleted it)"
    if hashlib.sha256(now).hexdigest() != left:
        return "changed since the restore"
    return None


def _restored_at(body: dict[str, Any], folder: Path) -> datetime | None:
    value = body.get("restoredAt")
    try:
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value)
            return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
        # an older record: the folder's name starts with the time
        return datetime.strptime(folder.name.split("-", 1)[0], _STAMP).replace(tzinfo=UTC)
    except ValueError:
        return None


def plan_undo(folder: Path, project: Path, *, allow_outside: bool = False) -> UndoPlan:
    """What undoing the restore saved in ``folder`` does, file by file, each entry of its
    record checked first (see the module doc); nothing is changed. ``project``: the
    folder the restore wrote in (the session's ``cwd``: never the record's own word),
    which must exist: as a restore, an undo does not make it again."""
    manifest = folder / _MANIFEST

    def bad(why: str) -> DataError:
        return DataError(str(manifest), f"not a usable undo record: {why}; nothing was changed")

    if folder.is_symlink() or not folder.is_dir():
        raise bad("its folder is not a folder")
    if not project.is_dir():
        raise Refused(
            f"the project folder {project} is gone: an undo puts files back into it and"
            " does not make it again (make it yourself to undo into it)"
        )
    try:
        body = json.loads(_read_now(manifest) or b"")
    except (OSError, ValueError) as exc:
        raise bad(f"cannot be read ({exc})") from exc
    if not isinstance(body, dict) or not isinstance(body.get("files"), list):
        raise bad("no list of files")
    session_id, prompt = body.get("sessionId"), body.get("prompt")
    if not isinstance(session_id, str) or not folder.name.endswith(f"-{session_id}"):
        raise bad(f"it names session {session_id!r}, not the one of its folder")
    if prompt is not None and not isinstance(prompt, str):
        raise bad("its prompt is not a uuid")
    resolved = project.resolve()
    steps: list[UndoStep] = []
    seen: set[str] = set()
    for index, entry in enumerate(body["files"], 1):
        if not isinstance(entry, dict):
            raise bad(f"entry {index} is not an object")
        path, saved, left = entry.get("path"), entry.get("saved"), entry.get("left", _UNKNOWN)
        if not isinstance(path, str) or not Path(path).is_absolute():
            raise bad(f"entry {index}: path {path!r} is not an absolute path")
        damage = tracking_path_damage(path)
        if damage is not None:
            raise bad(f"entry {index}: {damage}")
        where = Path(path)
        if os.path.normpath(where) in seen:
            raise bad(f"entry {index}: {path} is named twice")
        seen.add(os.path.normpath(where))
        why = None if allow_outside else _outside(where, project, resolved)
        if why is not None:
            raise Refused(
                f"the undo record {manifest} names {path}: {why} (pass --allow-outside,"
                " as for the restore that wrote it); nothing was changed"
            )
        try:
            now = where.lstat()
        except (FileNotFoundError, NotADirectoryError):
            now = None
        if now is not None and not stat.S_ISREG(now.st_mode):
            kind = "a symlink" if stat.S_ISLNK(now.st_mode) else "not a regular file"
            raise Refused(
                f"{path} is {kind} now: an undo puts back only files; nothing was changed"
            )
        if left is not None and left != _UNKNOWN and not isinstance(left, str):
            raise bad(f"entry {index}: 'left' is not a SHA-256")
        copy = None
        if saved is not None:
            damage = backup_name_damage(saved)
            if damage is not None or saved in (_MANIFEST, _UNDONE):
                raise bad(f"entry {index}: saved copy {saved!r} is not a file of its folder")
            copy = folder / saved
            try:
                kept = copy.lstat()
            except OSError as exc:
                raise bad(f"entry {index}: saved copy {saved} is missing") from exc
            if not stat.S_ISREG(kept.st_mode):
                raise bad(f"entry {index}: saved copy {saved} is not a regular file")
        steps.append(UndoStep(index, where, copy, left, _conflict(where, left)))
    made = RestoreMade(folder, session_id, prompt, _restored_at(body, folder))
    later = sum(
        1
        for p in folder.parent.glob(f"*-{session_id}")
        if p.name > folder.name and (p / _UNDONE).exists()
    )
    return UndoPlan(made, tuple(steps), later)


# -- putting back -------------------------------------------------------------------------


def apply_undo(plan: UndoPlan) -> UndoDone:
    """Put back every file the restore changed, as it was just before (a file the
    restore created is removed), then mark the record undone.

    A file changed since the restore (looked at again now, not only when planned) is
    first copied into the record's folder, so the undo loses no work; every copy is made
    before anything is put back. Each file is written back atomically, never through a
    symlink now at its place, with the owner of what it replaces (as root)."""
    folder = plan.restore.folder
    owner = owner_to_keep(folder)
    kept: list[KeptFile] = []
    for step in plan.steps:
        reason = _conflict(step.path, step.left)
        if reason is not None and step.path.is_file():
            aside = folder / f"kept-{step.index:05d}"
            copy_atomically(step.path, aside, owner=owner)
            kept.append(KeptFile(step.path, reason, aside))
    touched = []
    for step in plan.steps:
        if step.saved is None:
            remove_file(step.path)  # it did not exist before the restore
        else:
            keep = owner_to_keep(step.path)
            make_folders(step.path.parent, keep)
            copy_atomically(step.saved, step.path, owner=keep)
        touched.append(str(step.path))
    done = {"undone": touched, "kept": {str(k.path): k.kept_as.name for k in kept}}
    write_atomically(folder / _UNDONE, json.dumps(done).encode(), owner=owner)
    return UndoDone(touched, kept)
