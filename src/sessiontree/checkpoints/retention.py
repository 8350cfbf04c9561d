"""Retention of file-history backups: which ``file-history/<sessionId>/`` files may go.

The client prunes a session's backups each time a snapshot makes more than 100
checkpoints; :class:`~sessiontree.checkpoints.capture.FileHistory` does the same with
:func:`plan_backup_retention` and :func:`apply_backup_retention`.

The rule is the client's (docs/FORMAT.md, "Checkpoints"; FINDINGS §1, 15-many-checkpoints):

- every backup the newest ``keep_checkpoints`` (100) checkpoints reference is kept;
- each file's first backup is always kept, since "Restore code" falls back to it for a
  file the target checkpoint does not list. "First" is the lowest version *on disk*: a
  file the agent created has a ``null`` v1 (no file), so its v2 is kept instead — more
  than the client needs, never less;
- each file's newest backup on disk is kept even when no checkpoint names it. The client
  writes one at ``/exit`` that no record references (01 ``a.txt@v3``), and a running
  client writes the backup a moment before the record that names it: deleting the
  newest version could race a live writer, and it is the file's last known state;
- names that are not ``<sha256[:16]>@v<N>`` (temporary files, anything foreign), and
  anything that is not a regular file, are not ours to judge: kept;
- every other backup is superseded and may be removed.

Where the client differs: in 15 it also deleted ``v11``, which the 11th-newest *recorded*
checkpoint names. It counts the snapshot it makes in memory at ``/exit`` (never written
to the transcript) among its 100. This planner counts only recorded checkpoints, so it
keeps that one extra backup, and restoring code to that prompt still works.

Planning is pure (:func:`build_backup_retention`, over a directory listing and the
checkpoints); :func:`read_backup_listing` does the I/O. :func:`apply_backup_retention`
re-checks each file just before unlinking it (still a regular file in that folder, same
inode and size as planned), works through a descriptor of the session folder opened
without following symlinks, and reports exactly what it removed. (The config root and
``file-history/`` itself may be symlinks the user made, e.g. to another disk; the
session folder and the backups in it are never followed.) A hard-linked backup (dedup) frees space
only when its last link goes, so bytes freed are counted from ``st_nlink``, not sizes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sessiontree.checkpoints.read import Checkpoint
from sessiontree.errors import Refused
from sessiontree.storage.backups import parse_backup_name
from sessiontree.storage.layout import Layout, session_folder_name
from sessiontree.storage.remove import remove_file_at

#: How many of the newest checkpoints keep every backup they reference (the client's cap).
KEEP_CHECKPOINTS = 100

KeepReason = Literal[
    "newest-checkpoints",  # referenced by one of the newest ``keep_checkpoints``
    "first-backup",  # the file's lowest version on disk
    "newest-backup",  # the file's highest version on disk (the /exit backup, a live write)
    "not-a-backup",  # a name that is not ``<hash16>@v<N>``
    "not-a-regular-file",  # a folder, symlink, socket …: never followed, never removed
]
KEEP_REASONS: tuple[KeepReason, ...] = (
    "newest-checkpoints",
    "first-backup",
    "newest-backup",
    "not-a-backup",
    "not-a-regular-file",
)


@dataclass(frozen=True)
class BackupEntry:
    """One entry of a session's backup folder, as listed (``lstat``, never followed)."""

    name: str
    is_regular: bool
    size: int
    inode: int
    device: int
    links: int


@dataclass(frozen=True)
class BackupDeletion:
    """A backup the plan removes, and what the listing said about it."""

    path: Path
    bytes: int
    reason: str
    inode: int
    device: int
    links: int

    def as_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "bytes": self.bytes, "reason": self.reason}


@dataclass(frozen=True)
class BackupRetentionPlan:
    """What retention would remove from one session's backup folder (changes nothing)."""

    session_id: str
    folder: Path
    checkpoints: int
    kept_checkpoints: int
    delete: tuple[BackupDeletion, ...]
    kept: Mapping[KeepReason, int]
    #: What removing ``delete`` frees: a hard-linked inode counts once, and only when
    #: every one of its links is in the plan.
    bytes_freed: int

    @property
    def bytes_listed(self) -> int:
        """The sizes of the files to delete, added up (more than is freed when linked)."""
        return sum(d.bytes for d in self.delete)

    def as_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "folder": str(self.folder),
            "checkpoints": self.checkpoints,
            "keptCheckpoints": self.kept_checkpoints,
            "delete": [d.as_json() for d in self.delete],
            "kept": {reason: self.kept.get(reason, 0) for reason in KEEP_REASONS},
            "bytesFreed": self.bytes_freed,
        }


def _referenced(checkpoints: Iterable[Checkpoint]) -> set[str]:
    return {
        b.backup_file_name
        for c in checkpoints
        for b in c.files.values()
        if b.backup_file_name is not None
    }


def build_backup_retention(
    session_id: str,
    folder: Path,
    entries: Iterable[BackupEntry],
    checkpoints: list[Checkpoint],
    *,
    keep_checkpoints: int = KEEP_CHECKPOINTS,
) -> BackupRetentionPlan:
    """The retention plan for one session's listing (pure: no file is read).

    ``checkpoints`` oldest first, as :func:`~sessiontree.checkpoints.read.read_checkpoints`
    returns them; the newest ``keep_checkpoints`` keep every backup they name.
    """
    if keep_checkpoints < 1:
        raise Refused("keep_checkpoints must be at least 1")
    listed = sorted(entries, key=lambda e: e.name)
    newest = checkpoints[-keep_checkpoints:]
    keep_names = _referenced(newest)

    versions: dict[str, list[int]] = {}
    for entry in listed:
        parsed = parse_backup_name(entry.name)
        if entry.is_regular and parsed is not None:
            versions.setdefault(parsed[0], []).append(parsed[1])
    first = {digest: min(found) for digest, found in versions.items()}
    last = {digest: max(found) for digest, found in versions.items()}

    kept: dict[KeepReason, int] = dict.fromkeys(KEEP_REASONS, 0)
    doomed: list[BackupEntry] = []
    for entry in listed:
        parsed = parse_backup_name(entry.name)
        if not entry.is_regular:
            kept["not-a-regular-file"] += 1
        elif parsed is None:
            kept["not-a-backup"] += 1
        elif entry.name in keep_names:
            kept["newest-checkpoints"] += 1
        elif parsed[1] == first[parsed[0]]:
            kept["first-backup"] += 1
        elif parsed[1] == last[parsed[0]]:
            kept["newest-backup"] += 1
        else:
            doomed.append(entry)

    links_planned: dict[tuple[int, int], int] = {}
    for entry in doomed:
        key = (entry.device, entry.inode)
        links_planned[key] = links_planned.get(key, 0) + 1
    freed = 0
    sizes = {(e.device, e.inode): e.size for e in doomed}
    links = {(e.device, e.inode): e.links for e in doomed}
    for key, planned in links_planned.items():
        if planned >= links[key]:  # every link goes: the inode's blocks are freed
            freed += sizes[key]

    return BackupRetentionPlan(
        session_id=session_id,
        folder=folder,
        checkpoints=len(checkpoints),
        kept_checkpoints=len(newest),
        delete=tuple(
            BackupDeletion(
                path=folder / e.name,
                bytes=e.size,
                reason=f"superseded: not in the newest {keep_checkpoints} checkpoints, "
                "neither the file's first nor its newest backup",
                inode=e.inode,
                device=e.device,
                links=e.links,
            )
            for e in doomed
        ),
        kept=kept,
        bytes_freed=freed,
    )


def pruned_by_client(
    entries: Iterable[BackupEntry],
    checkpoints: list[Checkpoint],
    *,
    keep_checkpoints: int = KEEP_CHECKPOINTS - 1,
) -> Callable[[str], bool]:
    """Whether a backup a checkpoint names, not on disk, is one the client's retention
    removed (so no damage): the newest ``keep_checkpoints`` checkpoints do not name it,
    and it was neither its file's first backup nor its newest (both are on disk: a
    lower and a higher version of the same file), as the rule above keeps those.
    ``keep_checkpoints`` is one less than the client's 100: it counts its unrecorded
    ``/exit`` snapshot among them (see the module docstring), so the 100th-newest
    recorded checkpoint may have lost its backup too."""
    keep_names = _referenced(checkpoints[-keep_checkpoints:])
    versions: dict[str, list[int]] = {}
    for entry in entries:
        parsed = parse_backup_name(entry.name)
        if entry.is_regular and parsed is not None:
            versions.setdefault(parsed[0], []).append(parsed[1])

    def pruned(name: str) -> bool:
        parsed = parse_backup_name(name)
        if parsed is None or name in keep_names:
            return False
        on_disk = versions.get(parsed[0], [])
        return any(v < parsed[1] for v in on_disk) and any(v > parsed[1] for v in on_disk)

    return pruned


def read_backup_listing(layout: Layout, session_id: str) -> list[BackupEntry]:
    """``lstat`` of every entry in ``file-history/<sessionId>/`` (empty if there is none).

    A session folder that is itself a symlink is refused: retention never follows one.
    """
    session_folder_name(session_id)  # refused before anything is read or made
    folder = layout.backup_dir(session_id)
    try:
        if stat.S_ISLNK(os.lstat(folder).st_mode):
            raise Refused(f"{folder} is a symlink: backup retention does not follow it")
        scanned = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    entries = []
    for item in scanned:
        try:
            st = item.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed while we listed
        entries.append(
            BackupEntry(
                name=item.name,
                is_regular=stat.S_ISREG(st.st_mode),
                size=st.st_size,
                inode=st.st_ino,
                device=st.st_dev,
                links=st.st_nlink,
            )
        )
    return entries


def plan_backup_retention(
    layout: Layout,
    session_id: str,
    checkpoints: list[Checkpoint],
    *,
    keep_checkpoints: int = KEEP_CHECKPOINTS,
) -> BackupRetentionPlan:
    """What retention would remove from one session's backups (reads, changes nothing)."""
    entries = read_backup_listing(layout, session_id)
    return build_backup_retention(
        session_id,
        layout.backup_dir(session_id),
        entries,
        checkpoints,
        keep_checkpoints=keep_checkpoints,
    )


@dataclass(frozen=True)
class BackupRetentionResult:
    """What :func:`apply_backup_retention` did: removed files, freed bytes, and what it
    left because the file was no longer the one planned."""

    session_id: str
    removed: tuple[Path, ...]
    bytes_freed: int
    skipped: tuple[tuple[Path, str], ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "removed": [str(p) for p in self.removed],
            "bytesFreed": self.bytes_freed,
            "skipped": [{"path": str(p), "reason": r} for p, r in self.skipped],
        }


def _recheck(deletion: BackupDeletion, st: os.stat_result) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return "no longer a regular file"
    if (st.st_dev, st.st_ino) != (deletion.device, deletion.inode):
        return "replaced since it was planned (another inode)"
    if st.st_size != deletion.bytes:
        return "changed size since it was planned"
    return None


def apply_backup_retention(layout: Layout, plan: BackupRetentionPlan) -> BackupRetentionResult:
    """Remove the plan's superseded backups, each re-checked just before it goes."""
    session_folder_name(plan.session_id)  # refused before anything is read or made
    folder = layout.backup_dir(plan.session_id)
    if plan.folder != folder:
        raise Refused(f"plan is for {plan.folder}, not {folder}")
    removed: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    freed = 0
    if not plan.delete:
        return BackupRetentionResult(plan.session_id, (), 0, ())
    # All work goes through a descriptor of the session folder, opened with O_NOFOLLOW:
    # swapping the folder for a symlink after planning cannot redirect an unlink.
    try:
        parent_fd = os.open(layout.file_history_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise Refused(f"cannot open {layout.file_history_dir}: {exc.strerror}") from exc
    try:
        folder_fd = os.open(
            plan.session_id, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd
        )
    except OSError as exc:
        raise Refused(f"cannot open {folder} without following links: {exc.strerror}") from exc
    finally:
        os.close(parent_fd)
    try:
        for deletion in plan.delete:
            name = deletion.path.name
            if deletion.path.parent != folder or parse_backup_name(name) is None:
                skipped.append((deletion.path, "not a backup in this session's folder"))
                continue
            try:
                st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
            except FileNotFoundError:
                skipped.append((deletion.path, "already gone"))
                continue
            why = _recheck(deletion, st)
            if why is not None:
                skipped.append((deletion.path, why))
                continue
            # The window between this lstat and the unlink is a rename in a folder only
            # the client and sessiontree write to; the inode check above is the guard.
            try:
                freed += remove_file_at(folder_fd, name, expect=st)
            except Refused as exc:
                skipped.append((deletion.path, str(exc)))
                continue
            except OSError as exc:
                skipped.append((deletion.path, exc.strerror or "cannot remove"))
                continue
            removed.append(deletion.path)
    finally:
        os.close(folder_fd)
    return BackupRetentionResult(plan.session_id, tuple(removed), freed, tuple(skipped))
