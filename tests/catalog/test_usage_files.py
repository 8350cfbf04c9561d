"""usage reads a transcript's responses straight from its bytes (``catalog/usage_files.py``),
and keeps them per file between runs: what it counts is what the skeleton reading counted.

The reference is the reading usage had before: a skeleton scan of the whole file, then
its assistant lines decoded (``add_responses`` over ``scan_transcript``, which the store
still uses). Every fixture, generated records of every odd shape and damaged lines must
give the same responses, cold and through the cache, a file grown, replaced or cut.
"""

from __future__ import annotations

import json
import os
import re
import threading
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessiontree.catalog import usage_files
from sessiontree.catalog.usage import (
    Response,
    UsageRow,
    add_responses,
    build_usage_report,
    default_prices,
)
from sessiontree.catalog.usage_files import UsageCache, iter_candidate_lines, read_responses
from sessiontree.storage.scan import scan_transcript
from tests.conftest import FIXTURES, SHARED_FIXTURES, count_forks

SESSION = "aaaaaaaa-0000-4000-8000-000000000001"


def skeleton_reading(paths: list[Path]) -> dict[str, Response]:
    """Responses as usage read them before: a skeleton scan, its assistant lines decoded."""
    seen: dict[str, Response] = {}
    for path in paths:
        add_responses(seen, path, scan_transcript(path), path)
    return seen


def transcripts(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl")) if root.is_dir() else []


def test_every_fixture_counts_as_the_skeleton_reading_did(tmp_path: Path) -> None:
    files = transcripts(FIXTURES) + transcripts(SHARED_FIXTURES)
    assert len(files) > 20
    cache = UsageCache(tmp_path / "usage.msgpack")
    for path in files:
        expected = skeleton_reading([path])
        assert read_responses([path]) == expected, path
        assert read_responses([path], cache=cache) == expected, path  # cold cache
    warm = UsageCache(tmp_path / "usage.msgpack")
    assert read_responses(files, cache=warm) == skeleton_reading(files)


def record(**fields: Any) -> dict[str, Any]:
    """An assistant record as the client writes one, with ``fields`` laid over it."""
    base: dict[str, Any] = {
        "parentUuid": None,
        "type": "assistant",
        "uuid": "u1",
        "timestamp": "2026-03-01T12:00:00.000Z",
        "sessionId": SESSION,
        "cwd": "/home/u/p",
        "requestId": "req_1",
        "message": {
            "id": "msg_1",
            "model": "claude-sonnet-4-5",
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
            "usage": {
                "input_tokens": 3,
                "output_tokens": 9,
                "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 7,
                "cache_creation": {"ephemeral_1h_input_tokens": 40},
            },
        },
    }
    for name, value in fields.items():
        if name.startswith("message."):
            base["message"][name.removeprefix("message.")] = value
        elif name.startswith("usage."):
            base["message"]["usage"][name.removeprefix("usage.")] = value
        else:
            base[name] = value
    return base


#: Values of every JSON type, the ones records really hold and the odd ones.
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "x", "assistant", "user", "<synthetic>", SESSION, "msg_2"]),
    st.just({}),
    st.just({"sessionId": "bbbbbbbb-0000-4000-8000-000000000002"}),
    st.just({"ephemeral_1h_input_tokens": 500}),
    st.just([1]),
)
FIELDS = [
    "type",
    "uuid",
    "timestamp",
    "requestId",
    "sessionId",
    "requestSessionId",
    "forkedFrom",
    "cwd",
    "message",
    "message.id",
    "message.model",
    "message.usage",
    "usage.input_tokens",
    "usage.output_tokens",
    "usage.cache_creation_input_tokens",
    "usage.cache_read_input_tokens",
    "usage.cache_creation",
]


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """One line: a record with some fields odd, maybe damaged."""
    odd = draw(st.dictionaries(st.sampled_from(FIELDS), ODD, max_size=3))
    if "message" in odd and any(name.startswith(("message.", "usage.")) for name in odd):
        del odd["message"]
    if "message.usage" in odd:
        odd = {k: v for k, v in odd.items() if not k.startswith("usage.")}
    line = json.dumps(record(**odd)).encode()
    damage = draw(st.sampled_from([None, None, None, "nul", "utf8", "cut", "padding"]))
    if damage == "nul":
        at = draw(st.integers(0, len(line)))
        line = line[:at] + b"\x00" + line[at:]
    elif damage == "utf8":
        line = line.replace(b'"hi"', b'"h\xff\xfei"')
    elif damage == "cut":
        line = line[: draw(st.integers(1, len(line) - 1))]
    elif damage == "padding":  # a long line: past a (small) block
        line = line.replace(b'"hi"', b'"' + b"w" * draw(st.integers(50, 400)) + b'"')
    return line


@given(
    body=st.lists(lines(), min_size=1, max_size=8),
    ending=st.sampled_from([b"\n", b""]),
    block=st.sampled_from([16, 61, 4 * 1024 * 1024]),
)
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_odd_and_damaged_records_count_as_the_skeleton_reading_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: list[bytes], ending: bytes, block: int
) -> None:
    monkeypatch.setattr(usage_files, "BLOCK", block)
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(b"\n".join(body) + ending)
    assert read_responses([path]) == skeleton_reading([path])


@pytest.mark.parametrize("block", [7, 8, 13, 64])
def test_a_line_is_found_whatever_blocks_cut_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """The key cut between two reads, a line of many blocks, one that ends a block."""
    monkeypatch.setattr(usage_files, "BLOCK", block)
    wanted = [b'{"a":1,"usage":2}\n', b'x"usage"\n', b"y" * 40 + b'"usage"' + b"z" * 30 + b"\n"]
    data = b"".join([b"no\n", wanted[0], b"n" * 50 + b"\n", wanted[1], wanted[2], b'"us"'])
    path = tmp_path / "t.jsonl"
    path.write_bytes(data + b'"usage" torn')
    with path.open("rb") as handle:
        found = list(iter_candidate_lines(handle.fileno()))
    assert found == [*wanted, b'"us""usage" torn']


def write_records(path: Path, *records: dict[str, Any], end: bytes = b"\n") -> None:
    with path.open("ab") as handle:
        handle.write(b"\n".join(json.dumps(r).encode() for r in records) + end)


def counts(responses: dict[str, Response]) -> dict[str, int]:
    return {key: r.tokens.output for key, r in responses.items()}


def test_the_cache_reads_only_what_was_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    write_records(path, record())
    assert counts(read_responses([path], cache=UsageCache(tmp_path / "c"))) == {"message:msg_1": 9}
    write_records(path, record(**{"message.id": "msg_2", "usage.output_tokens": 4}))
    read = spy_on_reads(monkeypatch)
    got = read_responses([path], cache=UsageCache(tmp_path / "c"))
    assert counts(got) == {"message:msg_1": 9, "message:msg_2": 4}
    assert read == [(path, len(json.dumps(record())) + 1)]  # from the end read before
    read.clear()
    assert read_responses([path], cache=UsageCache(tmp_path / "c")) == got
    assert read == []  # unchanged: not read at all


def test_a_last_line_without_its_newline_counts_and_is_read_again(tmp_path: Path) -> None:
    """A write in progress that is whole JSON counts now; completed later, it counts once."""
    path = tmp_path / f"{SESSION}.jsonl"
    write_records(path, record(), end=b"")
    cache_file = tmp_path / "c"
    assert counts(read_responses([path], cache=UsageCache(cache_file))) == {"message:msg_1": 9}
    assert counts(read_responses([path], cache=UsageCache(cache_file))) == {"message:msg_1": 9}
    with path.open("ab") as handle:
        handle.write(b"\n")
    write_records(path, record(**{"message.id": "msg_2"}))
    got = read_responses([path], cache=UsageCache(cache_file))
    assert counts(got) == {"message:msg_1": 9, "message:msg_2": 9}
    assert got == skeleton_reading([path])


def test_a_file_replaced_or_cut_is_read_whole_again(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    cache_file = tmp_path / "c"
    write_records(path, record(), record(**{"message.id": "msg_2"}))
    read_responses([path], cache=UsageCache(cache_file))
    # Rewritten in place, shorter: the cached responses are not kept.
    with path.open("r+b") as handle:
        handle.truncate(0)
    write_records(path, record(**{"message.id": "msg_3"}))
    assert counts(read_responses([path], cache=UsageCache(cache_file))) == {"message:msg_3": 9}
    # Replaced by a rename, longer than before: another file.
    other = tmp_path / "new.jsonl"
    write_records(other, record(**{"message.id": "msg_4"}), record(**{"message.id": "msg_5"}))
    os.replace(other, path)
    got = read_responses([path], cache=UsageCache(cache_file))
    assert set(counts(got)) == {"message:msg_4", "message:msg_5"}


def test_a_damaged_cache_file_is_only_slower(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    write_records(path, record())
    cache_file = tmp_path / "c"
    cache_file.write_bytes(b"\x93not msgpack at all")
    assert counts(read_responses([path], cache=UsageCache(cache_file))) == {"message:msg_1": 9}
    assert counts(read_responses([path], cache=UsageCache(cache_file))) == {"message:msg_1": 9}


def test_a_file_gone_since_it_was_listed_is_a_problem_not_an_error(tmp_path: Path) -> None:
    problems: list[Any] = []
    gone = tmp_path / f"{SESSION}.jsonl"
    got = read_responses([gone], cache=UsageCache(tmp_path / "c"), problems=problems)
    assert got == {}
    assert [p.kind for p in problems] == ["unreadable"]


# --- two cores ------------------------------------------------------------------------


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every read of two files or more splits them between two processes; the list
    counts the forks."""
    monkeypatch.setattr(usage_files, "SPLIT_AT", 1)
    return count_forks(monkeypatch)


def spy_on_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, int]]:
    """Each file read from now on (``read_file_responses``), with where it was read from."""
    read: list[tuple[Path, int]] = []
    real = usage_files.read_file_responses

    def spy(fd: int, where: Path, start: int = 0) -> usage_files.FileResponses:
        read.append((where, start))
        return real(fd, where, start)

    monkeypatch.setattr(usage_files, "read_file_responses", spy)
    return read


def fixture_files() -> list[Path]:
    return transcripts(FIXTURES) + transcripts(SHARED_FIXTURES)


def total(responses: dict[str, Response]) -> UsageRow:
    return build_usage_report(responses.values(), by="day", prices=default_prices(), tz=UTC).total


def test_every_fixture_counts_on_two_cores_as_on_one(
    tmp_path: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same responses, so the same totals, cold (the cache filled as on one core)
    and warm; the child's part read from the cache as this process's is."""
    files = fixture_files()
    one = read_responses(files)
    assert forks == []
    two = read_responses(files, cores=2)
    assert len(forks) == 1
    assert two == one == skeleton_reading(files)
    assert total(one).responses > 100
    assert total(two) == total(one)
    cold = read_responses(files, cache=UsageCache(tmp_path / "c"), cores=2)
    assert cold == one
    assert len(forks) == 2
    read = spy_on_reads(monkeypatch)
    assert read_responses(files, cache=UsageCache(tmp_path / "c"), cores=2) == one
    assert read == []  # warm: the cold read on two cores filled the cache, both parts
    assert len(forks) == 2  # (nothing to read: no fork)


def test_files_grown_since_read_on_two_cores_as_on_one(tmp_path: Path, forks: list[int]) -> None:
    """A file of the child's part that only grew is read from where the cache stopped,
    after the cached responses (the entry this process holds)."""
    folder = tmp_path / "p"
    folder.mkdir()
    files = []
    for at, source in enumerate(f for f in fixture_files() if f.stat().st_size > 2000):
        files.append(folder / f"{at:04d}-{source.name}")
        files[-1].write_bytes(source.read_bytes())
    cache = tmp_path / "c"
    read_responses(files, cache=UsageCache(cache), cores=2)
    for path in (files[0], files[-1]):  # one in each part
        with path.open("ab") as handle:
            handle.write(b"\n" if not path.read_bytes().endswith(b"\n") else b"")
        write_records(path, record(**{"message.id": f"msg_{path.name}"}))
    assert read_responses(files, cache=UsageCache(cache), cores=2) == skeleton_reading(files)
    assert len(forks) == 2
    assert read_responses(files, cache=UsageCache(cache)) == skeleton_reading(files)


def test_a_file_gone_in_the_childs_part_is_a_problem_as_on_one_core(
    tmp_path: Path, forks: list[int]
) -> None:
    files = fixture_files()
    gone = tmp_path / f"{SESSION}.jsonl"
    paths = [*files, gone]
    problems_one: list[Any] = []
    one = read_responses(paths, problems=problems_one)
    problems_two: list[Any] = []
    advanced: list[int] = []
    two = read_responses(paths, problems=problems_two, advance=lambda: advanced.append(1), cores=2)
    assert forks
    assert two == one
    assert problems_two == problems_one
    assert [p.kind for p in problems_two] == ["unreadable"]
    assert len(advanced) == len(paths)


def test_a_failed_child_leaves_its_part_to_this_process(
    tmp_path: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = fixture_files()
    one = read_responses(files)
    parent, real_preadv = os.getpid(), os.preadv

    def preadv(fd: int, buffers: Any, offset: int) -> int:
        if os.getpid() != parent:
            os._exit(3)  # the child dies at its first read
        return real_preadv(fd, buffers, offset)

    monkeypatch.setattr(os, "preadv", preadv)
    cache = UsageCache(tmp_path / "c")
    assert read_responses(files, cache=cache, cores=2) == one
    assert forks
    assert read_responses(files, cache=UsageCache(tmp_path / "c")) == one


def test_a_process_with_threads_reads_on_one_core(
    forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    files = fixture_files()
    assert read_responses(files, cores=2) == skeleton_reading(files)
    assert forks == []


@given(
    files=st.lists(st.lists(lines(), min_size=1, max_size=5), min_size=2, max_size=4),
    shared=st.booleans(),
)
@example(  # (found by CI: the cache keeps no count of 2**64, so its file is read again)
    files=[[json.dumps(record(**{"usage.input_tokens": 2**64})).encode()]] * 2, shared=False
)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_random_files_count_on_two_cores_as_the_skeleton_reading_did(
    tmp_path_factory: pytest.TempPathFactory,
    forks: list[int],
    files: list[list[bytes]],
    shared: bool,
) -> None:
    """Files split between two processes, the same responses in several of them (copies
    a resume or fork made: which copy counts depends on the order they are merged in)."""
    folder = tmp_path_factory.mktemp("split")
    paths = []
    for at, body in enumerate(files):
        name = SESSION if shared else f"aaaaaaaa-0000-4000-8000-{at:012d}"
        path = folder / f"p{at}" / f"{name}.jsonl"
        path.parent.mkdir()
        path.write_bytes(b"\n".join(body) + b"\n")
        paths.append(path)
    expected = skeleton_reading(paths)
    made = len(forks)
    assert read_responses(paths, cores=2) == expected
    cache = folder / "cache"
    assert read_responses(paths, cache=UsageCache(cache), cores=2) == expected
    # The rerun reads only what the cache could not keep (a count of 2**64 or more: its
    # file is read again each time), and splits that only when there is some of it.
    kept = UsageCache(cache)
    unkept = [p for p in paths if kept.entry(p) is None]
    assert all(max(map(int, re.findall(rb"\d{20,}", p.read_bytes())), default=0) >= 2**64
               for p in unkept)  # fmt: skip
    again = usage_files._split_at(paths, kept.entry) < len(paths)
    assert not again or unkept
    assert read_responses(paths, cache=UsageCache(cache), cores=2) == expected
    assert len(forks) == made + 2 + again


def test_a_count_past_what_the_cache_holds_counts_and_the_other_files_are_kept(
    tmp_path: Path,
) -> None:
    """A count of 2**64 or more (no client writes one; msgpack holds up to 2**64 - 1) is
    counted as the skeleton reading counts it, and its file read again each time; the
    cache keeps the other files."""
    huge = tmp_path / "p" / f"{SESSION}.jsonl"
    other = tmp_path / "p" / "bbbbbbbb-0000-4000-8000-000000000002.jsonl"
    huge.parent.mkdir()
    write_records(huge, record(**{"usage.input_tokens": 2**64}))
    write_records(other, record(**{"message.id": "msg_2"}))
    paths = [huge, other]
    cache = tmp_path / "c"
    assert read_responses(paths, cache=UsageCache(cache)) == skeleton_reading(paths)
    kept = UsageCache(cache)
    assert kept.entry(other) is not None
    assert kept.entry(huge) is None
    assert read_responses(paths, cache=kept) == skeleton_reading(paths)
