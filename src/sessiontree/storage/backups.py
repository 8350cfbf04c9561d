"""Checkpoint backup files: written atomically, identical content stored once.

A backup is ``file-history/<sessionId>/<sha256(abs path)[:16]>@v<N>`` (named by
:func:`~sessiontree.storage.layout.backup_name`), holding a tracked file's bytes verbatim
with the file's own permission bits: client 2.1.328 ``chmod``s each backup to its source's
mode, compares that mode to decide "unchanged", and gives a restored file the backup's
mode back, so a 0600 backup would both leak a new version and change the file on restore.

Dedup: an edit-heavy session backs the same content up again and again (a file put back
as it was, a restore, the next session's v1 of the same files). :class:`BackupStore`
stores such content once: the new name becomes a hard link to an existing backup with the
same bytes and mode, in this session or any other under ``file-history/``. Names are
unchanged, so the client and every reader see ordinary files. Linking is safe because a
backup is never written in place: the client unlinks a name before it writes it again
(2.1.328), and :func:`write_backup` and the link path here publish with ``os.replace``.
When linking fails (another filesystem, a filesystem without links, the link limit, a
protected-hardlinks refusal) the content is copied.

The content index is built lazily and cheaply: one ``stat`` per existing backup, grouped
by size and mode; a group is hashed only when a new backup has its size and mode, each
inode at most once, and a lookup checks only the backups with the new one's digest.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sessiontree.storage.atomic import fsync_dir, write_atomically
from sessiontree.storage.layout import Layout

#: A backup name as the client writes it: ``<sha256(abs path)[:16]>@v<N>`` (or the whole
#: digest); the groups are the path digest and the version. Temporary files start with ``.``
#: and never match.
BACKUP_NAME = re.compile(r"^([0-9a-f]{16}(?:[0-9a-f]{48})?)@v([0-9]+)$")

#: The version suffix alone, which the client reads from any name (see :func:`backup_version`).
_VERSION_SUFFIX = re.compile(r"@v([0-9]+)$")

#: ``os.link`` errors that mean "cannot link here": copy instead.
_LINK_FALLBACK = frozenset(
    {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EACCES}
)

_CHUNK = 1024 * 1024

Scope = Literal["all-sessions", "session"]


def parse_backup_name(name: str) -> tuple[str, int] | None:
    """``(path digest, version)`` of a backup file name, or None if it is not one (the
    inverse of :func:`~sessiontree.storage.layout.backup_name`)."""
    match = BACKUP_NAME.match(name)
    return (match.group(1), int(match.group(2))) if match else None


def backup_version(name: object) -> int | None:
    """The N of a ``backupFileName`` ending in ``@v<N>``, or None.

    The client trusts this N over an entry's ``version`` field when it picks the next
    version, and reads it from any name, not only one :func:`parse_backup_name` accepts
    (2.1.328)."""
    if not isinstance(name, str):
        return None
    match = _VERSION_SUFFIX.search(name)
    return int(match.group(1)) if match else None


def content_digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def same_content(a: Path, b: Path) -> bool:
    """True when two files hold the same bytes (read in chunks; sizes checked first)."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with a.open("rb") as left, b.open("rb") as right:
        while True:
            chunk = left.read(_CHUNK)
            if chunk != right.read(_CHUNK):
                return False
            if not chunk:
                return True


def write_backup(target: Path, data: bytes, *, mode: int, fsync: bool = True) -> os.stat_result:
    """Write ``data`` to ``target`` atomically (:mod:`~sessiontree.storage.atomic`).

    A reader sees the old file or the whole new one, never a part; an existing backup of
    that name is replaced, never written into (it may share its inode with other names).
    """
    return write_atomically(target, data, mode=mode, fsync=fsync, folder_mode=0o700)


@dataclass(frozen=True)
class StoredBackup:
    """Where a backup went, and whether it shares its bytes with an earlier backup."""

    path: Path
    linked_to: Path | None


@dataclass(frozen=True)
class _Known:
    """One indexed backup inode: where it was seen and what it looked like then."""

    path: Path
    dev: int
    ino: int
    size: int
    mtime_ns: int
    mode: int

    @classmethod
    def of(cls, path: Path, st: os.stat_result) -> _Known:
        return cls(path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, stat.S_IMODE(st.st_mode))

    def still(self, st: os.stat_result) -> bool:
        """The same inode, unchanged since it was indexed."""
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == (
            self.dev,
            self.ino,
            self.size,
            self.mtime_ns,
        )


class ContentIndex:
    """Existing backups by content: a stat-only scan, digests on demand, each inode once.

    The scan groups backups by (size, mode) without reading them. The first time a new
    backup has a given size and mode, that group is hashed (each inode at most once per
    index, read through a descriptor checked to be the scanned inode) and moved into the
    by-content table. A lookup then touches only backups with the new one's digest and
    mode: one ``lstat`` each, to drop a name replaced since it was indexed. No lookup
    walks every backup of its size (one did: 1,000 new backups of one size took ~500,000
    ``lstat`` calls).
    """

    def __init__(self, folders: Iterator[Path]) -> None:
        self._folders = folders
        self._unhashed: dict[tuple[int, int], list[_Known]] | None = None
        self._by_content: dict[tuple[bytes, int], list[_Known]] = {}
        self._digests: dict[tuple[int, int, int, int], bytes] = {}

    def _scan(self) -> dict[tuple[int, int], list[_Known]]:
        if self._unhashed is None:
            self._unhashed = {}
            for folder in self._folders:
                for path, st in _iter_backups(folder):
                    known = _Known.of(path, st)
                    self._unhashed.setdefault((known.size, known.mode), []).append(known)
        return self._unhashed

    def _hash_group(self, size: int, mode: int) -> None:
        """Move the scanned backups of this size and mode into the by-content table."""
        for known in self._scan().pop((size, mode), ()):
            identity = (known.dev, known.ino, known.size, known.mtime_ns)
            digest = self._digests.get(identity)
            if digest is None:
                digest = _digest_if_still(known)
                if digest is None:
                    continue  # gone, unreadable, or replaced since the scan
                self._digests[identity] = digest
            self._by_content.setdefault((digest, mode), []).append(known)

    def candidates(self, size: int, digest: bytes, mode: int) -> Iterator[_Known]:
        """Indexed backups with these bytes and this mode, still as they were indexed."""
        self._hash_group(size, mode)
        same = self._by_content.get((digest, mode))
        if not same:
            return
        at = 0
        while at < len(same):
            known = same[at]
            try:
                st: os.stat_result | None = known.path.lstat()
            except FileNotFoundError:
                st = None
            if st is None or not known.still(st):
                # Replaced or removed since it was indexed: never a candidate again (its
                # new content, if written here, was added under its own digest).
                del same[at]
                continue
            yield known
            at += 1

    def add(self, path: Path, st: os.stat_result, digest: bytes) -> None:
        known = _Known.of(path, st)
        self._hash_group(known.size, known.mode)  # so a later scan result is not a duplicate
        self._by_content.setdefault((digest, known.mode), []).append(known)
        self._digests[(known.dev, known.ino, known.size, known.mtime_ns)] = digest


def _digest_if_still(known: _Known) -> bytes | None:
    """The digest of ``known``'s bytes, or None when its name no longer holds the scanned
    inode. Read through one descriptor checked with ``fstat``, so the bytes hashed are the
    inode that was indexed, not whatever was put under that name since; ``O_NOFOLLOW`` and
    ``O_NONBLOCK`` so a planted symlink or FIFO is refused, not followed or waited on."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(known.path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not known.still(os.fstat(handle.fileno())):
            return None
        digest = hashlib.sha256()
        try:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        except OSError:
            return None
    return digest.digest()


def _iter_backups(folder: Path) -> Iterator[tuple[Path, os.stat_result]]:
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if not BACKUP_NAME.match(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            yield Path(entry.path), st


def iter_backup_dirs(layout: Layout) -> Iterator[Path]:
    """Every session's backup folder under ``file-history/``, by session id."""
    try:
        entries = sorted(os.scandir(layout.file_history_dir), key=lambda e: e.name)
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield layout.backup_dir(entry.name)


class BackupStore:
    """Writes the backups of one config root, each distinct content stored once.

    ``scope`` says where an identical earlier backup may be found: in any session under
    ``file-history/`` (the default) or only in the session being written. ``link=False``
    turns dedup off (a copy per backup, as the client does).
    """

    def __init__(
        self,
        layout: Layout,
        *,
        scope: Scope = "all-sessions",
        link: bool = True,
        fsync: bool = True,
    ) -> None:
        self.layout = layout
        self.scope = scope
        self.link = link
        self.fsync = fsync
        self._indexes: dict[str, ContentIndex] = {}

    def _index(self, session_id: str) -> ContentIndex:
        key = "" if self.scope == "all-sessions" else session_id
        if key not in self._indexes:
            folders = (
                iter_backup_dirs(self.layout)
                if self.scope == "all-sessions"
                else iter([self.layout.backup_dir(session_id)])
            )
            self._indexes[key] = ContentIndex(folders)
        return self._indexes[key]

    def write(self, session_id: str, name: str, data: bytes, *, mode: int) -> StoredBackup:
        """Store ``data`` as backup ``name`` of ``session_id`` with permission bits ``mode``."""
        if not BACKUP_NAME.match(name):
            raise ValueError(f"not a backup file name: {name!r}")
        target = self.layout.backup_path(session_id, name)
        mode = stat.S_IMODE(mode)
        if not self.link:
            write_backup(target, data, mode=mode, fsync=self.fsync)
            return StoredBackup(target, None)
        digest = content_digest(data)
        index = self._index(session_id)
        for known in index.candidates(len(data), digest, mode):
            if known.path == target:
                return StoredBackup(target, None)  # already there, as it is
            st = self._link(known, target)
            if st is not None:
                index.add(target, st, digest)
                return StoredBackup(target, known.path)
        st = write_backup(target, data, mode=mode, fsync=self.fsync)
        index.add(target, st, digest)
        return StoredBackup(target, None)

    def _link(self, known: _Known, target: Path) -> os.stat_result | None:
        """Publish ``target`` as a hard link to ``known``; None when it cannot be linked."""
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temp = target.with_name(f".{target.name}.{os.urandom(6).hex()}.link")
        try:
            os.link(known.path, temp, follow_symlinks=False)
        except OSError as exc:
            if exc.errno in _LINK_FALLBACK or exc.errno == errno.ENOENT:
                return None
            raise
        try:
            st = temp.lstat()
            # The name may have been replaced between the check and the link (a client
            # rewriting that backup): only the inode whose bytes were checked may be used.
            if not known.still(st):
                return None
            os.replace(temp, target)
            if self.fsync:
                fsync_dir(target.parent)
            return st
        finally:
            # rename(2) leaves both names when they already are links to one inode.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)


@dataclass(frozen=True)
class DiskUse:
    """What backups take: each inode once (``stored_bytes``) against a copy per name."""

    files: int
    inodes: int
    stored_bytes: int
    naive_bytes: int

    @property
    def saved_bytes(self) -> int:
        return self.naive_bytes - self.stored_bytes

    @property
    def ratio(self) -> float:
        """Stored over naive (1.0 when there is nothing, or nothing shared)."""
        return self.stored_bytes / self.naive_bytes if self.naive_bytes else 1.0


def measure_disk_use(layout: Layout, session_id: str | None = None) -> DiskUse:
    """Backups of one session (or all under ``file-history/``): distinct inodes × size
    against the sum of every backup's size (a copy per version, the client's way)."""
    if session_id is not None:
        folders: Iterator[Path] = iter([layout.backup_dir(session_id)])
    else:
        folders = iter_backup_dirs(layout)
    files = stored = naive = 0
    seen: set[tuple[int, int]] = set()
    for folder in folders:
        for _path, st in _iter_backups(folder):
            files += 1
            naive += st.st_size
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                stored += st.st_size
    return DiskUse(files=files, inodes=len(seen), stored_bytes=stored, naive_bytes=naive)
