"""The skeleton cache: a warm open (cache, then only the appended bytes) is a cold open.

Exactness first: every fixture transcript, cut anywhere (mid-line included), cached, then
grown back, reads warm as it reads cold (scan, tree, active path, context); so do random
transcripts grown in steps with torn lines completed later; truncation and rewrites are
caught and rebuilt. Then what a warm open reads: only the appended bytes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.conversation.transcript import Transcript
from sessiontree.storage import skeleton_cache
from sessiontree.storage.jsonl import format_line, scan_transcript
from sessiontree.storage.skeleton_cache import SkeletonCache
from tests.conftest import SHARED_FIXTURES, WILD, needs_shared
from tests.model.test_tree_properties import Record, record_sets, tree_facts

#: The transcripts of this repository's fixtures, and of ``../shared``'s when it is here.
OWN_FIXTURE_FILES = sorted(
    (Path(__file__).parents[1] / "fixtures").glob("claude-code-*/**/*.jsonl")
)
SHARED_FIXTURE_FILES = sorted(
    [
        *(SHARED_FIXTURES / "claude-code-2.1.328").glob("**/*.jsonl"),
        *(WILD.glob("**/*.jsonl") if WILD.is_dir() else []),
    ]
)
FIXTURE_FILES = sorted([*OWN_FIXTURE_FILES, *SHARED_FIXTURE_FILES])


def facts(transcript: Transcript) -> dict[str, Any]:
    """Everything an open gives, comparable: the scan, the tree, the context."""
    scan = transcript.scan
    return {
        "lines": scan.lines,
        "problems": scan.problems,
        "resume": (scan.resume_offset, scan.resume_number),
        "tree": tree_facts(transcript.tree),
        "context": transcript.context(),
        "read_problems": transcript.read_problems,
    }


def assert_warm_is_cold(path: Path, cache: SkeletonCache) -> Transcript:
    warm = Transcript.open(path, skeleton_cache=cache)
    cold = Transcript.open(path)
    assert facts(warm) == facts(cold)
    return warm


def test_there_are_fixtures() -> None:
    assert len(OWN_FIXTURE_FILES) > 80


@needs_shared
def test_there_are_shared_fixtures() -> None:
    assert len(SHARED_FIXTURE_FILES) > 60


@pytest.mark.parametrize("source", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_fixture_cut_anywhere_then_grown_reads_warm_as_cold(source: Path, tmp_path: Path) -> None:
    data = source.read_bytes()
    path = tmp_path / source.name
    cuts = sorted({0, len(data) // 3, len(data) // 2 + 7, len(data) - 1, len(data)})
    cache = SkeletonCache(tmp_path / "cache", rewrite_after=0)
    for cut in cuts:  # each a prefix of the next: the file only grows
        path.write_bytes(data[:cut])
        assert_warm_is_cold(path, cache)
    assert_warm_is_cold(path, cache)  # unchanged: all from the cache


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(record_sets(), st.data())
def test_random_transcripts_grown_in_steps_read_warm_as_cold(
    records: list[Record], data: st.DataObject
) -> None:
    folder = Path(tempfile.mkdtemp())
    try:
        path = folder / "s.jsonl"
        path.touch()
        lazy = data.draw(st.booleans(), label="lazy rewrite")
        cache = SkeletonCache(folder / "cache", rewrite_after=None if lazy else 0)
        pending = b""  # the rest of a line written torn, completed by a later step
        position = 0
        while position < len(records) or pending:
            size = data.draw(st.integers(0, 6), label="batch")
            payload = pending + b"".join(
                format_line(r) for r in records[position : position + size]
            )
            position += size
            pending = b""
            if payload and data.draw(st.booleans(), label="torn"):
                cut = (
                    data.draw(st.integers(1, len(payload) - 1), label="cut")
                    if len(payload) > 1
                    else 1
                )
                payload, pending = payload[:cut], payload[cut:]
            with path.open("ab") as handle:
                handle.write(payload)
            assert_warm_is_cold(path, cache)
        assert_warm_is_cold(path, cache)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record_sets(), record_sets(), st.data())
def test_truncated_or_rewritten_transcripts_are_rebuilt(
    first: list[Record], second: list[Record], data: st.DataObject
) -> None:
    folder = Path(tempfile.mkdtemp())
    try:
        path = folder / "s.jsonl"
        before = b"".join(format_line(r) for r in first)
        path.write_bytes(before)
        cache = SkeletonCache(folder / "cache", rewrite_after=0)
        assert_warm_is_cold(path, cache)
        change_under(path, before, b"".join(format_line(r) for r in second), data)
        assert_warm_is_cold(path, cache)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def change_under(path: Path, before: bytes, after: bytes, data: st.DataObject) -> None:
    """Change the transcript at ``path`` (holding ``before``) the ways a cache must catch:
    truncated; truncated then written past its old end; rewritten in place (the same
    inode, other bytes); another file renamed over it."""
    how = data.draw(st.sampled_from(["truncate", "regrow", "rewrite", "replace"]), label="how")
    if how == "truncate":
        os.truncate(path, data.draw(st.integers(0, len(before))))
    elif how == "regrow":
        with path.open("r+b") as handle:
            handle.truncate(data.draw(st.integers(0, len(before))))
            handle.seek(0, os.SEEK_END)
            handle.write(after + after)
    elif how == "rewrite":
        with path.open("r+b") as handle:
            handle.write(after)
            handle.truncate()
    else:
        (path.parent / "new").write_bytes(after)
        os.replace(path.parent / "new", path)


def lines(count: int, start: int = 0) -> bytes:
    return b"".join(
        format_line(
            {
                "type": "user",
                "uuid": f"u{i}",
                "parentUuid": f"u{i - 1}" if i else None,
                "message": {"role": "user", "content": "x" * 300},
                "toolUseResult": {"stdout": "y"},
            }
        )
        for i in range(start, start + count)
    )


def test_a_warm_open_reads_only_the_appended_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(2000))
    cache = SkeletonCache(tmp_path / "cache", rewrite_after=0)
    Transcript.open(path, skeleton_cache=cache)
    old_size = path.stat().st_size
    appended = lines(10, 2000)
    with path.open("ab") as handle:
        handle.write(appended)

    read_from: list[int] = []
    real = skeleton_cache.scan_handle

    def spy(handle: Any, path: Path, *, start: Any = None, cores: int = 1) -> Any:
        read_from.append(start.resume_offset if start is not None else 0)
        return real(handle, path, start=start, cores=cores)

    monkeypatch.setattr(skeleton_cache, "scan_handle", spy)
    warm = Transcript.open(path, skeleton_cache=cache)
    assert read_from == [old_size]
    assert len(warm.scan.lines) == 2010
    assert warm.scan.lines == scan_transcript(path).lines


def test_the_cache_file_is_written_only_when_worth_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(100))
    cache = SkeletonCache(tmp_path / "cache")  # the default: rewrite after 4 MB appended
    Transcript.open(path, skeleton_cache=cache)
    file = cache.file_for(path)
    written = file.stat().st_ino, file.read_bytes()  # (a read touches its mtime)
    with path.open("ab") as handle:
        handle.write(lines(10, 100))
    assert_warm_is_cold(path, cache)
    assert (file.stat().st_ino, file.read_bytes()) == written  # scanned again next time
    with path.open("ab") as handle:
        handle.write(lines(11_000, 110))  # past 4 MB
    assert_warm_is_cold(path, cache)
    assert file.read_bytes() != written[1]
    assert file.stat().st_mode & 0o777 == 0o600
    assert file.parent.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"not msgpack at all",
        b"\x93\x01\x02",  # a short array
        msgspec.msgpack.encode([99, "x"]),  # another version
        msgspec.msgpack.encode({"lines": []}),
    ],
)
def test_a_corrupt_or_foreign_cache_file_is_ignored_and_rebuilt(
    tmp_path: Path, damage: bytes
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(50))
    cache = SkeletonCache(tmp_path / "cache", rewrite_after=0)
    file = cache.file_for(path)
    file.parent.mkdir()
    file.write_bytes(damage)
    assert_warm_is_cold(path, cache)
    assert file.read_bytes() != damage  # rebuilt
    file.write_bytes(file.read_bytes()[:-100])  # torn
    assert_warm_is_cold(path, cache)


def test_a_cache_of_another_file_or_skeleton_shape_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_bytes(lines(30))
    two.write_bytes(lines(40))
    cache = SkeletonCache(tmp_path / "cache", rewrite_after=0)
    Transcript.open(one, skeleton_cache=cache)
    shutil.copyfile(cache.file_for(one), cache.file_for(two))  # as if two hashed the same
    assert_warm_is_cold(two, cache)
    monkeypatch.setattr(skeleton_cache, "_SHAPE", "another")
    assert_warm_is_cold(two, cache)


def test_an_unwritable_cache_folder_is_only_slower(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(20))
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the folder would be")
    assert_warm_is_cold(path, SkeletonCache(blocker))


def test_the_same_file_named_another_way_keeps_its_own_path_in_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(5) + b"{bad\n" + lines(5, 5))
    cache = SkeletonCache(tmp_path / "cache", rewrite_after=0)
    Transcript.open(path, skeleton_cache=cache)
    monkeypatch.chdir(tmp_path)
    warm = assert_warm_is_cold(Path("s.jsonl"), cache)
    assert [p.path for p in warm.scan.problems] == ["s.jsonl"]


def test_a_full_cache_folder_drops_its_least_recently_used_files(tmp_path: Path) -> None:
    cache = SkeletonCache(tmp_path / "cache", max_bytes=1)  # every write makes room
    paths = [tmp_path / f"s{i}.jsonl" for i in range(3)]
    for index, path in enumerate(paths):
        path.write_bytes(lines(50 + index))
        Transcript.open(path, skeleton_cache=cache)
        assert cache.file_for(path).is_file()  # the file just written is kept
    assert [cache.file_for(p).is_file() for p in paths] == [False, False, True]
    (tmp_path / "cache" / "not-ours.txt").write_text("x")
    roomy = SkeletonCache(tmp_path / "cache")  # the default bound: nothing removed
    for path in paths:
        Transcript.open(path, skeleton_cache=roomy)
    assert all(roomy.file_for(p).is_file() for p in paths)
    assert (tmp_path / "cache" / "not-ours.txt").is_file()
    os.utime(roomy.file_for(paths[0]), (1, 1))  # the least recently used
    roomy.max_bytes = sum(roomy.file_for(p).stat().st_size for p in paths) - 1
    with paths[1].open("ab") as handle:
        handle.write(lines(1, 1000))
    roomy.rewrite_after = 0
    Transcript.open(paths[1], skeleton_cache=roomy)
    assert [roomy.file_for(p).is_file() for p in paths] == [False, True, True]


def test_a_cache_file_written_in_the_background_is_the_one_written_here(tmp_path: Path) -> None:
    """With ``background``, a forked child writes the cache file while the reader goes
    on; once :meth:`~SkeletonCache.finish` returns it is there, byte for byte the file a
    write in this process makes, and a warm open reads it."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(500))
    here = SkeletonCache(tmp_path / "here")
    Transcript.open(path, skeleton_cache=here)
    behind = SkeletonCache(tmp_path / "behind", background=True)
    Transcript.open(path, skeleton_cache=behind)
    behind.finish()
    assert behind.file_for(path).read_bytes() == here.file_for(path).read_bytes()
    warm = Transcript.open(path, skeleton_cache=behind)
    assert warm.scan.lines == scan_transcript(path).lines
