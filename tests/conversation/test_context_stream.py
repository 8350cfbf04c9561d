"""The streamed context (``Transcript.iter_context``, what ``context --json`` prints) is
the context built from whole records (``Transcript.context``), message for message and
byte for byte, on every fixture; and it is given out while the path is still being read."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from sessiontree.cli import view as view_module
from sessiontree.cli.main import cli
from sessiontree.cli.output import emit_json
from sessiontree.conversation import transcript as transcript_module
from sessiontree.conversation.transcript import Transcript
from sessiontree.model.context import build_context, context_facts, iter_context
from sessiontree.model.records import ContextFields, FactFields, Record
from sessiontree.storage.jsonl import iter_path_records, read_records
from sessiontree.views import shapes as shapes_module
from sessiontree.views.shapes import iter_context_json
from tests.conftest import WILD, all_scenarios


def _transcripts() -> list[Path]:
    homes = [s / "claude-home" for s in all_scenarios()]
    if WILD.is_dir():
        homes += sorted(WILD.glob("*/claude-home"))
    return sorted(p for home in homes for p in home.glob("projects/**/*.jsonl"))


TRANSCRIPTS = _transcripts()


def _id(path: Path) -> str:
    home = next(p for p in path.parents if p.name == "claude-home")
    return f"{home.parent.parent.name}/{home.parent.name}/{path.stem[:13]}"


def _emitted(value: Any) -> bytes:
    """What :func:`emit_json` prints for ``value``."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with redirect_stdout(out):
        emit_json(value)
    out.flush()
    buffer = out.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue()


def test_there_are_fixtures() -> None:
    assert len(TRANSCRIPTS) > 20


@pytest.mark.parametrize("hold", [0, transcript_module.HOLD_BYTES], ids=["read-twice", "held"])
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=_id)
def test_streamed_context_is_the_context_of_whole_records(
    path: Path, hold: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcript_module, "HOLD_BYTES", hold)
    transcript = Transcript.open(path)
    whole = transcript.context()
    assert list(transcript.iter_context()) == whole
    lines = [transcript.tree.nodes[u] for u in transcript.active_path]
    # the fields each pass decodes give what whole records give
    records = read_records(path, lines)
    facts = context_facts(iter_path_records(path, lines, fields=FactFields))
    assert facts == context_facts(records)
    assert build_context(iter_path_records(path, lines, fields=ContextFields)) == whole
    # the document, piece by piece, is the one emit_json prints
    streamed = b"".join(iter_context_json(transcript.session_id, iter(whole)))
    assert streamed == _emitted({"sessionId": transcript.session_id, "messages": whole})


@pytest.mark.parametrize("path", TRANSCRIPTS[:: max(1, len(TRANSCRIPTS) // 8)], ids=_id)
def test_context_json_prints_the_non_streamed_document(path: Path) -> None:
    transcript = Transcript.open(path)
    result = CliRunner().invoke(cli, ["context", str(path), "--json"], catch_exceptions=False)
    if not transcript.active_path:  # no conversation: refused, as the client refuses it
        assert result.exit_code == 1 and result.stderr == "", result.stderr
        assert json.loads(result.stdout)["code"] == "not-a-session"  # the JSON error
        return
    assert result.exit_code == 0, result.stderr
    want = {"sessionId": transcript.session_id, "messages": transcript.context()}
    assert result.stdout_bytes == _emitted(want)


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "user", "content": "hi"}],
        [
            {"role": "user", "content": [{"type": "text", "text": 'a\nb \u2028 "q" é'}]},
            {"role": "assistant", "content": [{"type": "tool_use", "input": {}, "x": []}]},
            {"role": "user", "content": [{"type": "tool_result", "content": [[], {}, 1.5]}]},
        ],
        # what orjson writes otherwise (an exponent: e+300) or cannot (beyond 64 bits), and
        # a text that only looks like an exponent
        [{"role": "user", "content": [{"type": "x", "n": 1.5e300, "m": -1e-7, "t": "2e+3"}]}],
        [{"role": "user", "content": [{"type": "x", "n": 2**70, "k": -(2**64)}]}],
    ],
)
def test_context_json_pieces_make_emit_jsons_document(messages: list[dict[str, Any]]) -> None:
    pieces = iter_context_json("s-1", iter(messages))
    document = b"".join(pieces)
    assert document == _emitted({"sessionId": "s-1", "messages": messages})
    assert json.loads(document) == {"sessionId": "s-1", "messages": messages}


def _turns(count: int) -> list[Record]:
    """A chain of ``count`` turns: a prompt, a call, its result, an answer."""
    records: list[Record] = []
    for n in range(count):
        call = f"toolu_{n}"
        records += [
            Record({"type": "user", "message": {"role": "user", "content": f"prompt {n}"}}),
            Record(
                {
                    "type": "assistant",
                    "message": {
                        "id": f"msg_{n}a",
                        "model": "claude-opus-4-6",
                        "content": [{"type": "tool_use", "id": call, "name": "Bash", "input": {}}],
                    },
                }
            ),
            Record(
                {
                    "type": "user",
                    "message": {
                        "content": [{"type": "tool_result", "tool_use_id": call, "content": "ok"}]
                    },
                }
            ),
            Record(
                {
                    "type": "assistant",
                    "message": {
                        "id": f"msg_{n}b",
                        "model": "claude-opus-4-6",
                        "content": [{"type": "text", "text": f"done {n}"}],
                    },
                }
            ),
        ]
    return records


def test_messages_are_given_out_while_the_path_is_read() -> None:
    records = _turns(50)
    read = 0

    def reading() -> Iterator[Record]:
        nonlocal read
        for record in records:
            read += 1
            yield record

    stream = iter_context(reading(), context_facts(records))
    first = next(stream)
    assert first == {"role": "user", "content": "prompt 0"}
    assert read <= 8  # a few records ahead, not the whole path
    rest = list(stream)
    assert [first, *rest] == build_context(records)
    assert read == len(records)


def test_a_response_cut_by_a_tool_result_is_held_until_its_last_record() -> None:
    """Parallel calls: one response's blocks around a tool result are one message, so the
    first part is not given out before the last record of its response is read."""

    def reply(call: str) -> Record:
        block = {"type": "tool_use", "id": call, "name": "Bash", "input": {}}
        return Record({"type": "assistant", "message": {"id": "msg_1", "content": [block]}})

    def result(call: str) -> Record:
        block = {"type": "tool_result", "tool_use_id": call, "content": call}
        return Record({"type": "user", "message": {"content": [block]}})

    records = [
        Record({"type": "user", "message": {"content": "go"}}),
        reply("a"),
        result("a"),
        reply("b"),
        result("b"),
    ]
    messages = list(iter_context(iter(records), context_facts(records)))
    assert messages == build_context(records)
    calls = [b["id"] for b in messages[1]["content"] if b["type"] == "tool_use"]
    assert calls == ["a", "b"]


def test_a_line_of_another_shape_is_read_whole(tmp_path: Path) -> None:
    """A content block that is no object does not fit FactFields: that line comes back as
    the whole record, so the facts do not change."""
    path = tmp_path / "s.jsonl"
    rows = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"content": "hi"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m",
                "model": "claude-opus-4-6",
                "content": ["stray", {"type": "text", "text": "x"}],
            },
        },
    ]
    path.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in rows))
    transcript = Transcript.open(path)
    lines = [transcript.tree.nodes[u] for u in transcript.active_path]
    got = list(iter_path_records(path, lines, fields=FactFields))
    assert got[1].raw == rows[1]  # whole
    assert got[0].raw == {"type": "user", "message": {"content": "hi"}}  # only the fields
    assert list(transcript.iter_context()) == transcript.context()


def test_path_records_come_in_the_order_given_however_the_path_jumps(tmp_path: Path) -> None:
    """Lines far apart, backwards, alternating: each read where it is, in the order given
    (read ahead while the path runs forward, line by line once that stops paying)."""
    path = tmp_path / "s.jsonl"
    filler = "x" * 300_000  # a few lines per read block
    rows = [
        {"type": "user", "uuid": f"u{n}", "parentUuid": None, "message": {"content": filler}}
        for n in range(60)
    ]
    path.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in rows))
    transcript = Transcript.open(path)
    lines = transcript.scan.lines
    orders = [
        lines,
        lines[::-1],
        [ln for pair in zip(lines[:30], lines[30:], strict=True) for ln in pair],
        [lines[0], lines[59], lines[1], lines[58], lines[0], lines[0]],
    ]
    for order in orders:
        want = [r.raw for r in read_records(path, order)]
        assert [r.raw for r in iter_path_records(path, order)] == want
        # every field of these rows is one the context reads: all of them kept
        assert [r.raw for r in iter_path_records(path, order, fields=ContextFields)] == want


@pytest.mark.parametrize("child", ["forked", "failed"])
@pytest.mark.parametrize("path", TRANSCRIPTS[:: max(1, len(TRANSCRIPTS) // 12)], ids=_id)
def test_context_json_in_two_parts_prints_the_same_document(
    path: Path, child: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every path built in two parts (the second by a forked child, or here when the
    child fails) prints what one build prints."""
    transcript = Transcript.open(path)
    if not transcript.active_path:
        return
    monkeypatch.setattr(transcript_module, "TWO_PARTS_FROM", 0)
    monkeypatch.setattr(view_module, "usable_cores", lambda: 2)
    real, forked = view_module.fork_output, []

    def fork(produce: Any) -> Any:
        made = real(_fail if child == "failed" else produce)
        forked.append(made is not None)
        return made

    monkeypatch.setattr(view_module, "fork_output", fork)
    result = CliRunner().invoke(cli, ["context", str(path), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert forked == ([True] if transcript.context_in_two() else [])
    want = {"sessionId": transcript.session_id, "messages": transcript.context()}
    assert result.stdout_bytes == _emitted(want)


def _fail() -> Iterator[bytes]:
    yield b"half a message"
    raise RuntimeError("the child fails")


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(content=_JSON)
def test_a_message_is_formatted_as_msgspec_formats_it(content: Any) -> None:
    """Whichever encoder writes a message, the bytes are msgspec's."""
    message = {"role": "user", "content": content}
    want = msgspec.json.format(msgspec.json.encode([[message]]), indent=2)
    assert shapes_module._formatted(message) == want
