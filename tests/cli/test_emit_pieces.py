"""``emit_pieces``: a document in pieces, a forked child's part sent on by the system
where stdout is a file descriptor, read and written where it is not; and the cyclic
garbage collector off while a command reads, then back as it was."""

from __future__ import annotations

import gc
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree.cli.output import emit_pieces, no_cycle_collection
from sessiontree.storage.forked import ForkedOutput, fork_output


def _later() -> Iterator[bytes]:
    for n in range(2000):
        yield f"later {n}\n".encode() * 50


def _document(part: ForkedOutput) -> Iterator[bytes | memoryview | ForkedOutput]:
    yield b"first\n" * 1000
    yield memoryview(b"x" * (2 * 1024 * 1024))  # a piece bigger than a write
    part.wait()
    yield part
    yield b"last\n"


def _want() -> bytes:
    return b"first\n" * 1000 + b"x" * (2 * 1024 * 1024) + b"".join(_later()) + b"last\n"


def test_a_forked_part_is_sent_in_its_place_to_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    into = tmp_path / "out"
    with into.open("wb") as handle:
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(handle, write_through=True))
        part = fork_output(_later)
        assert part is not None
        emit_pieces(_document(part))
    assert into.read_bytes() == _want()


def test_a_forked_part_reaches_a_stdout_opened_to_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``context --json >> file``: sendfile may refuse a file opened to append (it does
    on this project's machines); the part is then read in and written, in its place."""
    into = tmp_path / "out"
    into.write_bytes(b"before\n")
    with into.open("ab") as handle:
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(handle, write_through=True))
        part = fork_output(_later)
        assert part is not None
        emit_pieces(_document(part))
    assert into.read_bytes() == b"before\n" + _want()


def test_a_forked_part_is_read_in_where_stdout_has_no_descriptor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    captured = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(captured, write_through=True))
    part = fork_output(_later)
    assert part is not None
    emit_pieces(_document(part))
    sys.stdout.flush()
    assert captured.getvalue() == _want()


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_without_cycle_collection_puts_it_back_as_it_was(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with no_cycle_collection():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), no_cycle_collection():
            raise RuntimeError("a command that fails")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
