"""Bytes made on a second core: a forked child writes what a function gives into an
anonymous in-memory file, which this process sends on (or reads) once it wants them.

    part = fork_output(lambda: encode(later_half()))
    ...                      # this process makes the first half meanwhile
    part.wait()              # if the child failed (ChildFailed), make the later half here
    part.send(out.fileno())  # or, where the system cannot send to it, part.pieces()

Forking is only done by a process with one thread (:func:`may_fork`), as the scan does.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NoReturn, TypeVar

import msgspec

T = TypeVar("T")

#: How much of the child's output is read (and given out) at a time.
PIECE = 1024 * 1024


def may_fork() -> bool:
    """Forking is safe for a process with one thread (the CLI), not for one with more
    (a thread holding a lock in the parent would hold it forever in the child)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class ChildFailed(Exception):
    """The forked child did not make all of its output (it raised, or it was killed)."""


class ForkedOutput(msgspec.Struct):
    """A forked child's output, made while this process goes on."""

    pid: int
    fd: int
    _waited: bool = False
    #: The child's exit status, once it ended (:meth:`running` saw it end).
    _status: int | None = None
    #: The output's size, once the child made all of it (:meth:`wait`).
    _size: int | None = None

    def running(self) -> bool:
        """Whether the child still works (a look, no wait)."""
        if self._status is None and not self._waited:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._status, self._waited = status, True
        return self._status is None and not self._waited

    def wait(self) -> int:
        """Wait for the child; the size of its output once it made all of it. Raises
        :class:`ChildFailed` when it did not (the output is then let go)."""
        if self._size is not None:
            return self._size
        try:
            status = self._status if self._status is not None else os.waitpid(self.pid, 0)[1]
            self._waited = True
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                raise ChildFailed(f"the forked child ended with status {status}")
            self._size = os.fstat(self.fd).st_size
        except BaseException:
            self.close()
            raise
        return self._size

    def pieces(self) -> Iterator[memoryview]:
        """The child's output, once it has made all of it; raises :class:`ChildFailed`
        (before giving out anything) when it did not."""
        try:
            size, at = self.wait(), 0
            while at < size:
                piece = os.pread(self.fd, min(PIECE, size - at), at)
                if not piece:
                    raise ChildFailed("the forked child's output ended early")
                at += len(piece)
                yield memoryview(piece)
        finally:
            self.close()

    def send(self, out: int) -> bool:
        """Write the child's output to the file descriptor ``out`` (once it made all of
        it: see :meth:`wait`), copied by the system from file to file (``sendfile``), not
        read into this process (43 MB into a drained pipe: 19-24 ms, against 31-34 ms read
        in and written out; ``python -m bench.relay``).
        False, with nothing written, when the system cannot send to ``out`` so (then
        :meth:`pieces`)."""
        size, at = self.wait(), 0
        while at < size:
            try:
                sent = os.sendfile(out, self.fd, at, size - at)
            except OSError as exc:
                if at == 0 and exc.errno in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    return False  # (an output sendfile cannot write to)
                raise
            if sent == 0:
                raise ChildFailed("the forked child's output ended early")
            at += sent
        self.close()
        return True

    def close(self) -> None:
        """Stop the child if it still runs, and let its output go."""
        if not self._waited:
            with contextlib.suppress(OSError):
                import signal

                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self._waited = True
        if self.fd >= 0:  # (once: a number closed twice may name another file by then)
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def two_shares(items: Sequence[T], size: Callable[[T], int]) -> tuple[list[T], list[T]]:
    """``items`` shared out in two of about the same ``size`` in all (the biggest first,
    each to the lighter share), each share in the items' order: work for two cores."""
    shares: tuple[list[int], list[int]] = ([], [])
    weights = [0, 0]
    for at in sorted(range(len(items)), key=lambda i: size(items[i]), reverse=True):
        lighter = 0 if weights[0] <= weights[1] else 1
        shares[lighter].append(at)
        weights[lighter] += size(items[at])
    first, second = ([items[at] for at in sorted(share)] for share in shares)
    return first, second


def fork_output(produce: Callable[[], Iterable[bytes | memoryview]]) -> ForkedOutput | None:
    """Run ``produce`` in a forked child, its pieces written to an anonymous file; None
    when this process may not fork (:func:`may_fork`)."""
    if not may_fork():
        return None
    fd = _anonymous_file()
    pid = os.fork()
    if pid == 0:
        _produce_and_exit(produce, fd)
    return ForkedOutput(pid, fd)


def fork_task(task: Callable[[], object]) -> int | None:
    """Run ``task`` in a forked child, for its effects (writing a cache file, say), while
    this process goes on; the child's pid, for :func:`wait_task`. The child runs at the
    lowest priority (nice 19): its work is for later, and the command's own work has the
    cores first. None when this process may not fork (:func:`may_fork`): then run it
    here. What the task raises ends the child with status 1 and nothing else."""
    if not may_fork():
        return None
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with contextlib.suppress(OSError):
                os.nice(19)  # work for later: the command's own work has the cores first
            task()
            code = 0
        finally:
            os._exit(code)
    return pid


def wait_task(pid: int) -> bool:
    """Wait for the child of :func:`fork_task`; whether it did all of its task."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return False
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _anonymous_file() -> int:
    """A file with no name: in memory where the system offers it (Linux), else in the
    temporary folder, unlinked at once."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("sessiontree-part", os.MFD_CLOEXEC)
    import tempfile  # (here: a read that never forks never pays for importing it)

    handle, name = tempfile.mkstemp(prefix="sessiontree-part-")
    os.unlink(name)
    return handle


def _produce_and_exit(produce: Callable[[], Iterable[bytes | memoryview]], fd: int) -> NoReturn:
    """In the child: write what ``produce`` gives, in writes of about :data:`PIECE`, and
    leave without running the parent's clean-up (``os._exit``); status 0 only when all
    of it was written."""
    code = 1
    try:
        batch = bytearray()
        for piece in produce():
            batch += piece
            if len(batch) >= PIECE:
                _write_all(fd, batch)
                batch.clear()
        _write_all(fd, batch)
        code = 0
    finally:
        os._exit(code)


def _write_all(fd: int, data: bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
