"""Replacing a file whole: the one atomic writer.

A reader (the client included) sees the old file or the whole new one, never a part:
the bytes go to a temp file beside the target (a unique name, so two writers never
share one, and it is removed if anything fails), are fsynced, and the temp file is
renamed over the target, and the folder fsynced.

Only a regular file is ever replaced. An existing target that is anything else (a
device such as ``/dev/null``, a FIFO, a folder, a symlink) is refused: a rename would
swap it for a regular file, and as root that replaces a device node for everyone.
:func:`write_in_place` is for those that are meant to be written to, as they are: a
character device or a FIFO.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sessiontree.errors import Refused

_CHUNK = 1024 * 1024


def write_atomically(
    target: Path,
    data: bytes | Iterable[bytes],
    *,
    mode: int | None = None,
    fsync: bool = True,
    folder_mode: int | None = None,
    owner: tuple[int, int] | None = None,
) -> os.stat_result:
    """Replace (or create) ``target`` with ``data`` (bytes, or chunks streamed in).

    ``mode`` is the new file's permissions; by default an existing file keeps its own,
    and a new one gets what the umask allows. ``folder_mode``: create missing folders
    above ``target`` with these permissions (private data: ``0o700``); without it the
    folder must exist. ``owner`` (uid, gid): the new file's owner, set before it takes
    the target's name (root writing into a user's folder: :mod:`.owner`). Returns the
    new file's ``stat``. Raises
    :class:`~sessiontree.errors.Refused` when ``target`` exists and is not a regular file.
    """
    if folder_mode is not None:
        target.parent.mkdir(parents=True, exist_ok=True, mode=folder_mode)
    try:
        existing = target.lstat()
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise Refused(f"{target} is not a regular file; sessiontree replaces only files")
    if mode is None:
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o666 & ~_umask()
    import tempfile  # (here: a read-only command never pays for importing it)

    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        for chunk in (data,) if isinstance(data, bytes) else data:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        if owner is not None:
            os.fchown(fd, *owner)  # (before fchmod: a chown clears set-id bits)
        os.fchmod(fd, mode)
        if fsync:
            os.fsync(fd)
        written = os.fstat(fd)
        os.close(fd)
        fd = -1
        os.replace(temp, target)
        if fsync:
            fsync_dir(target.parent)
        return written
    finally:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def write_in_place(target: Path, data: bytes | Iterable[bytes]) -> os.stat_result:
    """Write ``data`` into the character device or FIFO at ``target`` (``/dev/null``, a
    terminal, a named pipe), as a shell's ``>`` does: opened for writing without following
    a link and without creating or truncating anything; no temp file and no rename (a
    rename would swap the node for a regular file). Opening a FIFO waits for its reader.

    Nothing is fsynced: a stream has no contents to make durable. Returns the node's
    ``stat``. Raises :class:`~sessiontree.errors.Refused` when ``target`` is anything else
    by the time it is opened (checked on the open descriptor: a node swapped for a file
    or a link after the caller looked is not written)."""
    fd = _open_no_link(
        target,
        os.O_WRONLY | os.O_NOCTTY,
        f"{target} is a symlink; sessiontree writes through no link",
    )
    try:
        st = os.fstat(fd)
        if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise Refused(f"{target} is not a character device or FIFO; it is not written in place")
        pending = bytearray()
        for chunk in (data,) if isinstance(data, bytes) else data:
            pending += chunk
            if len(pending) >= _CHUNK:  # few, large writes: each one wakes a pipe's reader
                _write_all(fd, pending)
                pending.clear()
        _write_all(fd, pending)
        return st
    finally:
        os.close(fd)


def _open_no_link(path: Path, flags: int, refusal: str) -> int:
    """``os.open`` of ``path`` that never follows a symlink at its place (close-on-exec):
    a link there raises :class:`~sessiontree.errors.Refused` saying ``refusal``."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(refusal) from exc
        raise


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def copy_atomically(
    source: Path, target: Path, *, fsync: bool = True, owner: tuple[int, int] | None = None
) -> os.stat_result:
    """Replace (or create) ``target`` with a copy of the regular file ``source`` and its
    permission bits, through :func:`write_atomically`.

    ``source`` is opened without following a link and must be a regular file (a symlink
    planted where a file was expected must not copy whatever it points at; a FIFO must
    not block the copy): otherwise :class:`~sessiontree.errors.Refused`. ``owner``: as
    for :func:`write_atomically`. Returns the new file's ``stat``."""
    fd = _open_no_link(
        source,
        os.O_RDONLY | os.O_NONBLOCK,
        f"{source} is a symlink; sessiontree copies only files",
    )
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise Refused(f"{source} is not a regular file; sessiontree copies only files")
    with os.fdopen(fd, "rb") as handle:
        chunks = iter(lambda: handle.read(_CHUNK), b"")
        return write_atomically(
            target, chunks, mode=stat.S_IMODE(st.st_mode), fsync=fsync, owner=owner
        )


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new name in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
