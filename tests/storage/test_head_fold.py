"""A head read as a fold (most lines decoded bare, without ``message.content``) is the
head read line by line from the whole scan.

The tail-first read (:mod:`sessiontree.storage.tail_read`) folds the head of a transcript
into a :class:`~sessiontree.model.tail.HeadReading`, which the scan fills through
:class:`~sessiontree.storage.scan.LineFold`: the preserved records' lines whole, every
other line bare. That must be what the reading holds when every line of the whole scan
is appended to it, and the scan's problems must be the whole scan's. The random files
mix records with the damage where a bare decode and a skeleton's part ways: odd content,
text that does not decode inside and outside the content, wrong-typed fields, NUL bytes
and torn ends, on one core and on two.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.model.records import Line
from sessiontree.model.tail import HeadReading
from sessiontree.storage import scan
from sessiontree.storage.jsonl import format_line, scan_range, scan_transcript
from tests.storage.test_skeleton_cache import FIXTURE_FILES


def _record(kind: str, i: int, parent: int | None, **extra: Any) -> bytes:
    return format_line(
        {
            "type": kind,
            "uuid": f"u{i}",
            "parentUuid": None if parent is None else f"u{parent}",
            "timestamp": f"2026-01-01T00:00:{i % 60:02d}.000Z",
            **extra,
        }
    )


RECORDS = st.builds(
    _record,
    st.sampled_from(["user", "assistant", "system", "attachment", "progress"]),
    st.integers(0, 30),
    st.none() | st.integers(0, 30),
    isSidechain=st.booleans(),
    message=st.sampled_from(
        [
            {"role": "user", "content": "hi"},
            {"id": "m1", "content": [{"type": "text", "text": "a"}]},
            {"id": "m2", "content": [{"type": "tool_use", "id": "t1", "input": {}}]},
        ]
    ),
)

#: Lines where the bare decode and the skeleton's may part ways, and other damage.
DAMAGE = st.sampled_from(
    [
        b'{"type":"user","uuid":"c1","message":{"content":7}}\n',
        b'{"type":"user","uuid":"c2","message":{"content":[1,"x",null]}}\n',
        b'{"type":"user","uuid":"c3","message":{"id":"m","content":[{"type":9,"id":[]}]}}\n',
        b'{"type":"user","uuid":"c4","message":{"content":[{"type":"text","text":"\xff"}]}}\n',
        b'{"type":"user","uuid":"c5","message":{"content":[{"type":"\\ud800"}]}}\n',
        b'{"type":"user","uuid":"c6","message":{"content":"\\udc00 cut"}}\n',
        b'{"type":"user","uuid":"\\ud800","parentUuid":"u1"}\n',
        b'{"type":"user","uuid":"c7","isMeta":"yes","logicalParentUuid":5}\n',
        b'{"type":"user","uuid":"c8","sourceToolAssistantUUID":[],"explicit":1}\n',
        b'{"type":"user","uuid":"c9","logicalParentUuid":"\xfe"}\n',
        b'{"type":"user","uuid":"c10","message":"a string"}\n',
        b'{"type":"assistant","uuid":"c11","message":{"id":5}}\n',
        b'{"type":"assistant","uuid":"c12","isApiErrorMessage":{"a":[1]},"toolUseResult":3}\n',
        b'{"type":"user","uuid":"c13","timestamp":7}\n',
        b'{"type":"user","uuid":3}\n',
        b'{"type":"last-prompt","leafUuid":"u3"}\n',
        b'{"type":"last-prompt","leafUuid":null}\n',
        b'{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,'
        b'"compactMetadata":{"preservedSegment":{"headUuid":"u1","anchorUuid":"u2",'
        b'"tailUuid":"u3"}}}\n',
        b'{"type":"system","subtype":"compact_boundary","uuid":"b1","compactMetadata":7}\n',
        b'{"type":"user","uuid":"b1","parentUuid":"u4"}\n',
        b'{"type":"user","uuid":"n\x00l","parentUuid":"u2"}\n',
        b"{not json\n",
        b"\n",
        b'{"type":"user","uuid":"deep","x":' + b"[" * 5000 + b"]" * 5000 + b"}\n",
    ]
)


def _facts(reading: HeadReading) -> tuple[Any, ...]:
    """What a reading answers (a part read on the second core names its first line's
    parent even when the line before, in the first part, is it: :meth:`HeadReading.names`
    is the same)."""
    names = reading.names()
    return (
        reading.kept,
        list(names.uuids),
        list(names.outward),
        list(names.message_ids),
        reading.newest_timestamp,
        reading.newest_row,
        reading.saw_last_prompt,
        reading.all_sidechain,
        reading.boundaries,
        reading.exact,
    )


def _as_appended(path: Path, kept: frozenset[int]) -> tuple[HeadReading, list[Any]]:
    """The reading filled line by line from the whole scan, and its problems."""
    whole = scan_transcript(path)
    reading = HeadReading(kept)
    for line in whole.lines:
        reading.append(line)
    return reading, whole.problems


def _as_folded(path: Path, kept: frozenset[int], *, cores: int) -> tuple[HeadReading, list[Any]]:
    reading = HeadReading(kept)
    fd = os.open(path, os.O_RDONLY)
    try:
        folded = scan_range(fd, path, sink=reading, cores=cores)
    finally:
        os.close(fd)
    return reading, folded.problems


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    pieces=st.lists(RECORDS | DAMAGE, max_size=40),
    torn=st.binary(max_size=30),
    data=st.data(),
)
def test_a_folded_head_is_the_head_of_the_whole_scan(
    pieces: list[bytes], torn: bytes, data: st.DataObject, tmp_path_factory: Any
) -> None:
    path = tmp_path_factory.mktemp("fold") / "s.jsonl"
    path.write_bytes(b"".join(pieces) + torn.replace(b"\n", b" "))
    starts = [ln.offset for ln in scan_transcript(path).lines]
    kept = frozenset(data.draw(st.sets(st.sampled_from(starts)) if starts else st.just(set())))
    expected, problems = _as_appended(path, kept)
    for cores in (1, 2):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(scan, "SPLIT_AT", 0)  # two cores split even a small file
            reading, folded_problems = _as_folded(path, kept, cores=cores)
        assert folded_problems == problems, cores
        if cores == 2 and not reading.exact:
            # A boundary of the first part written again in the later one as something
            # else: the parts cannot tell which copy is last, so the reading says it is
            # not exact, and the whole file is read instead (never a wrong head).
            assert expected.boundaries
            continue
        assert _facts(reading) == _facts(expected), cores


def test_every_fixture_folds_as_it_scans() -> None:
    for path in FIXTURE_FILES:
        lines = scan_transcript(path).lines
        kept = frozenset(ln.offset for ln in lines[::7])
        expected, problems = _as_appended(path, kept)
        reading, folded_problems = _as_folded(path, kept, cores=1)
        assert _facts(reading) == _facts(expected), path
        assert folded_problems == problems, path


def test_most_lines_are_taken_bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_record("user", i, i - 1 if i else None) for i in range(20)))
    whole: list[int] = []
    real_append = HeadReading.append

    def append(self: HeadReading, line: Line) -> None:
        whole.append(line.number)
        real_append(self, line)

    monkeypatch.setattr(HeadReading, "append", append)
    reading, _ = _as_folded(path, frozenset({scan_transcript(path).lines[3].offset}), cores=1)
    assert whole == [4]  # the kept line alone came whole
    assert len(reading.uuids) == 19 and len(reading.kept) == 1
