"""Durability of the locked appender: crashes, concurrent writers, torn tails, modes.

The crash and concurrency tests run real writer processes (``sys.executable -c``) that
call :func:`append_records`; the checks then read the file back only through the public
reader (:func:`scan_transcript` + :func:`read_records`) and compare it, byte for byte,
with what the writers meant to write.
"""

from __future__ import annotations

import inspect
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sessiontree.storage.jsonl import append_records, format_line, read_records, scan_transcript

SRC = str(Path(__file__).resolve().parents[2] / "src")

# The record formulas, shared as source with the writer processes.


def crash_record(seed: str, i: int, max_pad: int) -> dict[str, Any]:
    size = random.Random(f"{seed}-{i}").randrange(max_pad + 1)
    return {
        "type": "user",
        "uuid": f"u{i}",
        "parentUuid": f"u{i - 1}" if i else None,
        "n": i,
        "pad": "abcdefghijklmnopqrstuvwxyz"[i % 26] * size,
    }


def writer_record(writer: int, i: int, max_pad: int) -> dict[str, Any]:
    rng = random.Random(f"writer-{writer}-{i}")
    # Mostly small lines, some very large ones: sizes from 0 bytes to max_pad.
    size = rng.randrange(max_pad + 1) if rng.random() < 0.4 else rng.randrange(64)
    return {
        "type": "user",
        "uuid": f"w{writer}-{i}",
        "parentUuid": f"w{writer}-{i - 1}" if i else None,
        "n": i,
        "pad": "ABCDEFGHIJ"[writer] * size,
    }


RECORDS = "import random\nfrom typing import Any\n\n" + "\n".join(
    inspect.getsource(f) for f in (crash_record, writer_record)
)

CRASH_WRITER = (
    RECORDS
    + """
import sys
from pathlib import Path
from sessiontree.storage.jsonl import append_records

path, seed, count, max_pad, fsync = Path(sys.argv[1]), sys.argv[2], *map(int, sys.argv[3:])
print("ready", flush=True)
for i in range(count):
    append_records(path, [crash_record(seed, i, max_pad)], fsync=bool(fsync))
    print(f"ack {i}", flush=True)
"""
)

CONCURRENT_WRITER = (
    RECORDS
    + """
import sys
import time
from pathlib import Path
from sessiontree.storage.jsonl import append_records

path, writer, count, max_pad = Path(sys.argv[1]), *map(int, sys.argv[2:])
go = path.parent / "go"
print("ready", flush=True)
while not go.exists():  # the start signal: every writer is loaded and waiting
    time.sleep(0.001)
for i in range(count):
    append_records(path, [writer_record(writer, i, max_pad)])
print("done", flush=True)
"""
)


def _spawn(script: str, *args: object) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _read_back(path: Path) -> tuple[list[Any], list[Any], list[dict[str, Any]]]:
    scan = scan_transcript(path)
    problems: list[Any] = []
    records = read_records(path, scan.lines, problems)
    assert problems == [], "read_records had to repair a line"
    return scan.lines, scan.problems, [r.raw for r in records]


# --- 1. crash: SIGKILL at random points ------------------------------------------------

CRASH_RUNS = 12  # about one kill in six lands inside a write and tears it
CRASH_MAX_RUNS = 30  # more runs, only while none has torn yet (the torn case is the point)
CRASH_COUNT = 400
CRASH_MAX_PAD = 200 * 1024


def _kill_writer_at_random(path: Path, seed: str, delay: float, fsync: bool) -> list[int]:
    """Run a crash writer, SIGKILL it ``delay`` seconds after it is ready, return its acks."""
    with _spawn(CRASH_WRITER, path, seed, CRASH_COUNT, CRASH_MAX_PAD, int(fsync)) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stderr is not None
            first = proc.stdout.readline()
            assert first == "ready\n", proc.stderr.read()
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            # Read through the text wrapper: it may hold acks read along with "ready".
            out = proc.stdout.read()
            err = proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    # The writer may (rarely) finish all its records before the kill lands.
    assert proc.returncode in (-signal.SIGKILL, 0), err
    acks = [int(line.split()[1]) for line in out.splitlines()]
    assert acks == list(range(len(acks))), "acks out of order"
    return acks


def test_sigkill_leaves_an_acknowledged_prefix_and_at_most_one_torn_line(
    tmp_path: Path,
) -> None:
    rng = random.Random(20240611)
    torn_runs = 0
    run = 0
    while run < CRASH_RUNS or (torn_runs == 0 and run < CRASH_MAX_RUNS):
        path = tmp_path / f"crash-{run}" / "session.jsonl"
        seed = f"crash-{run}"
        delay = rng.uniform(0.0, 0.08)
        acks = _kill_writer_at_random(path, seed, delay, fsync=run % 4 == 3)
        acked = len(acks)
        context = f"run {run} (delay {delay:.3f}s, {acked} acked)"

        if not path.exists():  # killed before the first append created the file
            assert acked == 0, context
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()

        lines, problems, records = _read_back(path)
        whole = len(records)
        expected = [crash_record(seed, i, CRASH_MAX_PAD) for i in range(whole + 1)]

        # Every acknowledged record is there, in order, intact; at most one more.
        assert acked <= whole <= acked + 1, context
        assert records == expected[:whole], context
        assert [ln.number for ln in lines] == list(range(1, whole + 1)), context

        # Byte for byte: whole lines, then maybe the start of the next one, nothing else.
        data = path.read_bytes()
        prefix = b"".join(format_line(r) for r in expected[:whole])
        assert data.startswith(prefix), context
        tail = data[len(prefix) :]
        assert format_line(expected[whole]).startswith(tail), context
        assert not tail.endswith(b"\n"), context

        if tail:
            torn_runs += 1
            # A torn write is the record after the last acknowledged one.
            assert whole == acked, context
            assert [(p.kind, p.line) for p in problems] == [("torn-line", whole + 1)], context
        else:
            assert problems == [], context

        # A later append starts on a new line: only the torn line (if any) is lost.
        after = {"type": "user", "uuid": "after", "parentUuid": f"u{whole - 1}", "n": -1}
        append_records(path, [after])
        assert path.read_bytes() == data + (b"\n" if tail else b"") + format_line(after)
        lines2, problems2, records2 = _read_back(path)
        assert records2 == [*expected[:whole], after], context
        if tail:
            assert [(p.kind, p.line) for p in problems2] == [("bad-json", whole + 1)], context
            assert lines2[-1].number == whole + 2, context
        else:
            assert problems2 == [], context
            assert lines2[-1].number == whole + 1, context
        path.unlink()  # up to 80 MB each
        run += 1

    # Not an assertion on the kernel's timing, just a record of what the runs covered.
    print(f"{torn_runs} of {run} crash runs left a torn tail")


# --- 2. concurrent writers --------------------------------------------------------------

WRITERS = 3
PER_WRITER = 60
WRITER_MAX_PAD = 300 * 1024


def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "session.jsonl"
    path.parent.mkdir()
    procs = [_spawn(CONCURRENT_WRITER, path, w, PER_WRITER, WRITER_MAX_PAD) for w in range(WRITERS)]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n", proc.stderr.read() if proc.stderr else ""
        (path.parent / "go").touch()  # start them as close together as possible
        for proc in procs:
            out, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
            assert out == "done\n", err
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()

    lines, problems, records = _read_back(path)
    assert problems == []
    assert len(records) == len(lines) == WRITERS * PER_WRITER

    # Each writer's records are all there, whole, and in the order it wrote them.
    for w in range(WRITERS):
        mine = [r for r in records if r["uuid"].startswith(f"w{w}-")]
        assert mine == [writer_record(w, i, WRITER_MAX_PAD) for i in range(PER_WRITER)]

    # No interleaved bytes: the file is exactly the lines read back, end to end.
    assert path.read_bytes() == b"".join(format_line(r) for r in records)
    offsets = [(ln.offset, ln.length) for ln in lines]
    assert offsets == [(sum(n for _, n in offsets[:k]), n) for k, (_, n) in enumerate(offsets)]


# --- 3. a torn tail left by hand --------------------------------------------------------


def test_append_after_a_torn_tail_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    whole = {"type": "user", "uuid": "a", "parentUuid": None}
    torn = b'{"type":"user","uuid":"b","parentUuid":"a","message":{"content":"hal'
    path.write_bytes(format_line(whole) + torn)

    _, problems, records = _read_back(path)
    assert records == [whole]
    assert [(p.kind, p.line) for p in problems] == [("torn-line", 2)]

    new = {"type": "user", "uuid": "c", "parentUuid": "a", "n": 3}
    append_records(path, [new])
    assert path.read_bytes() == format_line(whole) + torn + b"\n" + format_line(new)

    lines, problems, records = _read_back(path)
    assert records == [whole, new]
    assert [ln.number for ln in lines] == [1, 3]
    assert [(p.kind, p.line) for p in problems] == [("bad-json", 2)]

    # A second append needs no repair: the file already ends with a newline.
    more = {"type": "user", "uuid": "d", "parentUuid": "c"}
    append_records(path, [more])
    _, problems, records = _read_back(path)
    assert records == [whole, new, more]
    assert [(p.kind, p.line) for p in problems] == [("bad-json", 2)]


def test_append_after_a_whole_record_missing_its_newline_loses_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    first = {"type": "user", "uuid": "a", "parentUuid": None}
    path.write_bytes(format_line(first).rstrip(b"\n"))

    new = [{"type": "user", "uuid": "b", "parentUuid": "a"}, {"type": "user", "uuid": "c"}]
    append_records(path, new)
    assert path.read_bytes() == b"".join(format_line(r) for r in [first, *new])
    _, problems, records = _read_back(path)
    assert problems == []
    assert records == [first, *new]


def test_append_to_an_empty_file_adds_no_leading_newline(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.touch()
    record = {"type": "user", "uuid": "a"}
    append_records(path, [record])
    assert path.read_bytes() == format_line(record)


# --- 4. file modes ----------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o000, 0o077], ids=oct)
def test_a_new_file_is_private(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "new" / "session.jsonl"
    old = os.umask(umask)
    try:
        append_records(path, [{"type": "user", "uuid": "a"}])
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _read_back(path)[2] == [{"type": "user", "uuid": "a"}]


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o664], ids=oct)
def test_an_existing_file_keeps_its_mode(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "session.jsonl"
    before = {"type": "user", "uuid": "a"}
    path.write_bytes(format_line(before))
    path.chmod(mode)
    after = {"type": "user", "uuid": "b", "parentUuid": "a"}
    append_records(path, [after], fsync=True)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert _read_back(path)[2] == [before, after]
