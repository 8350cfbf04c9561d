"""``shell-snapshots/snapshot-<shell>-<ms>-<rand>.sh``: the user's shell, captured once.

What client 2.1.328 does: at start it runs
``<shell> -c -l <script>`` (environment plus ``SHELL``, ``GIT_EDITOR=true``,
``CLAUDECODE=1``, a 10 s timeout). The script sources ``~/.bashrc`` (``~/.zshrc`` for
zsh) with stdin from ``/dev/null`` and writes, to the snapshot file::

    # Snapshot file
    # Unset all aliases to avoid conflicts with functions
    unalias -a 2>/dev/null || true
    # Shopt                      (bash: ``shopt -p``, before the functions)
    # Functions                  (bash: one ``eval '<declare -f f>' > /dev/null 2>&1`` per
                                  function; zsh: ``typeset -f``; ``_x`` helpers left out)
    # Shell Options              (bash: ``set -o <on options>``, then
                                  ``shopt -s expand_aliases``; zsh: ``setopt <on>``)
    # Aliases                    (``alias -- name='value'``, at most 1,000)
    export PATH=<PATH as that shell has it, printf %q>

The name is ``snapshot-<bash|zsh|sh>-<Date.now()>-<Math.random().toString(36)
.substring(2, 8)>.sh`` (6 base-36 characters). The client deletes its snapshot when it
exits. Its rg/find/grep/pkill shims are the client's own and are not written here.

Differences, on purpose: the file is written atomically (the shell writes a private temp
file, whose bytes are checked and then published 0600 by the atomic writer, the temp
file removed), the capture runs even without an
rc file (the login shell may define functions), and a shell that fails, times out or is
not bash/zsh gives a snapshot with the fallback ``export PATH=…`` only.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.layout import Layout
from sessiontree.storage.remove import remove_file

ShellKind = Literal["bash", "zsh"]
Clock = Callable[[], float]

#: The client's snapshot timeout: 10 seconds.
SNAPSHOT_TIMEOUT_S = 10.0

#: Largest snapshot kept (a shell that dumps megabytes of functions is cut off).
MAX_SNAPSHOT_BYTES = 16 * 1024 * 1024

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"

_HEADER = (
    'echo "# Snapshot file" >| "$SNAPSHOT_FILE"\n'
    'echo "# Unset all aliases to avoid conflicts with functions" >> "$SNAPSHOT_FILE"\n'
    'echo "unalias -a 2>/dev/null || true" >> "$SNAPSHOT_FILE"\n'
)

_BASH_BODY = r"""echo "# Shopt" >> "$SNAPSHOT_FILE"
shopt -p >> "$SNAPSHOT_FILE"
echo "# Functions" >> "$SNAPSHOT_FILE"
declare -f > /dev/null 2>&1
declare -F | while read func; do
  func=${func##* }
  if [[ "$func" == [-+]* ]]; then
    printf 'eval -- %q > /dev/null 2>&1\n' "$(declare -f -- "$func")" >> "$SNAPSHOT_FILE"
  else
    [[ "$func" == _[!_]* ]] ||
      printf 'eval %q > /dev/null 2>&1\n' "$(declare -f "$func")" >> "$SNAPSHOT_FILE"
  fi
done
echo "# Shell Options" >> "$SNAPSHOT_FILE"
set -o | awk '$2 == "on" || $1 == "monitor" {print "set -o " $1}' >> "$SNAPSHOT_FILE"
echo "shopt -s expand_aliases" >> "$SNAPSHOT_FILE"
echo "# Aliases" >> "$SNAPSHOT_FILE"
\alias -p | sed -e '1001,$d' -e 's/^alias -- /alias /' -e 's/^alias /alias -- /' >> "$SNAPSHOT_FILE"
"""

_ZSH_BODY = r"""echo "# Functions" >> "$SNAPSHOT_FILE"
typeset -f > /dev/null 2>&1
typeset +f | grep -vE '^_[^_]' | while read func; do
  typeset -f "$func" >> "$SNAPSHOT_FILE"
done
echo "# Shell Options" >> "$SNAPSHOT_FILE"
setopt | command awk 'NF == 1 || $2 == "on" { print "setopt " $1 }' | head -n 1000 \
  >> "$SNAPSHOT_FILE"
echo "# Aliases" >> "$SNAPSHOT_FILE"
alias | sed -e '1001,$d' -e 's/^alias //g' -e 's/^/alias -- /' >> "$SNAPSHOT_FILE"
"""

_PATH_LINE = r"""__cc_path=$PATH
builtin printf 'export PATH=%q\n' "$__cc_path" >> "$SNAPSHOT_FILE"
unset __cc_path
"""


def shell_kind(shell: str) -> ShellKind | None:
    """``zsh`` or ``bash`` as the client tells them (by name), None for any other shell."""
    for text in (Path(shell).name, shell):
        if "zsh" in text:
            return "zsh"
        if "bash" in text:
            return "bash"
    return None


def format_snapshot_name(shell_name: str, ms: int, suffix: str) -> str:
    """``snapshot-bash-1795980136746-k3x9q2.sh``."""
    return f"snapshot-{shell_name}-{ms}-{suffix}.sh"


def random_suffix() -> str:
    """Six base-36 characters, like ``Math.random().toString(36).substring(2, 8)``."""
    return "".join(secrets.choice(_BASE36) for _ in range(6))


def rc_file(kind: ShellKind | None, home: str) -> Path:
    """The config file the client sources: ``~/.bashrc``, ``~/.zshrc``, else ``~/.profile``."""
    return Path(home) / (f".{kind}rc" if kind else ".profile")


def build_snapshot_script(kind: ShellKind, snapshot_file: str, *, config_file: str | None) -> str:
    """The script the shell runs to write the snapshot to ``snapshot_file`` (pure)."""
    source = (
        f"source {shlex.quote(config_file)} < /dev/null\n"
        if config_file
        else "# No user config file to source\n"
    )
    body = _ZSH_BODY if kind == "zsh" else _BASH_BODY
    return f"SNAPSHOT_FILE={shlex.quote(snapshot_file)}\n{source}{_HEADER}{body}{_PATH_LINE}"


def build_fallback_snapshot(path_value: str) -> str:
    """The snapshot written when the shell cannot be run: the header and PATH only."""
    return (
        "# Snapshot file\n"
        "# Unset all aliases to avoid conflicts with functions\n"
        "unalias -a 2>/dev/null || true\n"
        f"export PATH={shlex.quote(path_value)}\n"
    )


def _run_capture(
    argv: list[str], env: Mapping[str, str], *, cwd: str, timeout: float
) -> int | None:
    """Run the shell in its own process group; the exit code, None on timeout or failure."""
    try:
        process = subprocess.Popen(
            argv,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # so a timeout kills what the rc file started too
        )
    except OSError:
        return None
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return None


def _home_of_user() -> str:
    """This user's home folder from the user database (the environment given has no
    ``HOME``; the library never reads its own process's environment)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return "/"


def _capture(
    shell: str, kind: ShellKind, env: Mapping[str, str], folder: Path, timeout: float
) -> bytes | None:
    fd, temp = tempfile.mkstemp(prefix=".snapshot-", suffix=".tmp", dir=folder)  # 0600
    os.close(fd)
    try:
        home = env.get("HOME") or _home_of_user()
        config = rc_file(kind, home)
        script = build_snapshot_script(
            kind, temp, config_file=str(config) if config.is_file() else None
        )
        shell_env = {**env, "SHELL": shell, "GIT_EDITOR": "true", "CLAUDECODE": "1"}
        cwd = home if Path(home).is_dir() else "/"
        code = _run_capture([shell, "-c", "-l", script], shell_env, cwd=cwd, timeout=timeout)
        if code != 0:
            return None
        with open(temp, "rb") as handle:
            data = handle.read(MAX_SNAPSHOT_BYTES + 1)
        if len(data) > MAX_SNAPSHOT_BYTES or not data.startswith(b"# Snapshot file\n"):
            return None
        return data
    finally:
        remove_file(Path(temp))


def write_shell_snapshot(
    layout: Layout,
    *,
    env: Mapping[str, str],
    shell: str | None = None,
    clock: Clock = time.time,
    rand: Callable[[], str] = random_suffix,
    timeout: float = SNAPSHOT_TIMEOUT_S,
) -> Path:
    """Capture the user's shell into a new ``shell-snapshots/`` file (0600) and return it.

    ``env`` is the environment to run the shell in (the caller's ``os.environ``; it also
    gives ``HOME``, ``PATH`` and, without ``shell``, ``SHELL``, else ``/bin/bash``).
    """
    shell = shell or env.get("SHELL") or "/bin/bash"
    kind = shell_kind(shell)
    folder = layout.shell_snapshots_dir
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = format_snapshot_name(kind or "sh", int(clock() * 1000), rand())
    target = folder / name
    data = _capture(shell, kind, env, folder, timeout) if kind is not None else None
    if data is None:
        data = build_fallback_snapshot(env.get("PATH", os.defpath)).encode("utf-8")
    write_atomically(target, data, mode=0o600, folder_mode=0o700)
    return target
