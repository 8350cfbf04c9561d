"""Capture file checkpoints the way Claude Code does, for an agent host to call.

An agent host calls, in the order the client writes a turn (FINDINGS §1, FORMAT.md
"Checkpoints")::

    history = FileHistory(layout, session_id, cwd)   # or FileHistory.load(layout, transcript)
    append(history.snapshot(prompt_uuid))             # before the prompt record
    ...                                               # the assistant record with a tool_use
    delta = history.before_edit(path, prompt_uuid=prompt_uuid, tool_use_record_uuid=uuid)
    if delta is not None:
        append(delta)                                 # then the tool edits the file
    marker = history.note_untracked_changes()         # after a Bash call: None or a record

The rules, as client 2.1.328 writes them (its records in the fixtures, its code):

- A file is backed up before its **first** edit in the session: ``v1`` holds its bytes,
  or ``backupFileName: null`` when it does not exist. Later edits back nothing up.
- At each prompt every tracked file gets an entry: a file unchanged since the backup in
  the latest snapshot reuses that entry (same version, same ``backupTime``); a changed
  one gets ``@v<N+1>``, N the highest version the file ever had (even when it equals an
  older one: 02's notes.md@v3 = v1); a missing one gets ``null`` at ``N+1``, every time.
- ``trackingPath`` is relative to the session's cwd (absolute outside it);
  ``realParentDir`` is the real path of the file's parent folder (not always the cwd:
  the client checks it on restore). A backup keeps the file's permission bits.
- A file that cannot be backed up (not a regular file, unreadable) keeps its previous
  entry; one that cannot be tracked at all flags the snapshot ``hasUntrackedChanges``.
- Only the newest 100 checkpoints keep their backups: when a snapshot makes more, the
  backups only older checkpoints name are deleted, each file's first kept (the client
  does this at each snapshot; 15-many-checkpoints). :mod:`.retention` plans it, a little
  more conservatively than the client (see there); ``keep_checkpoints=None`` turns it off.

"Unchanged" is decided by ``stat`` first: size, mtime, ctime, inode and mode against
what they were when the backup was taken. Only a file whose stat differs (same size and
mode) is compared byte for byte, so a prompt where nothing changed reads no file. A stat
taken too soon after the file's mtime (:func:`racy_window`) is not trusted: a write in
the same clock tick could keep every field equal (git's "racily clean" problem).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sessiontree.checkpoints.read import Checkpoint, FileBackup, read_checkpoints
from sessiontree.checkpoints.retention import (
    KEEP_CHECKPOINTS,
    apply_backup_retention,
    plan_backup_retention,
)
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.model.builders import (
    Backup,
    JsonDict,
    build_snapshot,
    build_snapshot_delta,
    format_timestamp,
)
from sessiontree.storage.backups import BackupStore, backup_version, same_content
from sessiontree.storage.layout import Layout, backup_name

#: A recorded stat is trusted only when the file's mtime is older than the stat by this
#: much: a write in the same clock tick could leave size, mtime and ctime all equal. File
#: systems with sub-second stamps take them from the kernel's coarse clock (a tick, at
#: most 10 ms; exFAT 10 ms), so 100 ms is ample...
FINE_RACY_WINDOW_NS = 100_000_000
#: ...and an mtime on a whole second may come from a 1 s (ext3, HFS+) or 2 s (FAT) clock.
COARSE_RACY_WINDOW_NS = 3_000_000_000


def racy_window(mtime_ns: int) -> int:
    """How long after its mtime a file's stat can still miss a write (see above)."""
    return COARSE_RACY_WINDOW_NS if mtime_ns % 1_000_000_000 == 0 else FINE_RACY_WINDOW_NS


Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class FileStamp:
    """A tracked file's stat when its content was known to equal its latest backup."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    dev: int
    mode: int
    taken_ns: int

    @classmethod
    def of(cls, st: os.stat_result, taken_ns: int) -> FileStamp:
        return cls(
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_ino,
            st.st_dev,
            stat.S_IMODE(st.st_mode),
            taken_ns,
        )

    @property
    def trusted(self) -> bool:
        """The file was last written long enough before this stat to rule out a racy write."""
        return self.mtime_ns < self.taken_ns - racy_window(self.mtime_ns)

    def matches(self, st: os.stat_result) -> bool:
        """``st`` shows the same file, unchanged (every field but when it was taken)."""
        return FileStamp.of(st, self.taken_ns) == self


@dataclass
class TrackedFile:
    """One file this session tracks: its latest checkpoint entry and its highest version."""

    tracking_path: str
    path: str
    latest: Backup | None
    top_version: int
    stamp: FileStamp | None = None


@dataclass(frozen=True)
class CaptureFailure:
    """A file that could not be backed up; its previous entry was kept, as the client does."""

    path: str
    reason: str


@dataclass
class _Current:
    """The latest snapshot, with the first backups its prompt added since."""

    message_id: str
    timestamp: str
    tracked: dict[str, Backup]
    untracked_noted: bool = False


class _NotRegular(Exception):
    pass


class FileHistory:
    """One session's file checkpoints: backups on disk, the records to append returned.

    ``store`` may be shared between sessions (it holds the content index used for dedup);
    ``clock`` gives the time stamps (UTC ``datetime``). ``files`` are the tracked files in
    the order they were first tracked (the order of a snapshot's entries); ``failures``
    the files a backup could not be taken of (their previous entry was kept).
    ``keep_checkpoints``: how many of the newest checkpoints keep their backups (None:
    all); ``pruned`` the backups deleted because only older checkpoints named them.
    """

    def __init__(
        self,
        layout: Layout,
        session_id: str,
        cwd: str | os.PathLike[str],
        *,
        store: BackupStore | None = None,
        clock: Clock = _utc_now,
        keep_checkpoints: int | None = KEEP_CHECKPOINTS,
    ) -> None:
        self.layout = layout
        self.session_id = session_id
        self.cwd = os.path.normpath(os.fspath(cwd))
        if not os.path.isabs(self.cwd):
            raise ValueError(f"cwd must be absolute: {self.cwd!r}")
        self.store = store if store is not None else BackupStore(layout)
        self.clock = clock
        self.files: dict[str, TrackedFile] = {}
        self.failures: list[CaptureFailure] = []
        self.keep_checkpoints = keep_checkpoints
        self.pruned: list[Path] = []
        self._current: _Current | None = None
        #: The checkpoints so far (by prompt, oldest first): what retention keeps backups for.
        self._checkpoints: dict[str, Checkpoint] = {}

    # -- reopening -------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        layout: Layout,
        transcript: Transcript,
        *,
        cwd: str | None = None,
        store: BackupStore | None = None,
        clock: Clock = _utc_now,
        keep_checkpoints: int | None = KEEP_CHECKPOINTS,
    ) -> FileHistory:
        """The state a resumed session continues from: every file its checkpoints track,
        the entries of its latest checkpoint, each file's highest version.

        No stat was recorded with a loaded entry, so each tracked file is compared with
        its backup once (by content when the sizes agree) at the first snapshot.
        """
        found_cwd = cwd or transcript.cwd
        if found_cwd is None:
            raise Refused(f"{transcript.path}: no cwd recorded; pass cwd=")
        history = cls(
            layout,
            transcript.session_id,
            found_cwd,
            store=store,
            clock=clock,
            keep_checkpoints=keep_checkpoints,
        )
        checkpoints = read_checkpoints(transcript)
        history._checkpoints = {c.message_id: c for c in checkpoints}
        for checkpoint in checkpoints:
            for key, entry in checkpoint.files.items():
                tracking = history._tracking_path(history._absolute(key))
                version = max(entry.version, backup_version(entry.backup_file_name) or 0)
                tracked = history.files.get(tracking)
                if tracked is None:
                    history.files[tracking] = TrackedFile(
                        tracking, history._absolute(key), None, version
                    )
                else:
                    tracked.top_version = max(tracked.top_version, version)
        if checkpoints:
            last = checkpoints[-1]
            latest: dict[str, Backup] = {}
            for key, entry in last.files.items():
                tracked = history.files[history._tracking_path(history._absolute(key))]
                tracked.latest = history._loaded(tracked, entry, last.timestamp)
                latest[tracked.tracking_path] = tracked.latest
            history._current = _Current(
                last.message_id, last.timestamp or "", latest, last.has_untracked_changes
            )
        return history

    def _loaded(self, tracked: TrackedFile, entry: FileBackup, at: str | None) -> Backup:
        version = backup_version(entry.backup_file_name) or entry.version
        return Backup(
            entry.backup_file_name,
            version,
            entry.backup_time or at or "",
            entry.real_parent_dir or _real_parent_dir(tracked.path),
        )

    # -- paths -----------------------------------------------------------------------------

    def _absolute(self, path: str | os.PathLike[str]) -> str:
        """The path the client hashes and restores: cwd-joined, normalized, links kept."""
        return os.path.normpath(os.path.join(self.cwd, os.fspath(path)))

    def _tracking_path(self, absolute: str) -> str:
        """Relative to the cwd when inside it, absolute otherwise."""
        if absolute.startswith(self.cwd.rstrip("/") + "/"):
            return os.path.relpath(absolute, self.cwd)
        return absolute

    # -- the hooks -------------------------------------------------------------------------

    def before_edit(
        self,
        abs_path: str | os.PathLike[str],
        *,
        prompt_uuid: str,
        tool_use_record_uuid: str,
    ) -> JsonDict | None:
        """Call before a tool edits (writes, creates, deletes) ``abs_path``.

        The first time the session touches the file: back it up as v1 (its bytes now, or
        ``null`` when it does not exist) and return the ``file-history-delta`` to append
        after the tool_use record (``messageId`` = that record's uuid). Afterwards: None.
        When the file cannot be backed up (not a regular file, unreadable) it stays
        untracked, the reason goes to ``failures``, and the client's answer is returned:
        the latest snapshot marked ``hasUntrackedChanges`` (see
        :meth:`note_untracked_changes`), or None when it already was.
        """
        current = self._current
        if current is None or current.message_id != prompt_uuid:
            raise Refused(
                f"before_edit for prompt {prompt_uuid}: snapshot(prompt_uuid) comes first "
                f"(latest snapshot: {current.message_id if current else 'none'})"
            )
        path = self._absolute(abs_path)
        tracking = self._tracking_path(path)
        if tracking in self.files:
            return None
        tracked = TrackedFile(tracking, path, None, 0)
        try:
            backup = self._back_up(tracked, 1)
        except FileNotFoundError:
            backup = self._absent(tracked, 1)
        except (OSError, _NotRegular) as exc:
            self._fail(tracked, exc)
            return self.note_untracked_changes()
        self.files[tracking] = tracked
        current.tracked[tracking] = backup
        return build_snapshot_delta(
            tool_use_record_uuid,
            snapshot_message_id=current.message_id,
            tracking_path=tracking,
            backup=backup,
            timestamp=self._now(),
        )

    def snapshot(self, prompt_uuid: str) -> JsonDict:
        """The ``file-history-snapshot`` for a new prompt (append it before the prompt)."""
        tracked = {t.tracking_path: self._checkpoint(t) for t in self.files.values()}
        timestamp = self._now()
        self._current = _Current(prompt_uuid, timestamp, tracked)
        self._checkpoints.pop(prompt_uuid, None)
        self._checkpoints[prompt_uuid] = Checkpoint(
            prompt_uuid,
            timestamp,
            {
                path: FileBackup(
                    path, b.version, b.backup_file_name, b.backup_time, b.real_parent_dir
                )
                for path, b in tracked.items()
            },
        )
        self._prune()
        return build_snapshot(prompt_uuid, dict(tracked), timestamp=timestamp)

    def _prune(self) -> None:
        """Past ``keep_checkpoints`` checkpoints, delete the backups only older ones name
        (planned by :mod:`.retention`; each file's first and newest backups stay)."""
        keep = self.keep_checkpoints
        if keep is None or len(self._checkpoints) <= keep:
            return
        checkpoints = list(self._checkpoints.values())
        plan = plan_backup_retention(
            self.layout, self.session_id, checkpoints, keep_checkpoints=keep
        )
        if plan.delete:
            self.pruned.extend(apply_backup_retention(self.layout, plan).removed)
        for message_id in [c.message_id for c in checkpoints[:-keep]]:
            del self._checkpoints[message_id]  # evicted: they keep nothing any more

    def note_untracked_changes(self) -> JsonDict | None:
        """After a change the hooks did not see (a Bash call): the latest snapshot again,
        with ``hasUntrackedChanges: true``, once per prompt; None when already noted."""
        if self._current is None or self._current.untracked_noted:
            return None
        self._current.untracked_noted = True
        current = self._current
        return build_snapshot(
            current.message_id,
            dict(current.tracked),
            timestamp=current.timestamp,
            has_untracked_changes=True,
        )

    @property
    def current_prompt(self) -> str | None:
        """The prompt of the latest snapshot (the one deltas are folded into)."""
        return self._current.message_id if self._current else None

    # -- one file --------------------------------------------------------------------------

    def _checkpoint(self, tracked: TrackedFile) -> Backup:
        """This prompt's entry for one tracked file."""
        taken = time.time_ns()
        try:
            st = os.stat(tracked.path)
        except (FileNotFoundError, NotADirectoryError):
            return self._absent(tracked, tracked.top_version + 1)
        except OSError as exc:
            return self._keep(tracked, exc)
        if not stat.S_ISREG(st.st_mode):
            return self._keep(tracked, _NotRegular("not a regular file"))
        latest = tracked.latest
        try:
            if latest is not None and self._unchanged(tracked, latest, st, taken):
                return latest
            return self._back_up(tracked, tracked.top_version + 1)
        except FileNotFoundError:
            return self._absent(tracked, tracked.top_version + 1)
        except (OSError, _NotRegular) as exc:
            return self._keep(tracked, exc)

    def _unchanged(
        self, tracked: TrackedFile, latest: Backup, st: os.stat_result, taken: int
    ) -> bool:
        """The file still holds its latest backup's bytes (stat first, bytes if needed)."""
        if latest.backup_file_name is None:
            return False  # it exists now, and did not then
        mode = stat.S_IMODE(st.st_mode)
        stamp = tracked.stamp
        if stamp is not None and stamp.trusted and stamp.matches(st):
            return True  # the common case: a stat, no path built, no read
        backup = self.layout.backup_path(self.session_id, latest.backup_file_name)
        if stamp is not None:
            if (stamp.size, stamp.mode) != (st.st_size, mode):
                return False
        else:
            try:
                kept = backup.stat()
            except FileNotFoundError:
                return False
            if (kept.st_size, stat.S_IMODE(kept.st_mode)) != (st.st_size, mode):
                return False
        if not same_content(Path(tracked.path), backup):
            return False
        tracked.stamp = FileStamp.of(st, taken)
        return True

    def _back_up(self, tracked: TrackedFile, version: int) -> Backup:
        """Copy the file's bytes now into backup ``@v<version>`` and make it the latest."""
        taken = time.time_ns()
        data, st, stable = _read_file(tracked.path)
        name = backup_name(tracked.path, version)
        self.store.write(self.session_id, name, data, mode=st.st_mode)
        backup = Backup(name, version, self._now(), _real_parent_dir(tracked.path))
        tracked.latest, tracked.top_version = backup, version
        tracked.stamp = FileStamp.of(st, taken) if stable else None
        return backup

    def _absent(self, tracked: TrackedFile, version: int) -> Backup:
        backup = Backup(None, version, self._now(), _real_parent_dir(tracked.path))
        tracked.latest, tracked.top_version, tracked.stamp = backup, version, None
        return backup

    def _keep(self, tracked: TrackedFile, exc: Exception) -> Backup:
        """A backup failed: the client keeps the file's previous entry."""
        self._fail(tracked, exc)
        if tracked.latest is None:
            return self._absent(tracked, tracked.top_version + 1)
        return tracked.latest

    def _fail(self, tracked: TrackedFile, exc: Exception) -> None:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.failures.append(CaptureFailure(tracked.path, reason))

    def _now(self) -> str:
        return format_timestamp(self.clock())


def _read_file(path: str) -> tuple[bytes, os.stat_result, bool]:
    """The file's bytes, its stat, and whether the stat held for the whole read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise _NotRegular("not a regular file")
        chunks = []
        while chunk := os.read(fd, 1024 * 1024):
            chunks.append(chunk)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    stable = (before.st_size, before.st_mtime_ns, before.st_ctime_ns) == (
        after.st_size,
        after.st_mtime_ns,
        after.st_ctime_ns,
    )
    return b"".join(chunks), before, stable


def _real_parent_dir(path: str) -> str:
    """``realParentDir``: the real path of the parent folder (missing tail parts kept)."""
    return os.path.realpath(os.path.dirname(path))
