"""A worker: the daemon forked, becoming the client's run and ending with its exit.

Everything the command line depends on is taken from the client: the standard streams
(its own descriptors: a terminal stays a terminal, a pipe a pipe), the working folder,
the environment (so the root, the caches, ``NO_COLOR``, the time zone), the umask and
the streams' encodings. What the daemon imported stays, which is the point.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import time
import traceback
from typing import Any, NoReturn

from sessiontree.cli.daemon.client import isatty


def run(request: dict[str, Any], fds: list[int]) -> NoReturn:
    """Take on the client's process state, run its command line, and leave with its exit
    code (never returning into the daemon's loop, whatever happens)."""
    code = 1
    try:
        _restore_signals()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)  # (what came meanwhile: now)
        stdin, stdout, stderr, cwd = fds
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
        os.fchdir(cwd)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["environ"])
        time.tzset()  # (local dates: the client's $TZ)
        _open_streams(request["encodings"])
        sys.argv = ["sessiontree", *request["argv"]]
        code = _main()
    except KeyboardInterrupt:  # (Ctrl+C before the command began: as the command's own)
        code = 130
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # (its reader gone: nothing to tell it)
                stream.flush()
        os._exit(code)


def _main() -> int:
    """The command line's exit code, as the interpreter would have left with it."""
    from sessiontree.cli.main import main

    try:
        main()
    except SystemExit as done:
        return _exit_code(done.code)
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)  # (``sys.exit("message")``, as the interpreter does)
    return 1


#: The signals that stop the daemon: it blocks them across each fork, so that a worker
#: never runs the daemon's handlers (they wait until the worker has its own).
STOPPING = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT})


def _restore_signals() -> None:
    """The signal handling a fresh interpreter has (the daemon's own ended with it)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)


def _open_streams(encodings: list[tuple[str | None, str | None]]) -> None:
    """``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` on descriptors 0, 1 and 2 as the
    interpreter makes them (line-buffered to a terminal, stderr always), in the client's
    encodings."""
    streams: list[io.TextIOWrapper] = []
    for fd, (encoding, errors) in enumerate(encodings):
        writing = fd > 0
        binary = open(fd, "wb" if writing else "rb", closefd=False)  # noqa: SIM115
        streams.append(
            io.TextIOWrapper(
                binary,
                encoding=encoding or "utf-8",
                errors=errors or "strict",
                newline="\n",
                line_buffering=writing and (fd == 2 or isatty(fd)),
            )
        )
    for name, stream in zip(("stdin", "stdout", "stderr"), streams, strict=True):
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)  # (what the interpreter began with, too)
