"""Deleting user data: the one safe delete.

Only regular files and the folders sessiontree laid out are removed, and a link is never
followed: a symlink met inside a folder is removed as a link (its target is untouched), a
symlink, device, FIFO or socket named as the file to delete is refused. Callers that
planned a deletion pass what they saw (``expect``) and nothing is removed if the name
now holds something else. A link is removed only when it is what was asked for
(:func:`remove_link`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from sessiontree.errors import Refused


def open_folder(base: Path, names: Sequence[str] = ()) -> int:
    """A descriptor of ``base/names…``. ``base`` may be a link the user made (a top
    folder such as ``~/.claude/projects``); no component below it is followed."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    for name in names:
        try:
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


def freed_by(st: os.stat_result) -> int:
    """The bytes removing this name frees now: a regular file's size, if it is the last
    link to it."""
    return st.st_size if stat.S_ISREG(st.st_mode) and st.st_nlink <= 1 else 0


def remove_file_at(folder_fd: int, name: str, *, expect: os.stat_result | None = None) -> int:
    """Remove the regular file ``name`` in an open folder; the bytes freed. Raises
    :class:`FileNotFoundError` when it is gone and :class:`~sessiontree.errors.Refused`
    when it is not a regular file or (``expect``) not the file that was planned."""
    st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{name} is not a regular file; sessiontree deletes only files")
    if expect is not None and (st.st_dev, st.st_ino) != (expect.st_dev, expect.st_ino):
        raise Refused(f"{name} was replaced since it was planned")
    os.unlink(name, dir_fd=folder_fd)
    return freed_by(st)


def remove_file(path: Path, *, missing_ok: bool = True) -> int:
    """Remove the regular file at ``path`` (its folder is opened without following a
    link in its last component); the bytes freed, 0 when it was already gone (with
    ``missing_ok``). Refuses anything that is not a regular file."""
    try:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        if missing_ok:
            return 0
        raise
    try:
        return remove_file_at(fd, path.name)
    except FileNotFoundError:
        if missing_ok:
            return 0
        raise
    finally:
        os.close(fd)


def remove_tree_at(parent_fd: int, name: str, path: Path, failed: list[tuple[Path, str]]) -> int:
    """Remove the folder ``name`` in an open folder and everything in it, never following
    a link (a link inside is removed as a link); the bytes freed. What cannot be removed
    is added to ``failed`` (path, reason) and the rest goes on."""
    freed = 0
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
    try:
        with os.scandir(fd) as listing:
            children = list(listing)
        for entry in children:
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    freed += remove_tree_at(fd, entry.name, path / entry.name, failed)
                else:
                    os.unlink(entry.name, dir_fd=fd)
                    freed += freed_by(st)
            except FileNotFoundError:
                continue
            except OSError as exc:
                failed.append((path / entry.name, exc.strerror or str(exc)))
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=parent_fd)
    except OSError as exc:
        failed.append((path, exc.strerror or str(exc)))
    return freed


def remove_tree(path: Path) -> tuple[int, list[tuple[Path, str]]]:
    """Remove the folder at ``path`` and everything in it, never following a link; the
    bytes freed and what could not be removed. A ``path`` that is itself a link is
    refused; one that is gone frees nothing."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return 0, []
    if not stat.S_ISDIR(st.st_mode):
        raise Refused(f"{path} is not a folder; sessiontree never follows a link to delete")
    failed: list[tuple[Path, str]] = []
    parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        freed = remove_tree_at(parent_fd, path.name, path, failed)
    finally:
        os.close(parent_fd)
    return freed, failed


def remove_link(path: Path) -> bool:
    """Remove the symlink at ``path`` (what it points to is left alone); whether it went.
    Refuses anything that is not a link: a file or a folder found there is not removed."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISLNK(st.st_mode):
        raise Refused(f"{path} is not a symlink")
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def remove_empty_folder(path: Path) -> bool:
    """Remove ``path`` if it is an empty folder (not a link); whether it went."""
    try:
        if not stat.S_ISDIR(path.lstat().st_mode):
            return False
        path.rmdir()
    except OSError:
        return False
    return True
