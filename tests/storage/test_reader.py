"""The tolerant reader on broken files: it never raises, keeps every good line, names every bad one.

Phase one (``scan_transcript``) must keep each decodable line with its exact byte offset
and report each bad line with the right kind and line number; phase two
(``read_records``) must return, for every kept line, exactly the dict that was stored.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import DataError
from sessiontree.model.records import Problem
from sessiontree.model.tree import build_tree
from sessiontree.storage.jsonl import (
    append_records,
    format_line,
    iter_records,
    read_records,
    scan_transcript,
)


def encode(record: Any) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def write_lines(path: Path, lines: list[bytes]) -> list[int]:
    """Write raw lines (each with its own ending, if any); return each line's offset."""
    offsets = []
    position = 0
    for line in lines:
        offsets.append(position)
        position += len(line)
    path.write_bytes(b"".join(lines))
    return offsets


def problems(scan: Any) -> list[tuple[str, int | None]]:
    return [(p.kind, p.line) for p in scan.problems]


A = {"type": "user", "uuid": "a", "parentUuid": None, "message": {"role": "user", "content": "hi"}}
B = {"type": "assistant", "uuid": "b", "parentUuid": "a", "message": {"id": "m", "content": []}}
C = {"type": "user", "uuid": "c", "parentUuid": "b", "text": "é ü 漢字 😀"}
D = {"type": "user", "uuid": "c", "parentUuid": "a", "note": "same uuid as C"}
E = {"type": "last-prompt", "leafUuid": "c", "lastPrompt": "x"}


def test_every_kind_of_damage_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        encode(A) + b"\r\n",  # 1 CRLF
        b"\n",  # 2 blank
        b"  \t \n",  # 3 whitespace only
        b"{not json\n",  # 4
        b"\x00" * 4096 + encode(B) + b"\n",  # 5 a NUL run before a good record
        b"\x00" * 100 + b"\n",  # 6 a whole line of NULs
        b'{"type":"user","uuid":"\xff\xfe"}\n',  # 7 invalid UTF-8
        b"[1,2]\n",  # 8
        b'"str"\n',  # 9
        b"3\n",  # 10
        b'{"type":"user","uuid":5}\n',  # 11 wrong field type
        encode(C) + b"\n",  # 12
        encode(D) + b"\n",  # 13 duplicate uuid
        encode(E) + b"\n",  # 14 metadata
        b'{"type":"user","uu',  # 15 torn last line
    ]
    offsets = write_lines(path, lines)
    scan = scan_transcript(path)
    assert problems(scan) == [
        ("bad-json", 4),
        ("nul-bytes", 5),
        ("nul-bytes", 6),
        ("bad-utf8", 7),
        ("bad-shape", 8),
        ("bad-shape", 9),
        ("bad-shape", 10),
        ("bad-shape", 11),
        ("torn-line", 15),
    ]
    kept = {1: A, 5: B, 12: C, 13: D, 14: E}
    assert [ln.number for ln in scan.lines] == list(kept)
    for line in scan.lines:
        assert line.offset == offsets[line.number - 1]
        assert line.length == len(lines[line.number - 1])
    assert [r.raw for r in read_records(path, scan.lines)] == list(kept.values())
    assert [r.line for r in read_records(path, scan.lines)] == list(kept)
    # in any order asked
    assert [r.raw for r in read_records(path, scan.lines[::-1])] == list(kept.values())[::-1]
    # the duplicate is the tree's to report, on the later line
    transcript = Transcript.open(path)
    assert ("duplicate-uuid", 13) in [(p.kind, p.line) for p in transcript.problems]
    assert transcript.tree.parent["c"] == "a"
    assert scan.size == path.stat().st_size


def test_no_trailing_newline_is_not_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_lines(path, [encode(A) + b"\n", encode(B)])
    scan = scan_transcript(path)
    assert scan.problems == []
    assert [r.raw for r in read_records(path, scan.lines)] == [A, B]


def test_torn_last_line_cut_inside_a_character_is_torn_not_bad_utf8(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    whole = encode(C)
    cut = whole.index("漢".encode()) + 1
    write_lines(path, [encode(A) + b"\n", whole[:cut]])
    scan = scan_transcript(path)
    assert problems(scan) == [("torn-line", 2)]
    assert [ln.number for ln in scan.lines] == [1]


def test_torn_line_in_the_middle_is_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_lines(path, [encode(A)[:-3] + b"\n", encode(B) + b"\n"])
    scan = scan_transcript(path)
    assert problems(scan) == [("bad-json", 1)]
    assert [r.raw for r in read_records(path, scan.lines)] == [B]


def test_lines_across_read_blocks_keep_their_offsets(tmp_path: Path) -> None:
    """~9 MB of lines of many lengths, some after NUL runs: whatever block size a reader
    uses, lines straddle its boundaries, and each must come back whole and in place."""
    path = tmp_path / "s.jsonl"
    records: list[dict[str, Any]] = []
    lines: list[bytes] = []
    for index in range(400):
        record = {"type": "user", "uuid": f"u{index}", "pad": "p" * (index * 7919 % 45000)}
        prefix = b"\x00" * (index % 5000) if index % 10 == 3 else b""
        records.append(record)
        lines.append(prefix + encode(record) + b"\n")
    offsets = write_lines(path, lines)
    scan = scan_transcript(path)
    assert [(p.kind, p.line) for p in scan.problems] == [
        ("nul-bytes", i + 1) for i in range(400) if i % 10 == 3
    ]
    assert [(ln.offset, ln.length) for ln in scan.lines] == [
        (offset, len(line)) for offset, line in zip(offsets, lines, strict=True)
    ]
    assert [r.raw for r in read_records(path, scan.lines)] == records


def test_nul_tail_after_a_crash(tmp_path: Path) -> None:
    # a file preallocated by the filesystem and never written: NULs, no newline
    path = tmp_path / "s.jsonl"
    write_lines(path, [encode(A) + b"\n", b"\x00" * 8192])
    scan = scan_transcript(path)
    assert problems(scan) == [("nul-bytes", 2)]
    assert [r.raw for r in read_records(path, scan.lines)] == [A]


def test_empty_file_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    scan = scan_transcript(path)
    assert scan.lines == [] and scan.problems == []
    with pytest.raises(DataError):
        scan_transcript(tmp_path / "missing.jsonl")


def test_a_50_mb_line_is_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    big = "x" * 50_000_000
    record = {"type": "user", "uuid": "big", "parentUuid": "a", "toolUseResult": {"stdout": big}}
    with path.open("wb") as handle:
        handle.write(encode(A) + b"\n")
        handle.write(encode(record) + b"\n")
        handle.write(b'{"type":"user","text":"' + b"y" * 50_000_000 + b"\n")  # never closed
        handle.write(encode(E) + b"\n")
    started = time.monotonic()
    scan = scan_transcript(path)
    assert problems(scan) == [("bad-json", 3)]
    assert [ln.number for ln in scan.lines] == [1, 2, 4]
    [back] = read_records(path, [scan.lines[1]])
    assert back.raw["toolUseResult"]["stdout"] == big
    assert back.raw == record
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("torn", [False, True], ids=["whole", "torn-at-the-end"])
def test_a_long_line_costs_its_length_to_scan_not_twice(tmp_path: Path, torn: bool) -> None:
    """A line that runs past the scan's read blocks is held once, whole: a transcript
    with a 24 MB tool result is scanned in about 24 MB, not its pieces and their join
    (48 MB, before). Also when it is the last line, torn (cut, no newline)."""
    import tracemalloc

    path = tmp_path / "s.jsonl"
    record = {"type": "user", "uuid": "big", "parentUuid": "a", "toolUseResult": "z" * 24_000_000}
    big = encode(record)
    write_lines(path, [encode(A) + b"\n", big[:-10] if torn else big + b"\n"])
    tracemalloc.start()
    try:
        scan = scan_transcript(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if torn:
        assert problems(scan) == [("torn-line", 2)]
        assert [ln.number for ln in scan.lines] == [1]
    else:
        assert problems(scan) == []
        assert [(ln.offset, ln.length) for ln in scan.lines] == [
            (0, len(encode(A)) + 1),
            (len(encode(A)) + 1, len(big) + 1),
        ]
        assert read_records(path, scan.lines[1:])[0].raw == record
    assert peak < 1.3 * len(big), f"{peak / 1e6:.1f} MB to scan a {len(big) / 1e6:.1f} MB line"


def test_a_long_line_cut_while_it_is_read_keeps_the_next_lines_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line longer than a read block is read again whole once its end is found; if the
    file was cut meanwhile, that read gives less: the line is damaged, and the lines
    after it (already read) keep their true offsets."""
    import os

    path = tmp_path / "s.jsonl"
    long = encode({"type": "user", "uuid": "long", "parentUuid": "a", "pad": "p" * 6_000_000})
    lines = [encode(A) + b"\n", long + b"\n", encode(B) + b"\n"]
    offsets = write_lines(path, lines)
    real_pread = os.pread

    def cut(fd: int, size: int, at: int) -> bytes:
        data = real_pread(fd, size, at)
        return data[:100] if at == offsets[1] and size == len(lines[1]) else data

    monkeypatch.setattr(os, "pread", cut)
    scan = scan_transcript(path)
    assert problems(scan) == [("bad-json", 2)]
    assert [(ln.number, ln.offset) for ln in scan.lines] == [(1, 0), (3, offsets[2])]


def test_read_records_skips_what_is_gone_and_keeps_order(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_lines(path, [encode(A) + b"\n", encode(B) + b"\n"])
    scan = scan_transcript(path)
    assert [r.raw for r in read_records(path, [scan.lines[1], scan.lines[0]])] == [B, A]
    assert read_records(path, []) == []


def test_iter_records_streams_every_decodable_object(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_lines(path, [encode(A) + b"\n", b"[1]\n", b"junk\n", encode(B)])
    assert [(r.line, r.raw) for r in iter_records(path)] == [(1, A), (4, B)]


def test_every_kept_line_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    bad = b'{"type":"user","uuid":"u","parentUuid":null,"message":{"content":"\xff"}}\n'
    write_lines(path, [encode(A) + b"\n", bad])
    scan = scan_transcript(path)
    kept = [ln.number for ln in scan.lines]
    reported = [p.line for p in scan.problems]
    assert sorted(kept + reported) == [1, 2]  # each line either kept or reported
    problems: list[Problem] = []
    records = read_records(path, scan.lines, problems)
    assert len(records) == len(scan.lines)
    assert records[-1].raw["message"]["content"] == "\ufffd"  # replaced, not dropped
    assert [(p.kind, p.line) for p in problems] == [("bad-utf8", 2)]


def test_lone_surrogate_escape_is_valid_json(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    line = b'{"type":"user","uuid":"u","parentUuid":"a","toolUseResult":{"stdout":"ok \\ud83d"}}'
    write_lines(path, [encode(A) + b"\n", line + b"\n", encode(B) + b"\n"])
    scan = scan_transcript(path)
    assert scan.problems == []
    # Kept, with the lone half of the emoji as U+FFFD: a str holding a lone surrogate
    # could not be written back as UTF-8 JSON (context --json, export).
    expected = json.loads(line.replace(b"\\ud83d", b"\\ufffd"))
    assert [r.raw for r in read_records(path, scan.lines)] == [A, expected, B]


# -- the writer ----------------------------------------------------------------------------------


def test_append_creates_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / "s.jsonl"
    append_records(path, [A, B])
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_bytes() == format_line(A) + format_line(B)


def test_append_to_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    append_records(path, [A])
    append_records(path, [B])
    assert [r.raw for r in read_records(path, scan_transcript(path).lines)] == [A, B]


def test_append_after_a_torn_tail_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(format_line(A) + b'{"type":"user","uu')
    append_records(path, [B, C])
    scan = scan_transcript(path)
    assert problems(scan) == [("bad-json", 2)]
    assert [r.raw for r in read_records(path, scan.lines)] == [A, B, C]


# -- fuzz ------------------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=6,
)


@st.composite
def good_records(draw: st.DrawFn) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": draw(st.sampled_from(["user", "assistant", "system", "attachment", "x-new"])),
        "uuid": draw(st.text(min_size=1, max_size=12)),
        "parentUuid": draw(st.none() | st.text(max_size=12)),
    }
    extra = draw(
        st.dictionaries(st.text(max_size=8).map(lambda k: f"k_{k}"), json_values, max_size=4)
    )
    record.update(extra)
    return record


SNIPPETS = [b"[1,2]", b'"str"', b"3", b"null", b'{"uuid":5}', b"{", b"}", b"\xff\xfe"]
plain_garbage = st.one_of(
    st.binary(max_size=120),
    st.sampled_from(SNIPPETS),
    json_values.map(encode),  # valid JSON, rarely an object
    st.tuples(good_records(), st.integers(1, 40)).map(lambda t: encode(t[0])[: -t[1]]),  # torn
).map(lambda b: b.replace(b"\n", b"").replace(b"\x00", b""))
garbage = st.one_of(
    plain_garbage,
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b"") + b"\x00"),
    st.integers(1, 300).map(lambda n: b"\x00" * n),
    st.tuples(good_records(), st.integers(1, 300)).map(lambda t: b"\x00" * t[1] + encode(t[0])),
)
line_endings = st.sampled_from([b"\n", b"\r\n"])


def mixed(bad: st.SearchStrategy[bytes]) -> st.SearchStrategy[list[tuple[str, Any]]]:
    return st.lists(
        st.one_of(good_records().map(lambda r: ("good", r)), bad.map(lambda g: ("bad", g))),
        max_size=15,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed(garbage), st.lists(line_endings, min_size=1), st.booleans())
def test_garbage_never_breaks_good_lines(
    items: list[tuple[str, Any]], endings: list[bytes], final_newline: bool
) -> None:
    check_garbage(items, endings, final_newline)


def check_garbage(items: list[tuple[str, Any]], endings: list[bytes], final_newline: bool) -> None:
    """Never raises; every good line kept where it is and read back exactly; every other
    line kept (it was an object after all), blank, or reported once with the right kind."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        lines: list[bytes] = []
        for index, (kind, value) in enumerate(items):
            body = encode(value) if kind == "good" else value
            ending = endings[index % len(endings)]
            if index == len(items) - 1 and not final_newline:
                ending = b""
            lines.append(body + ending)
        offsets = write_lines(path, lines)
        scan = scan_transcript(path)
        by_number = {ln.number: ln for ln in scan.lines}
        good_numbers = [i + 1 for i, (kind, _) in enumerate(items) if kind == "good"]
        for number in good_numbers:
            line = by_number[number]  # every good line is kept ...
            assert line.offset == offsets[number - 1]  # ... where it is
            assert line.length == len(lines[number - 1])
        records = read_records(path, [by_number[n] for n in good_numbers])
        assert [r.raw for r in records] == [items[n - 1][1] for n in good_numbers]
        # every garbage line is kept (it happened to be an object), blank, or reported
        reported: dict[int, list[str]] = {}
        for problem in scan.problems:
            assert problem.line is not None
            reported.setdefault(problem.line, []).append(problem.kind)
        assert not set(reported) & set(good_numbers)
        for index, (kind, value) in enumerate(items):
            number = index + 1
            if kind == "good":
                continue
            kinds = reported.get(number, [])
            if b"\x00" in value:
                assert kinds[:1] == ["nul-bytes"]
                kinds = kinds[1:]
            body = value.replace(b"\x00", b"")
            if not body.strip():
                assert kinds == [] and number not in by_number
            elif number in by_number:
                assert kinds == []
            else:
                [why] = kinds
                if index == len(items) - 1 and not final_newline:
                    assert why == "torn-line"
                elif not _is_utf8(body):
                    assert why == "bad-utf8"
                else:
                    assert why in ("bad-json", "bad-shape")
        # and the tree over whatever was kept builds without raising
        build_tree(str(path), scan.lines).resolve_leaf()


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
