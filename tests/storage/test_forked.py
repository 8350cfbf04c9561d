"""Bytes made by a forked child: all of them, or a clear failure before any is given out."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiontree.storage import forked as forked_module
from sessiontree.storage.forked import ChildFailed, fork_output, fork_task, two_shares, wait_task


def _pieces() -> Iterator[bytes]:
    for n in range(3000):
        yield f"piece {n} ".encode() * 100  # ~3 MB in all: several reads


def test_the_childs_output_comes_whole_and_in_order() -> None:
    made = fork_output(_pieces)
    assert made is not None
    assert b"".join(made.pieces()) == b"".join(_pieces())


def test_a_child_that_fails_gives_out_nothing() -> None:
    def failing() -> Iterator[bytes]:
        yield b"a start"
        raise RuntimeError("no")

    made = fork_output(failing)
    assert made is not None
    got: list[bytes] = []
    with pytest.raises(ChildFailed):
        got.extend(made.pieces())
    assert got == []


def test_a_child_not_waited_for_is_stopped_on_close() -> None:
    def forever() -> Iterator[bytes]:
        while True:
            yield b"x"

    made = fork_output(forever)
    assert made is not None
    made.close()
    with pytest.raises(ChildProcessError):  # already reaped
        os.waitpid(made.pid, os.WNOHANG)


def test_no_fork_where_it_is_not_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked_module.threading, "active_count", lambda: 2)
    assert fork_output(_pieces) is None


def test_a_task_runs_in_a_child_and_is_waited_for(tmp_path: Path) -> None:
    done = tmp_path / "done"
    pid = fork_task(lambda: done.write_text("yes"))
    assert pid is not None
    assert wait_task(pid) and done.read_text() == "yes"
    failing = fork_task(lambda: 1 / 0)
    assert failing is not None and not wait_task(failing)


def test_the_childs_output_is_sent_whole_to_a_file_or_a_pipe(tmp_path: Path) -> None:
    want = b"".join(_pieces())
    into = tmp_path / "out"
    with into.open("wb") as out:
        made = fork_output(_pieces)
        assert made is not None
        assert made.send(out.fileno())
    assert into.read_bytes() == want
    reader, writer = os.pipe()
    made = fork_output(_pieces)
    assert made is not None
    got: list[bytes] = []
    drain = threading.Thread(target=lambda: got.append(_read_all(reader)))
    drain.start()  # (after the fork: a process with two threads does not fork)
    assert made.send(writer)
    os.close(writer)
    drain.join()
    os.close(reader)
    assert got == [want]


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_child_that_fails_sends_nothing(tmp_path: Path) -> None:
    def failing() -> Iterator[bytes]:
        yield b"a start"
        raise RuntimeError("no")

    made = fork_output(failing)
    assert made is not None
    with (tmp_path / "out").open("wb") as out, pytest.raises(ChildFailed):
        made.send(out.fileno())
    assert (tmp_path / "out").read_bytes() == b""


def test_where_the_system_cannot_send_nothing_is_sent_and_the_pieces_remain(
    tmp_path: Path,
) -> None:
    made = fork_output(_pieces)
    assert made is not None
    with (tmp_path / "out").open("ab") as out:  # sendfile refuses an O_APPEND file
        sent = made.send(out.fileno())
    if sent:  # (newer kernels send to one)
        assert (tmp_path / "out").read_bytes() == b"".join(_pieces())
        return
    assert (tmp_path / "out").read_bytes() == b""
    assert b"".join(made.pieces()) == b"".join(_pieces())


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=50))
def test_two_shares_hold_every_item_once_in_order_and_weigh_about_the_same(
    sizes: list[int],
) -> None:
    items = list(enumerate(sizes))
    first, second = two_shares(items, lambda item: item[1])
    assert sorted(first + second) == items
    assert first == sorted(first) and second == sorted(second)
    weights = sum(size for _, size in first), sum(size for _, size in second)
    assert abs(weights[0] - weights[1]) <= max(sizes, default=0)
