"""``backups/<name>.backup.<ms>``: a config file's copy, taken before it is changed.

Client 2.1.328 backs up ``~/.claude.json`` this way before it saves it (every fixture
has ``backups/.claude.json.backup.<ms>``): ``<basename>.backup.<Date.now()>`` in
``<root>/backups/``, then it deletes all but the newest 5 backups of that name. (It also
skips the copy when its newest backup is under a minute old; sessiontree changes config
rarely and always keeps the state from just before its own change, so it does not.)

:func:`write_config_file` is the one way sessiontree changes a config file: backup,
then an atomic replace that keeps the file's mode. A config file that is a symlink (a
dotfiles manager's) is written through: its target is replaced and the link kept.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path

from sessiontree.errors import Refused
from sessiontree.storage.backups import write_backup
from sessiontree.storage.layout import Layout

Clock = Callable[[], float]

#: How many backups of one file the client keeps.
KEEP_BACKUPS = 5

#: Mode of a config file sessiontree creates (the client's ``~/.claude.json`` is 0600).
NEW_CONFIG_MODE = 0o600


def format_config_backup_name(name: str, ms: int) -> str:
    """``.claude.json.backup.1795980136746``."""
    return f"{name}.backup.{ms}"


def parse_config_backup_name(name: str, base: str) -> int | None:
    """The time stamp of a backup of ``base``, None for any other name."""
    match = re.fullmatch(re.escape(base) + r"\.backup\.(\d+)", name)
    return int(match.group(1)) if match else None


def _read_source(path: Path) -> tuple[bytes, int] | None:
    """The bytes and permission bits of a config file (through a symlink), None if absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{path}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(), stat.S_IMODE(st.st_mode)
    finally:
        os.close(fd)


def _stamps(folder: Path, base: str) -> list[tuple[int, str]]:
    """The backups of ``base`` in ``folder``, newest first."""
    stamped = []
    for entry in os.scandir(folder):
        ms = parse_config_backup_name(entry.name, base)
        if ms is not None:
            stamped.append((ms, entry.name))
    return sorted(stamped, reverse=True)


def _prune(folder: Path, base: str, keep: int) -> None:
    for _ms, name in _stamps(folder, base)[keep:]:
        path = folder / name
        if path.is_file() and not path.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def backup_config_file(
    layout: Layout, path: Path, *, clock: Clock = time.time, keep: int | None = KEEP_BACKUPS
) -> Path | None:
    """Copy ``path`` to ``backups/<name>.backup.<ms>`` (atomic, 0600); None if it is absent.

    A backup never overwrites another and is always stamped after the newest one (a
    clock that went back, or two backups in one millisecond, take the next stamp). With
    ``keep``, only the newest ``keep`` backups of that name stay, as the client leaves
    them; ``keep=None`` deletes nothing.
    """
    source = _read_source(path)
    if source is None:
        return None
    data, _mode = source
    folder = layout.backups_dir
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Never before the newest backup: a stamp reused after pruning would sort as the
    # oldest and be pruned at once (and two backups in one millisecond must not collide).
    stamps = _stamps(folder, path.name)
    ms = max(int(clock() * 1000), stamps[0][0] + 1 if stamps else 0)
    target = folder / format_config_backup_name(path.name, ms)
    while os.path.lexists(target):
        ms += 1
        target = folder / format_config_backup_name(path.name, ms)
    # 0600 whatever the source's mode: config files hold tokens and API key answers.
    write_backup(target, data, mode=0o600)
    if keep is not None:
        _prune(folder, path.name, max(keep, 1))
    return target


def write_config_file(
    layout: Layout,
    path: Path,
    data: bytes,
    *,
    clock: Clock = time.time,
    keep: int | None = KEEP_BACKUPS,
) -> Path | None:
    """Back ``path`` up, then replace it with ``data`` atomically; the backup's path
    (None when the file did not exist yet: it is created 0600).

    The file keeps its permission bits. When ``path`` is a symlink, its target is
    replaced (the link stays a link).
    """
    backup = backup_config_file(layout, path, clock=clock, keep=keep)
    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = NEW_CONFIG_MODE
    write_backup(target, data, mode=mode)
    return backup
