"""The listing's end reads decode few lines, and answer as decoding every line would.

The reference below is the definition (sessiontree.catalog.ends' docstring): split each
window into whole lines, decode them all, take the first (head) or last (tail) of each
fact. Generated transcripts put the facts' names where a byte search would be fooled:
nested in other records, inside strings, in damaged lines, across window edges. The
windows are shrunk to a few hundred bytes, so every file grows them and cuts lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.catalog import ends
from sessiontree.model.conversation import find_no_conversation

WINDOW = 256


def _lines(data: bytes, *, drop_first: bool, drop_last: bool) -> list[bytes]:
    lines = data.split(b"\n")
    if drop_first:
        lines = lines[1:]
    if drop_last:
        lines = lines[:-1]
    return [ln for ln in lines if ln.strip()]


def _decoded(lines: list[bytes]) -> list[tuple[ends.EndRecord, bytes]]:
    out = []
    for line in lines:
        try:
            out.append((msgspec.json.decode(line, type=ends.EndRecord), line))
        except (msgspec.DecodeError, RecursionError):
            continue
    return out


def _sizes(size: int) -> Iterator[int]:
    window = WINDOW
    while True:
        yield window
        if window >= 16 * WINDOW or window >= size:
            return
        window *= 4


def reference_head(data: bytes, *, subagent: bool) -> ends.Head:
    for window in _sizes(len(data)):
        part = data[:window]
        records = _decoded(_lines(part, drop_first=False, drop_last=len(part) == window))
        prompt = next((t for r, ln in records if (t := ends.prompt_text(r, ln))), None)
        if prompt is not None or window >= 16 * WINDOW or window >= len(data):
            break
    return ends.Head(
        cwd=next((r.cwd for r, _ in records if r.cwd), None),
        first_prompt=prompt,
        started=next((r.timestamp for r, _ in records if r.timestamp), None),
        has_conversation=find_no_conversation([r for r, _ in records], subagent=subagent) is None,
    )


def reference_tail(data: bytes) -> ends.Tail:
    for window in _sizes(len(data)):
        start = max(0, len(data) - window)
        records = [
            r for r, _ in _decoded(_lines(data[start:], drop_first=start > 0, drop_last=False))
        ]
        turn_ends = [
            r
            for r in records
            if r.type == "system" and r.subtype == "turn_duration" and r.messageCount is not None
        ]
        if turn_ends or window >= 16 * WINDOW or window >= len(data):
            break
    newest = records[::-1]

    def last(field: str) -> Any:
        return next((getattr(r, field) for r in newest if getattr(r, field)), None)

    named = next((r.leafUuid for r in newest if r.type == "last-prompt"), None)
    return ends.Tail(
        message_count=turn_ends[-1].messageCount if turn_ends else None,
        custom_title=last("customTitle"),
        ai_title=last("aiTitle"),
        last_prompt=last("lastPrompt"),
        updated=last("timestamp"),
        names_sidechain=bool(named) and any(r.uuid == named and r.isSidechain for r in records),
    )


_FIELDS = ("customTitle", "aiTitle", "lastPrompt", "timestamp", "leafUuid", "cwd", "uuid")
_word = st.sampled_from(["", "x", "u1", "u2", "/p", "title", '"customTitle"', "turn_duration"])
_padding = st.integers(0, 300).map(lambda n: "p" * n)


@st.composite
def _record(draw: st.DrawFn) -> bytes:
    kind = draw(
        st.sampled_from(
            [
                "user",
                "assistant",
                "system",
                "custom-title",
                "ai-title",
                "last-prompt",
                "summary",
                "file-history-snapshot",
                "damaged",
                "blank",
                "nested",
            ]
        )
    )
    if kind == "damaged":
        return draw(
            st.sampled_from(
                [
                    b'{"type":"custom-title","customTitle":"cut',
                    b"\xff\xfe",
                    b'{"customTitle": 5}',
                    b"[1,2]",
                ]
            )
        )
    if kind == "blank":
        return b"   "
    record: dict[str, Any] = {"type": kind}
    for field in draw(st.lists(st.sampled_from(_FIELDS), max_size=4, unique=True)):
        record[field] = draw(_word)
    if kind == "nested":  # every fact's name, one level down
        record = {
            "type": "assistant",
            "uuid": draw(_word),
            "message": {
                "content": [{"type": "tool_use", "input": dict.fromkeys(_FIELDS, "deep")}],
                "subtype": "turn_duration",
                "messageCount": 3,
            },
        }
    if kind == "user":
        record["message"] = {"role": "user", "content": draw(_word) + draw(_padding)}
        if draw(st.booleans()):
            record["isSidechain"] = True
    if kind == "assistant":
        record["message"] = {
            "role": "assistant",
            "content": [{"type": "text", "text": draw(_padding)}],
        }
    if kind == "system":
        record["subtype"] = draw(st.sampled_from(["turn_duration", "other"]))
        if draw(st.booleans()):
            record["messageCount"] = draw(st.integers(0, 50))
    if kind == "last-prompt" and draw(st.booleans()):
        record["leafUuid"] = draw(st.sampled_from(["u1", "u2", None]))
    if draw(st.booleans()):
        record["isSidechain"] = draw(st.booleans())
    spaced = draw(st.booleans())  # an older writer's spacing
    return json.dumps(record, separators=(", ", ": ") if spaced else (",", ":")).encode()


@st.composite
def _transcript(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(_record(), max_size=40))
    data = b"\n".join(lines)
    return data if draw(st.booleans()) else data + b"\n"  # a torn last write, or not


@pytest.fixture(autouse=True)
def _small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ends, "HEAD_BYTES", WINDOW)
    monkeypatch.setattr(ends, "TAIL_BYTES", WINDOW)
    monkeypatch.setattr(ends, "MAX_END_BYTES", 16 * WINDOW)


def _read(path: Path, data: bytes, *, subagent: bool) -> tuple[ends.Head, ends.Tail]:
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return ends.read_head(fd, len(data), subagent=subagent), ends.read_tail(fd, len(data))
    finally:
        os.close(fd)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_transcript(), subagent=st.booleans())
def test_end_reads_answer_as_decoding_every_line(
    tmp_path: Path, data: bytes, subagent: bool
) -> None:
    head, tail = _read(tmp_path / "t.jsonl", data, subagent=subagent)
    assert head == reference_head(data, subagent=subagent)
    assert tail == reference_tail(data)


def test_a_name_nested_in_a_record_is_not_its_field(tmp_path: Path) -> None:
    titled = {"type": "custom-title", "customTitle": "mine"}
    nested = {"type": "assistant", "message": {"content": [{"input": {"customTitle": "not"}}]}}
    data = b"\n".join(json.dumps(r).encode() for r in (titled, nested)) + b"\n"
    _, tail = _read(tmp_path / "t.jsonl", data, subagent=False)
    assert tail.custom_title == "mine"


def test_the_first_line_of_a_cut_tail_window_is_left_out(tmp_path: Path) -> None:
    old = json.dumps({"type": "custom-title", "customTitle": "x" * WINDOW}).encode()
    data = old + b"\n" + json.dumps({"type": "summary", "summary": "s"}).encode() + b"\n"
    _, tail = _read(tmp_path / "t.jsonl", data, subagent=False)
    assert tail == reference_tail(data)
    # The window grew to the whole file (no turn end), so the title is in it after all.
    assert tail.custom_title == "x" * WINDOW


def test_a_tail_window_that_starts_on_a_line_start_still_leaves_that_line_out(
    tmp_path: Path,
) -> None:
    """As the reference does: a window that does not start the file starts with a line
    it cannot know is whole."""
    early = json.dumps({"type": "custom-title", "customTitle": "early"})
    dropped = json.dumps({"type": "custom-title", "customTitle": "dropped"})
    turn_end = json.dumps({"type": "system", "subtype": "turn_duration", "messageCount": 2})
    fill = WINDOW - len(dropped) - len(turn_end) - len('{"type":"summary","summary":""}') - 3
    pad = json.dumps({"type": "summary", "summary": "s" * fill}, separators=(",", ":"))
    window = f"{dropped}\n{pad}\n{turn_end}\n".encode()
    assert len(window) == WINDOW
    data = f"{early}\n".encode() + window
    _, tail = _read(tmp_path / "t.jsonl", data, subagent=False)
    assert tail == reference_tail(data)
    assert (tail.message_count, tail.custom_title) == (2, None)
