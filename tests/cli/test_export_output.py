"""``export -o``: a file is replaced atomically, a device or FIFO is written in place,
anything else is refused with one line naming the user's path, and no temp file is ever
left (issue 11: run as root, ``-o /dev/null --force`` replaced the device node)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sessiontree.cli.main import cli, main

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"


@pytest.fixture
def root(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    path: Path = fixture_root("01-basic")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "out"
    path.mkdir()
    return path


def export(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--root", str(root), "export", BASIC, *args])


def document(root: Path) -> bytes:
    result = export(root, "-o", "-")
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


@pytest.mark.parametrize("force", [["--force"], []])
def test_dev_null_stays_a_character_device(root: Path, force: list[str]) -> None:
    before = os.lstat("/dev/null")
    result = export(root, "-o", "/dev/null", *force)
    assert result.exit_code == 0, result.output
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_fifo_receives_the_document_in_place(root: Path, folder: Path) -> None:
    fifo = folder / "pipe"
    os.mkfifo(fifo)
    received = bytearray()

    def drain() -> None:
        with open(fifo, "rb") as reader:
            received.extend(reader.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        result = export(root, "--format", "md", "-o", str(fifo))
    finally:
        # The reader waits in open() until a writer comes: if export failed before
        # opening the FIFO, be that writer, so the thread ends.
        if reader.is_alive():
            with open(fifo, "wb"):
                pass
        reader.join(timeout=10)
    assert result.exit_code == 0, result.output
    assert bytes(received) == document(root)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in folder.iterdir()] == ["pipe"]


@pytest.mark.parametrize("kind", ["folder", "symlink to a file", "dangling symlink"])
def test_a_folder_or_a_symlink_is_refused_in_one_line_naming_it(
    root: Path, folder: Path, kind: str
) -> None:
    target = folder / "target.md"
    if kind == "folder":
        target.mkdir()
    elif kind == "symlink to a file":
        (folder / "real.md").write_bytes(b"keep")
        target.symlink_to(folder / "real.md")
    else:
        target.symlink_to(folder / "absent.md")
    names = sorted(p.name for p in folder.iterdir())
    before = target.lstat()
    result = export(root, "-o", str(target), "--force")
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"sessiontree: {target} is a ")
    after = target.lstat()
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert sorted(p.name for p in folder.iterdir()) == names  # no temp file, nothing new
    if kind == "symlink to a file":
        assert (folder / "real.md").read_bytes() == b"keep"


def test_a_regular_file_is_still_replaced_only_with_force(root: Path, folder: Path) -> None:
    target = folder / "a.md"
    target.write_bytes(b"old")
    refused = export(root, "-o", str(target))
    assert refused.exit_code == 1 and "--force" in refused.stderr
    assert target.read_bytes() == b"old"
    assert export(root, "-o", str(target), "--force").exit_code == 0
    assert target.read_bytes() == document(root)
    assert [p.name for p in folder.iterdir()] == ["a.md"]


_LIMITED = """
import resource, sys
from sessiontree.cli.main import main
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
main(sys.argv[2:])
"""


def test_a_failure_mid_write_leaves_the_old_file_and_no_temp(root: Path, folder: Path) -> None:
    """The file-size limit makes a write fail half way (EFBIG; Python ignores SIGXFSZ):
    a real failure of writing, in a process of its own."""
    target = folder / "a.md"
    target.write_bytes(b"old")
    size = len(document(root))
    transcript = next((root / "projects").glob("*/*.jsonl"))
    args = ["--root", str(root), "export", str(transcript), "-o", str(target), "--force"]
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED, str(size // 2), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [f"sessiontree: {target}: File too large"]
    assert target.read_bytes() == b"old"
    assert [p.name for p in folder.iterdir()] == ["a.md"]


def test_a_missing_folder_is_told_by_the_users_path(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "absent" / "a.md"
    with pytest.raises(SystemExit) as exit_:
        main(["--root", str(root), "export", BASIC, "-o", str(target)])
    assert exit_.value.code == 1
    assert capsys.readouterr().err.splitlines() == [
        f"sessiontree: {target}: No such file or directory"
    ]
    assert not (tmp_path / "absent").exists()


_MAIN = "import sys; from sessiontree.cli.main import main; main(sys.argv[1:])"


def _export_process(
    root: Path, output: str, **streams: object
) -> subprocess.CompletedProcess[bytes]:
    args = ["--root", str(root), "export", BASIC, "--format", "md", "-o", output]
    return subprocess.run(
        [sys.executable, "-c", _MAIN, *args],
        timeout=60,
        **streams,  # type: ignore[call-overload]
    )


def test_dev_stdout_into_a_pipe_is_the_document(root: Path) -> None:
    """``-o /dev/stdout`` with stdout a pipe (captured): the document, as ``-o -``
    gives it, and no "wrote" line (nothing was written that a user would look for)."""
    done = _export_process(root, "/dev/stdout", capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == document(root)
    assert done.stderr == b""


def test_dev_stdout_and_stderr_into_a_file_are_written_not_replaced(
    root: Path, folder: Path
) -> None:
    """stdout (or stderr) redirected to a regular file: the document goes into that
    file through the open stream, as a shell's ``> out.md`` means, and nothing else is
    made beside it (no temp file, no rename over the stream's file)."""
    for output, name in (
        ("/dev/stdout", "stdout"),
        ("/dev/stderr", "stderr"),
        ("/dev/fd/1", "stdout"),
    ):
        target = folder / f"{name}.md"
        other = "stderr" if name == "stdout" else "stdout"
        with open(target, "wb") as stream:
            done = _export_process(root, output, **{name: stream, other: subprocess.PIPE})
        assert done.returncode == 0, (output, done.stderr, done.stdout)
        assert target.read_bytes() == document(root), output
        assert all(p.suffix == ".md" and not p.name.startswith(".") for p in folder.iterdir())


def test_dev_stdout_into_a_fifo_is_the_document(root: Path, folder: Path) -> None:
    fifo = folder / "pipe"
    os.mkfifo(fifo)
    received = bytearray()

    def drain() -> None:
        with open(fifo, "rb") as reader:
            received.extend(reader.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    with open(fifo, "wb") as stream:
        done = _export_process(root, "/dev/stdout", stdout=stream, stderr=subprocess.PIPE)
    reader.join(timeout=10)
    assert done.returncode == 0, done.stderr
    assert bytes(received) == document(root)
    assert [p.name for p in folder.iterdir()] == ["pipe"]
