"""Reading tail first gives the whole scan's own lines, and a tail that resumes as whole.

Exactness: on every fixture and on random files (compactions, the boundary's name in
content, a boundary written with escapes, NUL bytes, bad lines, a torn end), with reads
in blocks of a few bytes and with the head on two cores, every line ``read_tail_first``
keeps is the whole scan's line at that offset (number, length, skeleton), its problems
are the whole scan's, and its tail resumes as the whole file whenever it stands alone.
It reads the head without holding it, and gives up (None) where it must.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.tail import stands_alone
from sessiontree.model.tree import build_tree
from sessiontree.storage import scan, tail_read
from sessiontree.storage.jsonl import format_line, scan_transcript
from sessiontree.storage.tail_read import read_tail_first
from tests.conversation.test_open_tail import compacted_session, realistic
from tests.storage.test_skeleton_cache import FIXTURE_FILES


def check(path: Path, *, cores: int = 1) -> bool:
    """What :func:`read_tail_first` read is the whole scan's; when its tail stands alone,
    it resumes as the whole file. Whether it did."""
    first = read_tail_first(path, cores=cores)
    if first is None:
        return False
    whole = scan_transcript(path)
    by_offset = {line.offset: line for line in whole.lines}
    assert all(by_offset[line.offset] == line for line in first.scan.lines)
    assert sorted(map(repr, first.scan.problems)) == sorted(map(repr, whole.problems))
    assert (first.scan.resume_offset, first.scan.resume_number) == (
        whole.resume_offset,
        whole.resume_number,
    )
    tail = first.tail
    start = first.scan.lines[tail.start]
    assert start.skeleton is not None and start.skeleton.subtype == "compact_boundary"
    tree = build_tree(str(path), first.scan.lines, head=tail.head)
    if not stands_alone(tree, tail.head, tail.names()):
        return False
    assert tree.active_path() == Transcript.open(path).active_path
    return True


@pytest.fixture(params=[1 << 20, 7], ids=["blocks-1MB", "blocks-7B"])
def step(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(tail_read, "_STEP", request.param)
    return int(request.param)


def test_every_fixture_reads_tail_first_as_whole(step: int) -> None:
    stood = sum(check(path) for path in FIXTURE_FILES)
    assert stood >= 3  # the compacted ones


def test_the_head_on_two_cores_reads_as_on_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "SPLIT_AT", 0)
    assert sum(check(path, cores=2) for path in FIXTURE_FILES) >= 3


DAMAGE = [
    b"\n",
    b"{not json\n",
    b'{"type":"user","uuid":"nul\x00\x00"}\n',
    b"\xff\xfe\n",
    b'{"type":"user","uuid":"says","message":{"content":"\\"compact_boundary\\""}}\n',
    b'{"type":"system","subtype":"compact\\u005fboundary","uuid":"escaped"}\n',
    b'{"type":"user","uuid":"bad","timestamp":7}\n',
]


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(records=realistic(), data=st.data())
def test_random_files_read_tail_first_as_whole(
    records: list[dict[str, Any]], data: st.DataObject, tmp_path_factory: Any
) -> None:
    lines = [format_line(r) for r in records]
    for _ in range(data.draw(st.integers(0, 4), label="damage")):
        at = data.draw(st.integers(0, len(lines)), label="at")
        lines.insert(at, data.draw(st.sampled_from(DAMAGE), label="line"))
    content = b"".join(lines)
    if data.draw(st.booleans(), label="torn end") and content:
        content = content[: data.draw(st.integers(1, len(content)), label="cut")]
    path = tmp_path_factory.mktemp("tail") / "s.jsonl"
    path.write_bytes(content)
    step = data.draw(st.sampled_from([5, 64, 1 << 20]), label="step")
    split = data.draw(st.booleans(), label="two cores")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tail_read, "_STEP", step)
        if split:
            patch.setattr(scan, "SPLIT_AT", 0)
        check(path, cores=2 if split else 1)


def test_a_boundary_past_the_reach_or_none_at_all_reads_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    records = compacted_session(40)
    path.write_bytes(b"".join(format_line(r) for r in records))
    assert check(path)
    assert read_tail_first(path, reach=100) is None  # the last boundary is farther back
    path.write_bytes(b"".join(format_line(r) for r in records if r["type"] != "system"))
    assert read_tail_first(path) is None


def test_preserved_records_past_the_reach_make_it_read_whole(tmp_path: Path) -> None:
    # The boundary is in reach, the records it preserves are not: the tail's tree cannot
    # re-link them, the whole file's does, so the tail must not answer (it would, were it
    # taken for a 2.0.x boundary that preserves nothing).
    path = tmp_path / "s.jsonl"
    records = compacted_session(40)
    path.write_bytes(b"".join(format_line(r) for r in records))
    boundary = next(i for i, r in enumerate(records) if r["uuid"] == "c30")
    reach = len(b"".join(format_line(r) for r in records[boundary:])) + 10
    first = read_tail_first(path, reach=reach)
    assert first is not None
    assert first.tail.kept == ()  # the preserved records were not found
    tree = build_tree(str(path), first.scan.lines, head=first.tail.head)
    assert not tree.compaction_applied
    assert Transcript.open(path).tree.compaction_applied
    assert not stands_alone(tree, first.tail.head, first.names)


def test_a_later_boundary_the_search_misses_makes_it_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    records = compacted_session(25)
    escaped = json.dumps(
        {"type": "system", "subtype": "compact_boundary", "uuid": "late", "parentUuid": None}
    ).replace("compact_boundary", "compact\\u005fboundary")
    path.write_bytes(b"".join(format_line(r) for r in records) + escaped.encode() + b"\n")
    assert read_tail_first(path) is None  # the escaped boundary is found by the tail scan


def test_the_head_is_folded_not_held(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(format_line(r) for r in compacted_session(95)))
    first = read_tail_first(path)
    assert first is not None
    whole = scan_transcript(path)
    assert len(first.scan.lines) < len(whole.lines) // 5
    assert first.scan.lines[-1] == whole.lines[-1]
