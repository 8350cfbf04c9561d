"""``session-env/<sessionId>/``: the exports hooks leave for a session's shell commands.

What client 2.1.328 does (read from its code):

- A ``Setup``, ``SessionStart``, ``CwdChanged`` or ``FileChanged`` hook is run with
  ``CLAUDE_ENV_FILE=<root>/session-env/<sessionId>/<event lowercased>-hook-<N>.sh``,
  where ``N`` is the hook's 0-based index among the hooks run for that event. The client
  only makes the folder; the hook appends ``export NAME=value`` lines to the file.
- Before a Bash command, the client builds the script to source: the trimmed content of
  ``$CLAUDE_ENV_FILE`` of its own environment first (when set), then every file of the
  folder whose name matches ``^(setup|sessionstart|cwdchanged|filechanged)-hook-(\\d+)\\.sh$``,
  ordered by event (setup, sessionstart, cwdchanged, filechanged) then by ``N`` as a
  number, each trimmed, empty ones left out, joined with ``\\n``.
- Retention deletes old folders (cleanupPeriodDays); sessiontree removes its own at
  session end with :func:`remove_session_env`.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Literal

from sessiontree.errors import Refused
from sessiontree.storage.layout import Layout, session_folder_name
from sessiontree.storage.remove import remove_file, remove_link, remove_tree

HookEvent = Literal["Setup", "SessionStart", "CwdChanged", "FileChanged"]

#: The names the client reads back, and the order it sources them in.
HOOK_ENV_FILE = re.compile(r"^(setup|sessionstart|cwdchanged|filechanged)-hook-(\d+)\.sh$")
_EVENT_ORDER = {"setup": 0, "sessionstart": 1, "cwdchanged": 2, "filechanged": 3}

#: Hook files larger than this are not read (a runaway hook must not fill memory).
MAX_HOOK_FILE_BYTES = 1024 * 1024


def format_hook_env_file_name(event: HookEvent, hook_index: int) -> str:
    """``sessionstart-hook-0.sh``: the file a hook is given as ``CLAUDE_ENV_FILE``."""
    if hook_index < 0:
        raise ValueError(f"hook index must be 0 or more: {hook_index}")
    return f"{event.lower()}-hook-{hook_index}.sh"


def parse_hook_env_file_name(name: str) -> tuple[int, int] | None:
    """The sort key (event rank, hook index) of a hook env file, None for other names."""
    match = HOOK_ENV_FILE.match(name)
    if match is None:
        return None
    return _EVENT_ORDER[match.group(1)], int(match.group(2))


def hook_env_file(
    layout: Layout, session_id: str, hook_index: int, *, event: HookEvent = "SessionStart"
) -> Path:
    """The ``CLAUDE_ENV_FILE`` path for hook ``hook_index`` (0-based) of ``event``."""
    session_folder_name(session_id)  # refused before anything is read or made
    return layout.session_env_path(session_id) / format_hook_env_file_name(event, hook_index)


def create_session_env(layout: Layout, session_id: str) -> Path:
    """Make ``session-env/<sessionId>/`` (0700) and return it; an existing folder is kept.

    Refuses a symlink in its place: hooks would write through it to somewhere else.
    """
    session_folder_name(session_id)  # refused before anything is read or made
    folder = layout.session_env_path(session_id)
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        st = folder.lstat()
        if not stat.S_ISDIR(st.st_mode):
            raise Refused(f"{folder}: exists and is not a folder") from None
        return folder
    folder.chmod(0o700)  # mkdir's mode is filtered by the umask
    return folder


def _read_regular(path: Path, *, dir_fd: int | None = None) -> str | None:
    """A regular file's text, or None: never through a symlink, never a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HOOK_FILE_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_HOOK_FILE_BYTES + 1)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def list_hook_env_files(layout: Layout, session_id: str) -> list[str]:
    """The hook env file names of a session, in the order the client sources them."""
    session_folder_name(session_id)  # refused before anything is read or made
    folder = layout.session_env_path(session_id)
    try:
        if not stat.S_ISDIR(folder.lstat().st_mode):
            return []  # a symlink (or a file) here is not followed
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    keyed = [(key, name) for name in names if (key := parse_hook_env_file_name(name))]
    return [name for _key, name in sorted(keyed)]


def read_session_env(layout: Layout, session_id: str, *, env_file: Path | None = None) -> str:
    """The script a Bash command of this session sources, as the client builds it.

    ``env_file`` stands for the process's own ``$CLAUDE_ENV_FILE`` (read first, when
    given). Each part is trimmed; empty parts are left out; parts are joined with ``\\n``.
    ``""`` when there is nothing to source. Symlinks are not followed.
    """
    parts: list[str] = []
    if env_file is not None:
        text = _read_regular(env_file)
        if text and text.strip():
            parts.append(text.strip())
    folder = layout.session_env_path(session_id)
    names = list_hook_env_files(layout, session_id)
    if names:
        try:
            dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            names = []
        else:
            try:
                for name in names:
                    text = _read_regular(Path(name), dir_fd=dir_fd)
                    if text and text.strip():
                        parts.append(text.strip())
            finally:
                os.close(dir_fd)
    return "\n".join(parts)


def remove_session_env(layout: Layout, session_id: str) -> bool:
    """Remove ``session-env/<sessionId>/`` at session end; True when something was removed.

    Only that folder (:mod:`sessiontree.storage.remove`): a symlink in its place is
    removed as a link (its target is left alone), and links inside the folder are removed
    without being followed. Raises :class:`~sessiontree.errors.Refused` when something
    in it could not be removed.
    """
    session_folder_name(session_id)  # refused before anything is read or made
    folder = layout.session_env_path(session_id)
    try:
        st = folder.lstat()
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        return remove_link(folder)
    if not stat.S_ISDIR(st.st_mode):  # a file in its place (anything else is refused)
        remove_file(folder)
        return True
    _freed, failed = remove_tree(folder)
    if failed:
        where, why = failed[0]
        raise Refused(f"{where}: {why}")
    return True
