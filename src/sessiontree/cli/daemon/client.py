"""The daemon's client: hand a run to the daemon when one is running, before anything
else is imported.

It costs one ``stat`` when no daemon runs. When one does, the run is sent over the
daemon's socket: the arguments, the environment, the umask, the encodings of the
standard streams, and the descriptors of those streams and of the working folder. A
worker forked from the daemon runs the command on them, so its output goes straight
where this process's would have gone. Signals that would stop this process (Ctrl+C, a
``kill``) are passed on to the worker, and its exit becomes this process's exit.

Only plain modules are imported here (``_socket``, ``_signal``, ``marshal``): an import
of ``socket`` or ``signal`` costs more than the daemon saves on a quick command.
"""

from __future__ import annotations

import _socket
import marshal
import os
import sys

from sessiontree.cli.folders import state_folder_name

TYPE_CHECKING = False  # (``typing``'s import is not paid here: see :mod:`sessiontree`)
if TYPE_CHECKING:
    import signal as _signal  # (the same functions, typed)
    from collections.abc import Mapping
    from typing import Any
else:
    import _signal

#: What a request and a reply look like; the daemon refuses a client of another.
PROTOCOL = 1
#: The daemon's socket, in the state folder.
SOCKET_NAME = "daemon.sock"
#: The longest path a Unix socket may have (``sun_path`` less its NUL).
MAX_SOCKET_PATH = 107
#: Set (to anything but empty): never hand a run to the daemon.
NO_DAEMON = "SESSIONTREE_NO_DAEMON"
#: The biggest message either side sends (a request holds the whole environment).
MAX_MESSAGE = 1 << 20
#: The signals passed on to the worker (the rest act on this process alone).
FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)


def socket_path(environ: Mapping[str, str]) -> str:
    """Where the daemon listens: ``daemon.sock`` in the state folder."""
    return os.path.join(state_folder_name(environ), SOCKET_NAME)


def package_folder() -> str:
    """The folder of the ``sessiontree`` package this process runs: a daemon of another
    installation (another virtual environment, another checkout) refuses its runs."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def connect(path: str) -> _socket.socket | None:
    """A connection to the daemon at ``path``, or None: no socket there, one another user
    owns, or nobody listening."""
    try:
        if os.stat(path).st_uid != os.getuid():
            return None
    except OSError:
        return None
    try:  # (SOCK_CLOEXEC is Linux's: elsewhere descriptors are not inherited by exec anyway)
        sock = _socket.socket(
            _socket.AF_UNIX, _socket.SOCK_SEQPACKET | getattr(_socket, "SOCK_CLOEXEC", 0)
        )
    except OSError:
        return None  # (no SOCK_SEQPACKET here: no daemon either)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def ask(path: str, kind: str) -> dict[str, Any] | None:
    """The daemon's answer to a request without a run (``status``, ``stop``), or None:
    no daemon listens at ``path``."""
    sock = connect(path)
    if sock is None:
        return None
    try:
        sock.send(marshal.dumps({"protocol": PROTOCOL, "kind": kind}))
        return _receive(sock)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        sock.close()


def request(argv: list[str]) -> dict[str, Any]:
    """This process's run, as the daemon's worker takes it on."""
    umask = os.umask(0o22)
    os.umask(umask)
    streams = (sys.stdin, sys.stdout, sys.stderr)
    return {
        "protocol": PROTOCOL,
        "kind": "run",
        "package": package_folder(),
        "python": sys.executable,
        "argv": argv,
        "environ": dict(os.environ),
        "umask": umask,
        "encodings": [(getattr(s, "encoding", None), getattr(s, "errors", None)) for s in streams],
    }


def hand_over(argv: list[str]) -> int | None:
    """Run ``argv`` in the daemon's worker and return its exit code (a negative code: the
    worker was ended by that signal), or None when it is this process's to run: no
    daemon, ``$SESSIONTREE_NO_DAEMON``, standard output a terminal (a pager, colour and
    prompts belong to the terminal's own process), or the daemon declined it (a command
    it does not serve, code changed since it started, another installation's daemon)."""
    if os.environ.get(NO_DAEMON) or isatty(1):
        return None
    sock = connect(socket_path(os.environ))
    if sock is None:
        return None
    try:
        try:
            cwd = os.open(".", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None  # (a folder gone or unreadable: the run says so itself)
        try:
            rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _fds(0, 1, 2, cwd))]
            sock.sendmsg([marshal.dumps(request(argv))], rights)
            reply = _receive(sock)
        except (OSError, ValueError, EOFError, TypeError):
            return None  # (nothing was started: a request too big, a daemon gone)
        finally:
            os.close(cwd)
        if reply.get("kind") != "started":
            return None
        return _wait(sock, int(reply["pid"]))
    finally:
        sock.close()


def _wait(sock: _socket.socket, pid: int) -> int:
    """The exit code of the worker ``pid``; meanwhile the signals that would stop this
    process are sent to it instead."""

    def pass_on(signum: int, frame: object) -> None:
        try:  # noqa: SIM105 (contextlib's import costs more than the daemon saves)
            os.kill(pid, signum)
        except OSError:
            pass  # (it ended: its exit is on its way)

    for signum in FORWARDED:
        _signal.signal(signum, pass_on)
    try:
        reply = _receive(sock)
    except (OSError, ValueError, EOFError, TypeError):
        reply = {}
    for signum in FORWARDED:
        _signal.signal(signum, _signal.SIG_DFL)
    if reply.get("kind") != "ended":
        os.write(2, b"sessiontree: the daemon went away before the command ended\n")
        return 1
    return int(reply["code"])


def end_as(code: int) -> None:
    """Leave as the worker left: with its exit code, or by the signal that ended it."""
    if code < 0:
        _signal.signal(-code, _signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code  # (a signal this process cannot die of)
    os._exit(code)


def _receive(sock: _socket.socket) -> dict[str, Any]:
    data = sock.recv(MAX_MESSAGE)
    if not data:
        raise EOFError("the daemon closed the connection")
    reply = marshal.loads(data)
    if not isinstance(reply, dict):
        raise ValueError("not a reply")
    return reply


def _fds(*fds: int) -> bytes:
    return b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)


def isatty(fd: int) -> bool:
    """Whether ``fd`` is a terminal (False for a descriptor that is not open)."""
    try:
        return os.isatty(fd)
    except OSError:
        return False
