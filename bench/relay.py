"""How a forked child's output reaches stdout: read in and written out a megabyte at a
time (``ForkedOutput.pieces``) against the system's copy (``ForkedOutput.send``, with
``sendfile``), through a pipe that another thread drains, as a reader of
``context --json`` does.

    python -m bench.relay [MB] [ROUNDS]     # default: 43 MB (half a 200 MB chain's context), 3
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator

from sessiontree.storage.forked import ForkedOutput, fork_output

MB = 1024 * 1024


def _output(mb: int) -> Iterator[bytes]:
    chunk = b"x" * MB
    for _ in range(mb):
        yield chunk


def relay(made: ForkedOutput, how: str) -> tuple[float, int]:
    """Seconds to pass ``made``'s output into a drained pipe, and the bytes drained."""
    reader, writer = os.pipe()
    drained = [0]

    def drain() -> None:
        while chunk := os.read(reader, MB):
            drained[0] += len(chunk)

    thread = threading.Thread(target=drain)
    thread.start()  # (after the fork: a process with two threads does not fork)
    started = time.perf_counter()
    if how == "send":
        made.send(writer)
    else:
        for piece in made.pieces():
            view = piece
            while view:
                view = view[os.write(writer, view) :]
    seconds = time.perf_counter() - started
    os.close(writer)
    thread.join()
    os.close(reader)
    return seconds, drained[0]


def main(argv: list[str]) -> int:
    mb = int(argv[0]) if argv else 43
    rounds = int(argv[1]) if len(argv) > 1 else 3
    best: dict[str, float] = {}
    for _ in range(rounds):
        for how in ("pieces", "send"):
            made = fork_output(lambda: _output(mb))
            if made is None:
                print("this process may not fork", file=sys.stderr)
                return 1
            made.wait()  # the child's time is not the relay's
            seconds, drained = relay(made, how)
            assert drained == mb * MB, (how, drained)
            best[how] = min(best.get(how, seconds), seconds)
    for how, seconds in best.items():
        print(f"{how:7s} {mb} MB into a drained pipe: {seconds * 1000:.1f} ms (best of {rounds})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
