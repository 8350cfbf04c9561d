"""``sessiontree … | head``: when stdout's reader goes away, the command stops in silence
(nothing on stderr, no ``Exception ignored`` at exit) with 141, the status of a program
a SIGPIPE stopped, as ``seq 1000000 | head`` has; not 1, which says not found or
refused. Real processes: the runner captures no pipe to break."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"
ENTRY = "import sys; sys.argv[0] = 'sessiontree'; from sessiontree.cli.entry import main; main()"


def _command(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-c", ENTRY, "--root", str(root), *args]


@pytest.mark.parametrize(
    "args",
    [
        ("history",),
        ("sessions", "--all"),
        ("show", BASIC, "--no-pager"),
        ("show", BASIC, "--json"),
        ("context", BASIC),  # (a command that leaves without tearing down)
        ("doctor",),
        ("--help",),
        ("usage", "--help"),
    ],
    ids=" ".join,
)
def test_a_reader_gone_before_the_output(basic: Path, args: tuple[str, ...]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(_command(basic, *args), stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr.decode()) == (141, "")


@pytest.mark.parametrize("args", [("history",), ("history", "--json")], ids=" ".join)
def test_head_reads_a_line_and_goes(basic: Path, args: tuple[str, ...]) -> None:
    history = basic / "history.jsonl"
    history.write_bytes(history.read_bytes() * 2000)  # far more than a pipe holds
    with subprocess.Popen(
        _command(basic, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline()
        process.stdout.close()
        err = process.stderr.read().decode()
        assert (process.wait(timeout=60), err) == (141, "")
