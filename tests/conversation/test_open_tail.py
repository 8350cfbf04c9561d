"""A tail read (``Transcript.open_tail``) resumes exactly as the whole file does.

Exactness first: on every fixture cut anywhere and grown back, on random transcripts
(every kind of damage, compactions whose preserved records are anywhere or nowhere) and
on realistic ones (compacted as the client compacts, rewound across a compaction, grown
between opens, appended to after the cache was written), whenever the tail answers, its
leaf, active path and context are the whole file's. Then that it does answer where it
should (a compacted session grown since), and what it reads: not the cached head.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.conversation.transcript import Transcript
from sessiontree.storage import skeleton_cache
from sessiontree.storage.jsonl import format_line
from sessiontree.storage.skeleton_cache import SkeletonCache
from sessiontree.views.shapes import iter_context_json, show_json
from tests.model.test_tree_properties import TIMES, Record, record_sets
from tests.storage.test_skeleton_cache import FIXTURE_FILES, change_under

#: Every fixture transcript with a compact boundary, of every client's shape: 2.1.x's
#: (``preservedSegment``, ``preservedMessages``) and 1.0.x's and 2.0.x's (neither).
COMPACTED = [path for path in FIXTURE_FILES if b'"compact_boundary"' in path.read_bytes()]


def resumed(transcript: Transcript) -> dict[str, Any]:
    pieces = iter_context_json(transcript.session_id, transcript.iter_context())
    return {
        "leaf": transcript.leaf,
        "path": transcript.active_path,
        "context": b"".join(bytes(piece) for piece in pieces),  # ``context --json``, exactly
        "show": show_json(transcript),  # (``show`` reads the active path as a resume does)
    }


def tail_is_whole(path: Path, cache: SkeletonCache) -> bool:
    """Whether the cached tail answered; when it did, that it answered as the whole file."""
    tail = Transcript.open_tail(path, cache)
    if tail is None:
        return False
    assert not tail.whole
    assert resumed(tail) == resumed(Transcript.open(path))
    return True


def resumes_as_whole(path: Path, cache: SkeletonCache) -> bool:
    """``open_to_resume`` (the CLI's ``context``) answers as the whole file; whether it
    answered from a tail."""
    transcript = Transcript.open_to_resume(path, cache)
    assert resumed(transcript) == resumed(Transcript.open(path))
    return not transcript.whole


def grow(path: Path, payload: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(payload)


@pytest.mark.parametrize("source", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_fixture_cut_anywhere_then_grown_resumes_from_its_tail_as_whole(
    source: Path, tmp_path: Path
) -> None:
    data = source.read_bytes()
    path = tmp_path / source.name
    cuts = sorted({0, len(data) // 3, len(data) // 2 + 7, len(data) - 1, len(data)})
    cache = SkeletonCache(tmp_path / "cache", rewrite_after=0)
    for cut in cuts:  # each a prefix of the next: the file only grows
        path.write_bytes(data[:cut])
        tail_is_whole(path, cache)
        Transcript.open(path, skeleton_cache=cache)  # the whole read keeps the tail
    tail_is_whole(path, cache)
    fresh = SkeletonCache(tmp_path / "fresh")
    for cut in cuts:  # to resume only: cold, then from the tail it cached
        path.write_bytes(data[:cut])
        resumes_as_whole(path, fresh)


@st.composite
def realistic(draw: st.DrawFn) -> list[Record]:
    """A session as the client writes one: turns and parallel tool calls, compacted now
    and then with the last records preserved (``preservedSegment`` and
    ``preservedMessages``, as 2.1.328 writes them), rewound now and then to any earlier
    record (across a compaction too), with sidechains and ``last-prompt`` bookmarks; and
    now and then damaged (a uuid written twice, a missing parent, a parent written later)."""
    records: list[Record] = []
    made: list[str] = []
    clock = iter(range(10**6))
    # Which clients wrote it: 2.1.x (boundaries with a preserved segment, or without),
    # or 1.0.x-2.0.x only (no boundary preserves anything).
    shapes = draw(st.sampled_from([["both", "segment", "none"], ["none"]]), label="clients")

    def record(kind: str, uuid: str, parent: str | None, **more: Any) -> Record:
        second = next(clock)
        stamp = f"2026-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"
        if draw(st.integers(0, 30)) == 0:
            stamp = draw(st.sampled_from([t for t in TIMES if t]))  # clocks go wrong
        out: Record = {"type": kind, "uuid": uuid, "parentUuid": parent, "timestamp": stamp}
        out.update(more)
        records.append(out)
        if not more.get("isSidechain"):
            made.append(uuid)
        return out

    for turn in range(draw(st.integers(1, 24))):
        op = draw(
            st.sampled_from(
                ["turn"] * 5 + ["compact"] * 3 + ["rewind", "side", "bookmark", "damage"]
            )
        )
        last = made[-1] if made else None
        if op == "compact" and len(made) >= 2:
            boundary = f"c{turn}"
            summary = f"s{turn}"
            head, tail = made[-2], made[-1]
            listed = {"anchorUuid": summary, "uuids": [head, tail], "allUuids": [head, tail]}
            segment = {"headUuid": head, "anchorUuid": summary, "tailUuid": tail}
            shape = draw(st.sampled_from(shapes))
            metadata: Record = {"trigger": "auto"}
            if shape in ("both", "segment"):
                metadata["preservedSegment"] = segment
            if shape == "both":
                metadata["preservedMessages"] = listed
            record(
                "system",
                boundary,
                None,
                subtype="compact_boundary",
                logicalParentUuid=last,
                compactMetadata=metadata,
            )
            record("user", summary, boundary, isCompactSummary=True, message={"role": "user"})
            continue
        if op == "rewind" and made:
            last = draw(st.sampled_from(made))
        if op == "side" and made:
            record("user", f"x{turn}", draw(st.sampled_from(made)), isSidechain=True)
            continue
        if op == "damage" and made:  # a uuid written again, a missing or later parent
            uuid = draw(st.sampled_from([*made, f"ghost{turn}"]))
            parent = draw(st.sampled_from([*made, None, "gone", f"p{turn + 1}"]))
            record("user", uuid, parent, message={"role": "user", "content": "x"})
            continue
        if op == "bookmark" and made:
            leaf = draw(st.sampled_from([*made, "ghost"]))
            records.append({"type": "last-prompt", "leafUuid": leaf, "lastPrompt": "p"})
            continue
        prompt = f"p{turn}"
        record("user", prompt, last, message={"role": "user", "content": f"prompt {turn}"})
        parent = prompt
        for step in range(draw(st.integers(0, 2))):
            blocks = draw(st.integers(1, 3))
            calls = [f"a{turn}.{step}.{b}" for b in range(blocks)]
            message = {"id": f"m{turn}.{step}", "role": "assistant"}
            above = parent
            for call in calls:
                record("assistant", call, above, message=message)
                above = call
            for call in calls:  # each result on its own call: the parallel-call shape
                record(
                    "user", f"{call}r", call, toolUseResult={"ok": 1}, sourceToolAssistantUUID=call
                )
            parent = f"{calls[-1]}r"
        record("assistant", f"e{turn}", parent, message={"id": f"m{turn}", "role": "assistant"})
        record("system", f"d{turn}", f"e{turn}", subtype="turn_duration")
    return records


def replay_in_steps(records: list[Record], data: st.DataObject) -> int:
    """Write ``records`` in random batches, reading between them as the CLI does: to
    resume (``context``, ``show``) or whole (``tree``, ``show --all-branches``: the cache
    keeps the head lines); how many reads the tail answered."""
    folder = Path(tempfile.mkdtemp())
    try:
        path = folder / "s.jsonl"
        path.touch()
        # How many appended bytes make the cache file be written again: at 0 every read
        # after a growth is a whole one; at None (4 MB) only the first.
        every = data.draw(st.sampled_from([0, 300, 1500, None]), label="rewrite after")
        cache = SkeletonCache(folder / "cache", rewrite_after=every)
        answered = 0
        position = 0
        while position < len(records):
            size = data.draw(st.integers(1, 8), label="batch")
            grow(path, b"".join(format_line(r) for r in records[position : position + size]))
            position += size
            if data.draw(st.booleans(), label="to resume"):
                answered += resumes_as_whole(path, cache)
            else:
                Transcript.open(path, skeleton_cache=cache)
        return answered
    finally:
        shutil.rmtree(folder, ignore_errors=True)


SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(record_sets(), st.data())
def test_random_transcripts_resume_from_their_tail_as_whole(
    records: list[Record], data: st.DataObject
) -> None:
    replay_in_steps(records, data)


@SETTINGS
@given(realistic(), st.data())
def test_realistic_sessions_resume_from_their_tail_as_whole(
    records: list[Record], data: st.DataObject
) -> None:
    replay_in_steps(records, data)


#: The compact boundaries' shapes: 2.1.x's (a preserved segment) and 2.0.x's (none).
CLIENTS = ["2.1", "2.0"]


def compacted_session(turns: int, client: str = "2.1") -> list[Record]:
    """A session compacted every 10 turns as the client does, one tool call a turn:
    ``client`` 2.1 preserves the last two records, 2.0 nothing."""
    records: list[Record] = []
    last: str | None = None
    for turn in range(turns):
        stamp = f"2026-01-01T00:{turn // 60:02d}:{turn % 60:02d}.000Z"
        if turn and turn % 10 == 0:
            head, tail = records[-2]["uuid"], records[-1]["uuid"]
            metadata: Record = {"trigger": "auto", "preTokens": 150000}
            if client == "2.1":
                metadata["preservedSegment"] = {
                    "headUuid": head,
                    "anchorUuid": f"s{turn}",
                    "tailUuid": tail,
                }
            records.append(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": f"c{turn}",
                    "parentUuid": None,
                    "logicalParentUuid": last,
                    "timestamp": stamp,
                    "compactMetadata": metadata,
                }
            )
            records.append(
                {
                    "type": "user",
                    "uuid": f"s{turn}",
                    "parentUuid": f"c{turn}",
                    "isCompactSummary": True,
                    "timestamp": stamp,
                    "message": {"role": "user", "content": "summary"},
                }
            )
            last = f"s{turn}"
        records.append(
            {
                "type": "user",
                "uuid": f"p{turn}",
                "parentUuid": last,
                "timestamp": stamp,
                "message": {"role": "user", "content": f"prompt {turn}"},
            }
        )
        records.append(
            {
                "type": "assistant",
                "uuid": f"a{turn}",
                "parentUuid": f"p{turn}",
                "timestamp": stamp,
                "message": {"id": f"m{turn}", "role": "assistant", "content": []},
            }
        )
        last = f"a{turn}"
    return records


@pytest.mark.parametrize("client", CLIENTS)
def test_a_compacted_session_grown_since_resumes_from_its_tail(client: str, tmp_path: Path) -> None:
    records = compacted_session(95, client)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(format_line(r) for r in records[:150]))
    cache = SkeletonCache(tmp_path / "cache")
    Transcript.open(path, skeleton_cache=cache)
    grow(path, b"".join(format_line(r) for r in records[150:]))
    assert tail_is_whole(path, cache)
    tail = Transcript.open_tail(path, cache)
    assert tail is not None
    # The tail of the cached read: its last boundary's preserved records (2.1's two),
    # the boundary, and every line after it, the appended ones included.
    kept = 2 if client == "2.1" else 0
    assert tail.scan.lines[kept].skeleton is not None
    assert tail.scan.lines[kept].skeleton.uuid == "c60"
    boundary = next(i for i, r in enumerate(records) if r["uuid"] == "c60")
    assert len(tail.scan.lines) == kept + len(records) - boundary


@pytest.mark.parametrize("client", CLIENTS)
def test_a_rewind_across_the_compaction_is_answered_by_the_whole_file(
    client: str, tmp_path: Path
) -> None:
    records = compacted_session(25, client)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(format_line(r) for r in records))
    cache = SkeletonCache(tmp_path / "cache")
    Transcript.open(path, skeleton_cache=cache)
    rewound = {
        "type": "user",
        "uuid": "again",
        "parentUuid": "a3",
        "timestamp": "2026-01-02T00:00:00.000Z",
        "message": {"role": "user", "content": "again"},
    }
    grow(path, format_line(rewound))
    assert Transcript.open_tail(path, cache) is None  # it hangs on a summarized record
    assert Transcript.open(path, skeleton_cache=cache).leaf == "again"


def test_there_are_compacted_sessions_of_every_boundary_shape() -> None:
    versions = {path.parts[-6].removeprefix("claude-code-") for path in COMPACTED}
    assert {"1.0.128", "2.0.76", "2.1.200", "2.1.328"} <= versions


#: Compacted scenarios the whole file answers, and why: "summarize from here" keeps the
#: records before the point and summarizes those after it, which hang on the kept ones
#: (a head record naming a tail record as its parent).
WHOLE = {"07-summarize-from-here"}


@pytest.mark.parametrize("source", COMPACTED, ids=lambda p: f"{p.parts[-6]}/{p.parts[-5]}")
def test_the_real_clients_compacted_sessions_resume_from_their_tail(
    source: Path, tmp_path: Path
) -> None:
    answers = source.parts[-5] not in WHOLE
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    cold = SkeletonCache(tmp_path / "cold")
    assert resumes_as_whole(path, cold) == answers, "read tail first"
    assert resumes_as_whole(path, cold) == answers, "from the tail it cached"
    cache = SkeletonCache(tmp_path / "cache")
    Transcript.open(path, skeleton_cache=cache)
    assert tail_is_whole(path, cache) == answers, "from the tail a whole read cached"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_tail_read_does_not_decode_the_cached_head(
    client: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = compacted_session(95, client)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(format_line(r) for r in records))
    cache = SkeletonCache(tmp_path / "cache")
    Transcript.open(path, skeleton_cache=cache)

    class Refuse:
        def decode(self, data: Any) -> Any:
            raise AssertionError("the head was decoded")

    monkeypatch.setattr(skeleton_cache, "_rest_decoder", Refuse())
    assert Transcript.open_tail(path, cache) is not None


@pytest.mark.parametrize("client", CLIENTS)
def test_a_cold_resume_reads_the_tail_and_caches_only_it(client: str, tmp_path: Path) -> None:
    records = compacted_session(95, client)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(format_line(r) for r in records))
    cache = SkeletonCache(tmp_path / "cache")
    assert resumes_as_whole(path, cache)  # cold: the whole file scanned, its tail used
    small = cache.file_for(path).stat().st_size
    assert resumes_as_whole(path, cache)  # warm: from the cached tail
    Transcript.open(path, skeleton_cache=cache)  # a whole read caches the head lines too
    assert cache.file_for(path).stat().st_size > 2 * small
    assert resumes_as_whole(path, cache)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=realistic(), second=realistic(), data=st.data())
def test_a_resume_after_truncation_or_rewrite_is_the_whole_files(
    first: list[Record], second: list[Record], data: st.DataObject
) -> None:
    folder = Path(tempfile.mkdtemp())
    try:
        path = folder / "s.jsonl"
        before = b"".join(format_line(r) for r in first)
        path.write_bytes(before)
        cache = SkeletonCache(folder / "cache")
        resumes_as_whole(path, cache)  # cold: caches the tail, if it stands alone
        Transcript.open(path, skeleton_cache=cache)  # or the whole skeleton
        change_under(path, before, b"".join(format_line(r) for r in second), data)
        if path.stat().st_size:
            resumes_as_whole(path, cache)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
