"""The one atomic writer: a regular file replaced whole, nothing else replaced at all."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree.errors import Refused
from sessiontree.storage.atomic import copy_atomically, write_atomically, write_in_place


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """An empty folder of the test's own (tmp_path also holds the test's HOME)."""
    path = tmp_path / "folder"
    path.mkdir()
    return path


def test_a_file_is_replaced_whole_and_keeps_its_mode(folder: Path) -> None:
    target = folder / "a.txt"
    target.write_bytes(b"old")
    target.chmod(0o640)
    written = write_atomically(target, [b"ne", b"w"])
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert written.st_ino == target.stat().st_ino
    assert [p.name for p in folder.iterdir()] == ["a.txt"]  # no temp file left


def test_a_new_file_gets_the_mode_asked_for_or_what_the_umask_allows(folder: Path) -> None:
    write_atomically(folder / "given", b"x", mode=0o600)
    assert stat.S_IMODE((folder / "given").stat().st_mode) == 0o600
    umask = os.umask(0o022)
    try:
        write_atomically(folder / "default", b"x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((folder / "default").stat().st_mode) == 0o644


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_anything_but_a_regular_file_is_refused_and_left_as_it_is(folder: Path, kind: str) -> None:
    target = folder / "target"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        (folder / "elsewhere").write_bytes(b"keep")
        target.symlink_to(folder / "elsewhere")
    else:
        target.mkdir()
    before = target.lstat()
    with pytest.raises(Refused, match="not a regular file"):
        write_atomically(target, b"x")
    after = target.lstat()
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["target", *(["elsewhere"] if kind == "symlink" else [])]
    )


def test_a_failing_write_leaves_the_old_file_and_no_temp(folder: Path) -> None:
    target = folder / "a.txt"
    target.write_bytes(b"old")

    def chunks() -> Iterator[bytes]:
        yield b"half"
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError):
        write_atomically(target, chunks())
    assert target.read_bytes() == b"old"
    assert [p.name for p in folder.iterdir()] == ["a.txt"]


# -- write_in_place ---------------------------------------------------------------------


def test_a_fifo_is_written_in_place_and_stays_a_fifo(folder: Path) -> None:
    """A device or FIFO is written as a shell's ``>`` does: no temp file, no rename (a
    rename swapped ``/dev/null`` for a regular file when run as root, issue 9)."""
    fifo = folder / "pipe"
    os.mkfifo(fifo)
    received = bytearray()

    def drain() -> None:
        with open(fifo, "rb") as reader:
            received.extend(reader.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    big = b"y" * (3 * 1024 * 1024 + 5)  # more than one of its batched writes
    write_in_place(fifo, [b"x" * 10, big, b"z"])
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert bytes(received) == b"x" * 10 + big + b"z"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in folder.iterdir()] == ["pipe"]


def test_a_character_device_is_written_in_place() -> None:
    before = os.lstat("/dev/null")
    written = write_in_place(Path("/dev/null"), b"gone")
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev == written.st_rdev


@pytest.mark.parametrize("kind", ["file", "symlink", "folder"])
def test_in_place_writes_nothing_but_a_device_or_fifo(folder: Path, kind: str) -> None:
    target = folder / "target"
    if kind == "file":
        target.write_bytes(b"keep")
    elif kind == "symlink":
        target.symlink_to("/dev/null")  # a link, even to a device, is not followed
    else:
        target.mkdir()
    before = target.lstat()
    with pytest.raises((Refused, IsADirectoryError)):  # a folder: the open itself fails
        write_in_place(target, b"x")
    after = target.lstat()
    assert (after.st_ino, after.st_mode, after.st_size) == (
        before.st_ino,
        before.st_mode,
        before.st_size,
    )
    assert [p.name for p in folder.iterdir()] == ["target"]


# -- copy_atomically ----------------------------------------------------------------------


def test_a_copy_has_the_sources_bytes_and_mode(folder: Path) -> None:
    source, target = folder / "saved", folder / "a.txt"
    source.write_bytes(b"x" * (3 * 1024 * 1024 + 7))  # more than one chunk
    source.chmod(0o751)
    target.write_bytes(b"old")
    target.chmod(0o600)
    copy_atomically(source, target)
    assert target.read_bytes() == source.read_bytes()
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []


def test_a_copy_never_follows_a_link_at_either_end(folder: Path) -> None:
    secret = folder / "secret"
    secret.write_bytes(b"secret")
    link = folder / "link"
    link.symlink_to(secret)
    with pytest.raises(Refused, match="symlink"):
        copy_atomically(link, folder / "copy")
    assert not (folder / "copy").exists()
    source = folder / "source"
    source.write_bytes(b"new")
    with pytest.raises(Refused, match="not a regular file"):
        copy_atomically(source, link)  # the link's target is not written through it
    assert secret.read_bytes() == b"secret" and link.is_symlink()


def test_a_copy_refuses_a_source_that_is_not_a_file(folder: Path) -> None:
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(Refused, match="not a regular file"):
        copy_atomically(fifo, folder / "copy")  # and does not block on it
    with pytest.raises(Refused, match="not a regular file"):
        copy_atomically(folder, folder / "copy")
    with pytest.raises(FileNotFoundError):
        copy_atomically(folder / "missing", folder / "copy")
