"""A scan on two cores (a forked child scans the first part) is the scan on one.

Exactness: every fixture transcript, and random files made of records, damage and torn
ends, scanned with the split forced (``SPLIT_AT`` 0), give the one-core scan line for
line: lines, problems and where a later scan picks up; so does a resumed scan. When the
child fails, this process scans its part itself. A process with threads never forks.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.storage import scan
from sessiontree.storage.jsonl import Scan, format_line, scan_handle, scan_transcript
from tests.conftest import count_forks
from tests.storage.test_skeleton_cache import FIXTURE_FILES


def facts(scan: Scan) -> tuple[Any, ...]:
    return scan.lines, scan.problems, scan.resume_offset, scan.resume_number, scan.size


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every scan splits; the list counts the forks."""
    monkeypatch.setattr(scan, "SPLIT_AT", 0)
    return count_forks(monkeypatch)


def test_every_fixture_scans_on_two_cores_as_on_one(forks: list[int]) -> None:
    for path in FIXTURE_FILES:
        assert facts(scan_transcript(path, cores=2)) == facts(scan_transcript(path)), path
    # Every file of two lines or more splits (the fixtures hold a few smaller ones).
    assert len(forks) >= len(FIXTURE_FILES) * 3 // 4


PIECES = st.one_of(
    st.builds(
        lambda i, p: format_line({"type": "user", "uuid": f"u{i}", "parentUuid": p}),
        st.integers(0, 50),
        st.sampled_from([None, "u1", "u2"]),
    ),
    st.sampled_from(
        [
            b"\n",
            b"{not json\n",
            b'{"type":"user","uuid":"n\x00\x00l"}\n',
            b"\xff\xfe\n",
            b'{"type":"assistant","uuid":"t","toolUseResult":{"a":1}}\n',
            b'{"type":"user","uuid":"long","x":"' + b"y" * 70_000 + b'"}\n',
            b'{"type":"user","uuid":"bad","timestamp":7}\n',
        ]
    ),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(pieces=st.lists(PIECES, max_size=40), torn=st.binary(max_size=30), data=st.data())
def test_random_files_scan_on_two_cores_as_on_one(
    pieces: list[bytes], torn: bytes, data: st.DataObject, tmp_path_factory: Any
) -> None:
    path = tmp_path_factory.mktemp("split") / "s.jsonl"
    content = b"".join(pieces) + torn.replace(b"\n", b" ")
    path.write_bytes(content)
    cut = data.draw(st.integers(0, len(content)), label="resume from")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "SPLIT_AT", 0)
        assert facts(scan_transcript(path, cores=2)) == facts(scan_transcript(path))
        # resumed from a scan of a shorter copy, as the skeleton cache does
        shorter = path.with_name("short.jsonl")
        shorter.write_bytes(content[:cut])
        start = scan_transcript(shorter)
        with path.open("rb") as one, path.open("rb") as two:
            split = scan_handle(two, path, start=start, cores=2)
            assert facts(split) == facts(scan_handle(one, path, start=start))


def test_a_failed_child_leaves_the_scan_whole(
    forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = next(p for p in FIXTURE_FILES if p.stat().st_size > 50_000)

    def die(*args: Any) -> None:
        os._exit(3)

    monkeypatch.setattr(scan, "_scan_part_and_exit", die)
    assert facts(scan_transcript(path, cores=2)) == facts(scan_transcript(path))
    assert forks


def test_a_process_with_threads_does_not_fork(forks: list[int]) -> None:
    path = FIXTURE_FILES[0]
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert facts(scan_transcript(path, cores=2)) == facts(scan_transcript(path))
    finally:
        stop.set()
        thread.join()
    assert not forks


def test_a_small_scan_does_not_fork(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(format_line({"type": "user", "uuid": "a"}))
    calls: list[int] = []
    real = scan._scan_in_two
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "_scan_in_two", lambda *a: calls.append(1) or real(*a))
        scan_transcript(path, cores=8)
    assert not calls
