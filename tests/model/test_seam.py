"""A long path's context built in two parts at a seam is the whole path's context, and the
facts read from the skeletons are the facts read from the records: on generated paths
(prompts, slash commands, responses over one or several records, parallel calls answered
in any order or not at all, repeated ids, API errors, attachments, local commands) and on
every fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.context import (
    context_facts,
    iter_context,
    read_for_context,
    skeleton_facts,
)
from sessiontree.model.records import CONTENT_UNREAD, ContextFields, Line
from sessiontree.model.seam import all_seams, find_seam
from sessiontree.storage.jsonl import iter_path_records, read_records
from tests.conversation.test_context_stream import TRANSCRIPTS, _id

MODELS = ("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805")

#: A path, as what happens: ("prompt", text, meta), ("response", message id, blocks,
#: model, one record per block), ("result", call ids, with a text), ("error",),
#: ("attachment", role), ("command",), ("turn-end",). Blocks: "text", "thinking" or a
#: call id.
Event = tuple[Any, ...]


def _write(path: Path, events: list[Event]) -> None:
    """A transcript of ``events``, one chain."""
    records: list[dict[str, Any]] = []

    def add(record: dict[str, Any]) -> None:
        number = len(records)
        parent = records[-1]["uuid"] if records else None
        stamp = f"2026-01-01T00:{number // 60 % 60:02d}:{number % 60:02d}.000Z"
        records.append({"uuid": f"u{number}", "parentUuid": parent, "timestamp": stamp, **record})

    for kind, *args in events:
        if kind == "prompt":
            text, meta = args
            user = {"role": "user", "content": text}
            add({"type": "user", "message": user, **({"isMeta": True} if meta else {})})
        elif kind == "response":
            message_id, blocks, model, per_block = args
            made = [_block(b) for b in blocks]
            for part in [[b] for b in made] if per_block else [made]:
                message = {"id": message_id, "role": "assistant", "model": model, "content": part}
                add({"type": "assistant", "message": message})
        elif kind == "result":
            calls, with_text = args
            content = [{"type": "tool_result", "tool_use_id": c, "content": "ok"} for c in calls]
            if with_text:
                content.append({"type": "text", "text": "and a note"})
            add(
                {
                    "type": "user",
                    "message": {"role": "user", "content": content},
                    "toolUseResult": "ok",
                }
            )
        elif kind == "error":
            content = [{"type": "text", "text": "API Error"}]
            message = {"id": "err", "role": "assistant", "model": "<synthetic>", "content": content}
            add({"type": "assistant", "isApiErrorMessage": True, "message": message})
        elif kind == "attachment":
            rendered = [{"content": "<system-reminder>\nnote\n</system-reminder>"}]
            add(
                {
                    "type": "attachment",
                    "attachment": {"type": "x"},
                    "rendered": rendered,
                    "renderedRole": args[0],
                }
            )
        elif kind == "command":
            content = "<local-command-stdout>done</local-command-stdout>"
            add({"type": "system", "subtype": "local_command", "content": content})
        else:
            add({"type": "system", "subtype": "turn_duration", "durationMs": 1})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _block(name: str) -> dict[str, Any]:
    if name == "text":
        return {"type": "text", "text": "an answer"}
    if name == "thinking":
        return {"type": "thinking", "thinking": "hm", "signature": "s"}
    return {"type": "tool_use", "id": name, "name": "Read", "input": {}}


@st.composite
def events(draw: st.DrawFn) -> list[Event]:
    """Paths whose ids collide often (small pools) or seldom (big ones)."""
    ids = draw(st.integers(1, 30))
    message_ids = st.integers(0, ids).map(lambda n: f"msg_{n}")
    calls = st.integers(0, ids).map(lambda n: f"call_{n}")
    block = st.one_of(st.sampled_from(["text", "text", "thinking"]), calls)
    texts = st.sampled_from(
        ["a prompt", "", "/clear", "<command-name>/cost</command-name>", "<local-command-caveat>x"]
    )
    event = st.one_of(
        st.tuples(st.just("prompt"), texts, st.booleans()),
        st.tuples(
            st.just("response"),
            message_ids,
            st.lists(block, min_size=1, max_size=3),
            st.sampled_from(MODELS),
            st.booleans(),
        ),
        st.tuples(st.just("result"), st.lists(calls, min_size=1, max_size=3), st.booleans()),
        st.tuples(st.just("error")),
        st.tuples(st.just("attachment"), st.sampled_from(["user", "system"])),
        st.tuples(st.just("command")),
        st.tuples(st.just("turn-end")),
    )
    counter = iter(range(10**6))

    @st.composite
    def turn(draw: st.DrawFn) -> list[Event]:
        """A turn as clients write them: a prompt, calls and their results, an answer."""
        number = next(counter)
        made: list[Event] = [("prompt", draw(texts), False)]
        for step in range(draw(st.integers(0, 2))):
            made_calls = [f"call_{number}_{step}_{n}" for n in range(draw(st.integers(1, 3)))]
            blocks = draw(st.sampled_from([[], ["text"], ["thinking"]])) + made_calls
            per_block = draw(st.booleans())
            made.append(
                (
                    "response",
                    f"msg_{number}_{step}",
                    blocks,
                    draw(st.sampled_from(MODELS)),
                    per_block,
                )
            )
            made.append(("result", draw(st.permutations(made_calls)), False))
        made.append(("response", f"msg_{number}", ["text"], draw(st.sampled_from(MODELS)), True))
        return [*made, ("turn-end",)]

    chunks = st.one_of(turn(), turn(), event.map(lambda e: [e]))
    return [e for chunk in draw(st.lists(chunks, min_size=2, max_size=14)) for e in chunk]


def _check(path: Path) -> int:
    """Check the facts and every seam of the transcript at ``path``; how many seams."""
    transcript = Transcript.open(path)
    lines = [transcript.tree.nodes[u] for u in transcript.active_path]
    records = read_records(path, lines)
    facts = context_facts(records)
    from_skeletons = skeleton_facts([ln.skeleton for ln in lines], transcript._last_model(lines))
    assert from_skeletons in (None, facts)
    whole = transcript.context()
    for_context = [ln for ln in lines if read_for_context(ln.skeleton)]
    seams = all_seams(for_context)
    for seam in seams:
        assert _in_two(path, for_context, seam, facts) == whole, f"seam at {seam}"
    assert find_seam(for_context) == _nearest_the_middle(for_context, seams)
    return len(seams)


def _in_two(path: Path, lines: list[Line], seam: int, facts: Any) -> list[Any]:
    def read(part: list[Line]) -> Any:
        return iter_path_records(path, part, fields=ContextFields)

    first = list(iter_context(read(lines[:seam]), facts, to_end=False))
    before = next(read(lines[seam - 1 : seam]))
    return first + list(iter_context(read(lines[seam:]), facts, before=before))


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path_events=events())
def test_a_path_built_in_two_at_any_seam_is_the_whole_paths_context(
    tmp_path: Path, path_events: list[Event]
) -> None:
    path = tmp_path / "5eed0000-0000-4000-8000-000000000000.jsonl"
    _write(path, path_events)
    _check(path)


def _turn(number: int, *blocks: str) -> list[Event]:
    return [
        ("prompt", f"prompt {number}", False),
        ("response", f"msg_{number}", list(blocks) or ["text"], MODELS[0], True),
        ("turn-end",),
    ]


def test_a_plain_conversation_has_a_seam_at_each_prompt_after_the_first(tmp_path: Path) -> None:
    path = tmp_path / "5eed0000-0000-4000-8000-000000000001.jsonl"
    _write(path, [e for n in range(5) for e in _turn(n)])
    assert _check(path) == 4


P = ("prompt", "the prompt", False)

#: Paths with a prompt (P) where building in two would go wrong, and why.
NO_SEAM = {
    "a call id seen on both sides": [
        *_turn(1, "call_x"),
        ("result", ["call_x"], False),
        ("response", "msg_1b", ["text"], MODELS[0], True),
        P,
        ("response", "msg_2", ["call_x"], MODELS[0], True),
        ("result", ["call_x"], False),
        ("response", "msg_2b", ["text"], MODELS[0], True),
    ],
    "a result right after an empty prompt": [
        *_turn(1, "call_x"),
        ("result", ["call_x"], False),
        ("response", "msg_1b", ["text"], MODELS[0], True),
        ("prompt", "", False),
        ("result", ["call_x"], False),
        ("response", "msg_2", ["text"], MODELS[0], True),
    ],
    "a call answered after the prompt": [
        *_turn(1, "call_x"),
        P,
        ("response", "msg_2", ["text"], MODELS[0], True),
        ("result", ["call_x"], False),
        ("response", "msg_3", ["text"], MODELS[0], True),
    ],
    "a response that goes on after its call's result": [
        ("prompt", "first", False),
        ("response", "msg_1", ["call_x"], MODELS[0], True),
        ("result", ["call_x"], False),
        ("response", "msg_1", ["text"], MODELS[0], True),
        P,
        ("response", "msg_2", ["text"], MODELS[0], True),
    ],
    "a result inside the last response": [
        ("prompt", "first", False),
        ("response", "msg_1", ["text"], MODELS[0], True),
        ("result", ["call_x"], False),
        ("response", "msg_1", ["text"], MODELS[0], True),
        P,
        ("response", "msg_2", ["text"], MODELS[0], True),
    ],
    "a thought of another model before the prompt": [
        ("prompt", "first", False),
        ("response", "msg_1", ["call_x"], MODELS[1], True),
        ("result", ["call_x"], False),
        ("response", "msg_1b", ["thinking"], MODELS[1], True),
        P,
        ("response", "msg_2", ["text"], MODELS[0], True),
    ],
}


@pytest.mark.parametrize("name", NO_SEAM)
def test_no_seam_where_two_parts_would_differ(tmp_path: Path, name: str) -> None:
    """Each check of :func:`all_seams` is needed: here, two parts cut at P would not be
    the whole path's context, and P is not a seam."""
    path = tmp_path / "5eed0000-0000-4000-8000-000000000002.jsonl"
    _write(path, NO_SEAM[name])
    transcript = Transcript.open(path)
    lines = [transcript.tree.nodes[u] for u in transcript.active_path]
    for_context = [ln for ln in lines if read_for_context(ln.skeleton)]
    at = next(
        k
        for k, ln in enumerate(for_context)
        if transcript.record(ln.skeleton.uuid or "")
        and transcript.record(ln.skeleton.uuid or "").text() in ("the prompt", "")  # type: ignore[union-attr]
        and ln.skeleton is not None
        and ln.skeleton.type == "user"
        and k > 0
    )
    facts = context_facts(read_records(path, lines))
    assert _in_two(path, for_context, at, facts) != transcript.context()
    assert at not in all_seams(for_context)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=_id)
def test_every_fixture_builds_in_two_at_every_seam(path: Path) -> None:
    _check(path)


def test_content_the_scan_cannot_read_is_read_from_the_record(tmp_path: Path) -> None:
    """A prompt whose text is not UTF-8 keeps its line (the reader repairs the text), but
    its skeleton does not know its blocks: the facts come from the records, and the path
    has no seam."""
    path = tmp_path / "5eed0000-0000-4000-8000-000000000003.jsonl"
    _write(path, [e for n in range(3) for e in _turn(n, "call_x" if n == 0 else "text")])
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-3] = lines[-3].replace(b'"prompt 2"', b'"prompt \xff"')
    path.write_bytes(b"".join(lines))
    transcript = Transcript.open(path)
    assert not transcript.scan.problems
    skeletons = [transcript.tree.nodes[u].skeleton for u in transcript.active_path]
    unread = [s for s in skeletons if s and s.message and s.message.content == CONTENT_UNREAD]
    assert len(unread) == 1
    assert skeleton_facts(skeletons, MODELS[0]) is None
    assert all_seams([transcript.tree.nodes[u] for u in transcript.active_path]) == []
    assert list(transcript.iter_context()) == transcript.context()


def test_blocks_of_an_odd_shape_are_left_out_not_reported(tmp_path: Path) -> None:
    """A content list with a string or a number among its blocks: the blocks that are
    objects are the skeleton's, as a record's reader reads them, and no problem."""
    path = tmp_path / "5eed0000-0000-4000-8000-000000000004.jsonl"
    _write(path, [*_turn(0, "call_x"), ("result", ["call_x"], False)])
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b'"content": [{', b'"content": ["odd", 3, {')
    path.write_bytes(b"".join(lines))
    transcript = Transcript.open(path)
    assert not transcript.scan.problems
    last = transcript.tree.nodes[transcript.active_path[-1]].skeleton
    assert last is not None and last.message is not None
    assert isinstance(last.message.content, list)
    assert [(b.type, b.tool_use_id) for b in last.message.content] == [("tool_result", "call_x")]
    _check(path)


def _nearest_the_middle(lines: list[Line], seams: list[int]) -> int | None:
    """The seam whose start is nearest the middle of the lines' bytes (the first of
    equals), by its definition: every seam measured."""
    if not seams:
        return None
    starts = [sum(line.length for line in lines[:k]) for k in seams]
    total = sum(line.length for line in lines)
    return min(zip(seams, starts, strict=True), key=lambda pair: abs(2 * pair[1] - total))[0]
