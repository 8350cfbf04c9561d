"""Whose the files sessiontree writes into someone's folder are: as root, that someone's.

Run as root (``sudo``, a container's default user) on a user's project, a restore would
leave files owned by root that the user can no longer edit or remove. So a file written
in place of another keeps the owner (user and group) of the one it replaces, and a file
or folder made new takes the owner of the folder it is made in. Only root can give a
file away; anyone else writes files that are theirs already, and nothing is done.
"""

from __future__ import annotations

import os
from pathlib import Path

#: A file's owner: (uid, gid).
Owner = tuple[int, int]


def owner_to_keep(path: Path) -> Owner | None:
    """Who should own what is written at ``path``: the owner of what is there now, else
    of the nearest folder above it that exists. None when not running as root (nothing
    to give away) or when the owner is root's own."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    for candidate in (path, *path.parents):
        try:
            st = candidate.lstat()
        except (FileNotFoundError, NotADirectoryError):
            continue
        owner = (st.st_uid, st.st_gid)
        return None if owner == (0, 0) else owner
    return None


def make_folders(folder: Path, owner: Owner | None, *, mode: int = 0o777) -> None:
    """``mkdir -p folder``, each folder made owned by ``owner`` (when given)."""
    missing = []
    for candidate in (folder, *folder.parents):
        if candidate.is_dir():
            break
        missing.append(candidate)
    for made in reversed(missing):
        try:
            made.mkdir(mode=mode)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs, left as it is
        if owner is not None:
            os.lchown(made, *owner)
