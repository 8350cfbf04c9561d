"""The daemon: one process that has imported what the read-only commands need and forks
a worker for each run a client hands it (:mod:`sessiontree.cli.daemon.client`).

A command run from a fresh interpreter spends most of a quick run importing (click,
the engine, msgspec, rich, psycopg); a worker forked from here starts with all of it
imported, so ``search`` or ``sessions --json`` answer in about the time the work takes.
The daemon itself only waits: it holds no index, no cache and no connection, so a
worker computes exactly what the command would have computed on its own.

It serves only its own user (the socket is the user's alone, and each connection's
peer is checked), only its own installation, and only the commands that read
(:data:`SERVED`); it declines anything else, and the client runs it as usual. When the
installed code changes under it, it declines the run and leaves.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import marshal
import os
import pkgutil
import selectors
import signal
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import click

from sessiontree.cli.daemon import client, worker

#: The commands a worker runs: those that only read (and keep their caches). The rest
#: (writing, prompting, long-running) stay with the process they were typed in.
SERVED = frozenset(
    {"sessions", "show", "tree", "context", "prompts", "checkpoints", "history", "search",
     "usage", "export", "secrets", "doctor"}
)  # fmt: skip
#: Packages a worker never needs (the agent host, the web viewer, the demo builder):
#: not imported ahead.
NOT_PRELOADED = ("agent", "chat", "web", "demo", "cli.chat", "cli.serve", "cli.demo")
#: Libraries the served commands import when they run (not at import): imported ahead.
LIBRARIES = ("rich.console", "rich.table", "rich.text", "rich.progress", "jinja2", "psycopg",
             "psycopg_pool")  # fmt: skip
#: How long a client may take to send its request once connected.
REQUEST_SECONDS = 2.0


@dataclass
class _Run:
    """A worker and the client waiting for its exit."""

    pid: int
    pidfd: int
    conn: socket.socket


@dataclass
class Daemon:
    """The loop: accept, check, fork, and tell each client its worker's exit."""

    path: str
    idle_seconds: float = 0.0  # 0: never leave for want of work
    keep_open: int | None = None  # the daemon's lock: held by the daemon, not its workers
    started: float = field(default_factory=time.time)
    served: int = 0
    stopping: bool = False
    listener: socket.socket | None = None
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    runs: dict[int, _Run] = field(default_factory=dict)  # pidfd -> run
    waiting: dict[socket.socket, float] = field(default_factory=dict)  # conn -> deadline
    stamp: dict[str, tuple[int, int]] = field(default_factory=dict)
    last_work: float = field(default_factory=time.monotonic)
    pid: int = field(default_factory=os.getpid)  # (the daemon's: a worker never stops it)
    stop_asked: bool = False
    wakeup: socket.socket | None = None  # (a signal's byte: a select waiting forever ends)

    # -- the loop ---------------------------------------------------------------------

    def listen(self) -> None:
        """Bind the socket (the user's alone) in place of one nobody listens on."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # (the caller found nobody listening on it)
        mask = os.umask(0o177)
        try:
            listener.bind(self.path)
        finally:
            os.umask(mask)
        listener.listen(64)
        listener.setblocking(False)
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ)

    def serve(self) -> None:
        """Until stopped (``stop``, SIGTERM, SIGINT, SIGHUP, SIGQUIT), idle too long, or
        stale. A signal only asks (its handler may run anywhere in the loop); the loop,
        woken by the byte the signal writes, stops."""
        self.wakeup, wakeup_end = socket.socketpair()
        for end in (self.wakeup, wakeup_end):
            end.setblocking(False)
        signal.set_wakeup_fd(wakeup_end.fileno(), warn_on_full_buffer=False)
        self.selector.register(self.wakeup, selectors.EVENT_READ)
        for signum in worker.STOPPING:
            signal.signal(signum, self._ask_to_stop)
        while not (self.stopping and not self.runs):
            timeout = self._timeout()
            for key, _ in self.selector.select(timeout):
                self._ready(key.fileobj)
            if self.stop_asked and not self.stopping:
                self.stop()
            self._drop_late_requests()
            idle = time.monotonic() - self.last_work
            if self.idle_seconds and not self.runs and idle >= self.idle_seconds:
                self.stop()
        self.selector.close()

    def _ask_to_stop(self, signum: int, frame: object) -> None:
        self.stop_asked = True

    def stop(self) -> None:
        """Take no more runs (the socket goes at once); leave when the running ones end."""
        if os.getpid() != self.pid:
            return  # (a worker: the socket and the selector's interest list are shared)
        if self.listener is not None:
            self.selector.unregister(self.listener)
            self.listener.close()
            self.listener = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        for conn in list(self.waiting):
            self._close(conn)
        self.stopping = True

    def _timeout(self) -> float | None:
        deadlines = list(self.waiting.values())
        if self.idle_seconds:
            deadlines.append(self.last_work + self.idle_seconds)
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _ready(self, what: Any) -> None:
        if what is self.wakeup:
            with contextlib.suppress(OSError):
                self.wakeup.recv(4096)  # (the signal itself asked: see serve)
        elif what is self.listener:
            self._accept()
        elif isinstance(what, socket.socket) and what in self.waiting:
            self._take_request(what)
        elif isinstance(what, socket.socket):
            self._client_gone(what)
        else:
            self._worker_ended(int(what))

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return
        if peer_uid(conn) != os.getuid():
            conn.close()
            return
        self.waiting[conn] = time.monotonic() + REQUEST_SECONDS
        self.selector.register(conn, selectors.EVENT_READ)

    def _drop_late_requests(self) -> None:
        now = time.monotonic()
        for conn in [c for c, deadline in self.waiting.items() if deadline <= now]:
            self._close(conn)

    def _take_request(self, conn: socket.socket) -> None:
        del self.waiting[conn]
        self.selector.unregister(conn)
        fds: list[int] = []
        try:
            data, ancillary, _, _ = conn.recvmsg(client.MAX_MESSAGE, socket.CMSG_SPACE(4 * 4))
            fds = received_fds(ancillary)
            request = marshal.loads(data) if data else None
        except (OSError, ValueError, EOFError, TypeError):
            request = None
        try:
            self._answer(conn, request, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def _answer(self, conn: socket.socket, request: object, fds: list[int]) -> None:
        self.last_work = time.monotonic()
        if not isinstance(request, dict) or request.get("protocol") != client.PROTOCOL:
            self._reply_and_close(conn, {"kind": "declined", "why": "not this protocol"})
            return
        kind = request.get("kind")
        if kind == "status":
            self._reply_and_close(conn, {"kind": "status", **self.status()})
        elif kind == "stop":
            self._reply_and_close(conn, {"kind": "stopping", "pid": os.getpid()})
            self.stop()
        elif kind == "run":
            why = self.declines(request, fds)
            if why is not None:
                self._reply_and_close(conn, {"kind": "declined", "why": why})
                if why == STALE:
                    self.stop()
                return
            self._fork(conn, request, fds)
        else:
            self._reply_and_close(conn, {"kind": "declined", "why": f"no such request: {kind}"})

    def declines(self, request: dict[str, Any], fds: list[int]) -> str | None:
        """Why the run is not the daemon's (None: it is)."""
        if len(fds) != 4:
            return "not the four descriptors a run sends"
        if request.get("package") != client.package_folder():
            return "another installation's client"
        if request.get("python") != sys.executable:
            return "another interpreter's client"
        argv = request.get("argv")
        if not isinstance(argv, list) or command_of(argv) not in SERVED:
            return "a command the daemon does not serve"
        if code_stamp() != self.stamp:
            return STALE
        return None

    def _fork(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, worker.STOPPING)
        try:
            pid = os.fork()
        except OSError as exc:  # (out of processes or memory: the client runs it itself)
            self._reply_and_close(conn, {"kind": "declined", "why": f"cannot fork: {exc}"})
            return
        finally:
            if os.getpid() == self.pid:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, worker.STOPPING)
        if pid == 0:
            self._leave_to_worker(conn)
            worker.run(request, fds)  # (it unblocks the signals once its handlers are its own)
        self.served += 1
        pidfd = os.pidfd_open(pid)
        self.runs[pidfd] = _Run(pid, pidfd, conn)
        self.selector.register(pidfd, selectors.EVENT_READ)
        self.selector.register(conn, selectors.EVENT_READ)  # (its end: the client gone)
        self._send(conn, {"kind": "started", "pid": pid})

    def _leave_to_worker(self, conn: socket.socket) -> None:
        """In the worker: nothing of the daemon's stays open (closed, never unregistered:
        the selector's interest list is the daemon's too)."""
        signal.set_wakeup_fd(-1)
        if self.keep_open is not None:
            os.close(self.keep_open)
        if self.wakeup is not None:
            self.wakeup.close()
        with contextlib.suppress(OSError):
            self.selector.close()
        if self.listener is not None:
            self.listener.close()
        for run in self.runs.values():
            os.close(run.pidfd)
            run.conn.close()
        for other in self.waiting:
            other.close()
        conn.close()

    def _worker_ended(self, pidfd: int) -> None:
        run = self.runs.pop(pidfd)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(run.pid, 0)
        self._send(run.conn, {"kind": "ended", "code": os.waitstatus_to_exitcode(status)})
        self._close(run.conn)
        self.last_work = time.monotonic()

    def _client_gone(self, conn: socket.socket) -> None:
        """The client of a running worker closed its end (it was killed): the worker is
        hung up on, as a terminal's processes are when it closes."""
        try:
            if conn.recv(client.MAX_MESSAGE, socket.MSG_DONTWAIT):
                return  # (a client says nothing while it waits: what it said is dropped)
        except BlockingIOError:
            return
        except OSError:
            pass  # (a connection reset: gone too)
        for run in self.runs.values():
            if run.conn is conn:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(run.pid, signal.SIGHUP)
                self.selector.unregister(conn)

    def _reply_and_close(self, conn: socket.socket, reply: dict[str, Any]) -> None:
        self._send(conn, reply)
        conn.close()

    def _send(self, conn: socket.socket, reply: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            conn.send(marshal.dumps(reply))

    def _close(self, conn: socket.socket) -> None:
        self.waiting.pop(conn, None)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(conn)
        conn.close()

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "socket": self.path,
            "started": self.started,
            "served": self.served,
            "workers": len(self.runs),
        }


#: Why a run is declined when the installed code changed since the daemon started.
STALE = "the installed code changed since the daemon started"


def command_of(argv: list[str]) -> str | None:
    """The command ``argv`` runs (``sessiontree [--root DIR] [--store DSN] COMMAND ...``),
    or None: none, or the group's ``--help``/``--version``."""
    from sessiontree.cli.main import cli

    taking_values: set[str] = set()
    for param in cli.params:
        if isinstance(param, click.Option) and not param.is_flag and not param.count:
            taking_values.update(param.opts)
    words = iter(argv)
    for word in words:
        if word == "--":
            return next(words, None)
        if not word.startswith("-"):
            return word
        if word in taking_values:
            next(words, None)
        elif "=" not in word:
            return None  # (a flag of the group's: --help, --version, or a mistake)
    return None


def received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    """The descriptors a message carried (SCM_RIGHTS)."""
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(data) - len(data) % 4
            fds += [int.from_bytes(data[i : i + 4], sys.byteorder, signed=True)
                    for i in range(0, usable, 4)]  # fmt: skip
    return fds


def peer_uid(conn: socket.socket) -> int:
    """The user id of the process at the other end (SO_PEERCRED: pid, uid, gid)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[4:8], sys.byteorder)


def code_stamp() -> dict[str, tuple[int, int]]:
    """Each imported sessiontree module's file, its mtime and size: another the moment
    the installed code changes (an upgrade, an edit in a checkout)."""
    stamp: dict[str, tuple[int, int]] = {}
    prefix = client.package_folder() + os.sep
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.startswith(prefix):
            try:
                st = os.stat(path)
            except OSError:
                st = None
            stamp[path] = (st.st_mtime_ns, st.st_size) if st else (0, -1)
    return stamp


def preload() -> None:
    """Import what the served commands run (every module of the package but
    :data:`NOT_PRELOADED`, and :data:`LIBRARIES`), then keep it out of the collector's
    way: a worker then starts with all of it, shared with the daemon page by page."""
    for name in package_modules():
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for name in LIBRARIES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    gc.collect()
    gc.freeze()


def package_modules(path: list[str] | None = None, prefix: str = "sessiontree.") -> Iterator[str]:
    """The package's modules, found on disk (none imported to find them), but
    :data:`NOT_PRELOADED` and ``__main__``s."""
    import sessiontree

    for info in pkgutil.iter_modules(path or list(sessiontree.__path__), prefix):
        if info.name.removeprefix("sessiontree.") in NOT_PRELOADED:
            continue
        if info.name.endswith(".__main__"):
            continue
        yield info.name
        if info.ispkg:
            folder = os.path.join(path[0] if path else sessiontree.__path__[0],
                                  info.name.rsplit(".", 1)[1])  # fmt: skip
            yield from package_modules([folder], info.name + ".")
