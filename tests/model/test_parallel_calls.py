"""Parallel tool calls: one response's calls in separate records, each result hanging on
its own call, and the conversation going on from any one of them (model/resume.py puts
the response back together); and the client's last repair of what it sends
(``pair_tool_results``)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.tool_calls import (
    MISSING_RESULT,
    NO_CONTENT,
    ORPHAN_RESULT_REMOVED,
    pair_tool_results,
)
from sessiontree.storage.jsonl import append_records

Message = dict[str, Any]


def use(call: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": "Read", "input": {}}


def result(call: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call, "content": text}


# -- pair_tool_results ---------------------------------------------------------------------


def test_a_call_answered_later_gets_the_synthetic_error_and_the_late_result_is_dropped() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("a")]},
        {"role": "assistant", "content": [use("b")]},
        {"role": "user", "content": [result("b"), result("a")]},
    ]
    assert pair_tool_results(messages) == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("a")]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "a",
                    "content": MISSING_RESULT,
                    "is_error": True,
                }
            ],
        },
        {"role": "assistant", "content": [use("b")]},
        {"role": "user", "content": [result("b")]},
    ]


def test_a_user_message_left_empty_becomes_no_content() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "hm"}]},
        {"role": "user", "content": [result("x")]},
        {"role": "assistant", "content": [{"type": "text", "text": "on"}]},
    ]
    assert pair_tool_results(messages)[2] == {"role": "user", "content": NO_CONTENT}


def test_results_before_any_call_are_dropped_and_a_repeated_call_is_dropped() -> None:
    messages: list[Message] = [
        {"role": "user", "content": [result("old")]},
        {"role": "assistant", "content": [use("a"), {"type": "text", "text": "t"}]},
        {"role": "user", "content": [result("a")]},
        {"role": "assistant", "content": [use("a")]},
    ]
    repaired = pair_tool_results(messages)
    assert repaired[0]["content"] == [{"type": "text", "text": ORPHAN_RESULT_REMOVED}]
    assert repaired[3]["content"] == [{"type": "text", "text": "[Tool use interrupted]"}]


def test_a_paired_conversation_is_left_as_it_is() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("a"), use("b")]},
        {"role": "user", "content": [result("b"), result("a"), {"type": "text", "text": "more"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    assert pair_tool_results(json.loads(json.dumps(messages))) == messages


# -- any shape the client writes -----------------------------------------------------------

STAMP = "2026-12-01T00:00:{:02d}.{:03d}Z"


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(
        st.tuples(st.integers(1, 5), st.randoms(use_true_random=False)), min_size=1, max_size=4
    ),
    rewind=st.booleans(),
)
def test_parallel_calls_are_sent_whole_and_paired_whichever_result_the_chain_goes_on_from(
    tmp_path_factory: Any, turns: list[tuple[int, random.Random]], rewind: bool
) -> None:
    """Each turn: a prompt, a response of k tool calls (one record per block, chained),
    the k results in any order, each on its own call, then a reply hung on any one of the
    results. Optionally a rewind: a last prompt hung on the first turn's prompt's parent.
    Every context pairs each call with its result in the next message, sends each
    response as one assistant message with all its calls, and each result once."""
    path = Path(tmp_path_factory.mktemp("par")) / "s.jsonl"
    records: list[dict[str, Any]] = []
    tick = iter(range(10_000))

    def add(kind: str, parent: str | None, content: Any, **extra: Any) -> str:
        n = next(tick)
        uuid = f"00000000-0000-4000-8000-{n:012d}"
        role = "assistant" if kind == "assistant" else "user"
        records.append(
            {
                "type": kind,
                "uuid": uuid,
                "parentUuid": parent,
                "sessionId": "s",
                "timestamp": STAMP.format(n // 1000, n % 1000),
                "message": {"role": role, "content": content, **extra.pop("message", {})},
                **extra,
            }
        )
        return uuid

    tip: str | None = None
    expected_calls: list[list[str]] = []
    for index, (k, order) in enumerate(turns):
        tip = add("user", tip, f"prompt {index}")
        calls = [f"toolu_{index}_{i}" for i in range(k)]
        blocks = []
        for call in calls:
            tip = add("assistant", tip, [use(call)], message={"id": f"msg_{index}"})
            blocks.append(tip)
        finished = list(range(k))
        order.shuffle(finished)
        answers = [
            add(
                "user",
                blocks[i],
                [result(calls[i])],
                toolUseResult="ok",
                sourceToolAssistantUUID=blocks[i],
            )
            for i in finished
        ]
        tip = add("assistant", order.choice(answers), [{"type": "text", "text": f"done {index}"}])
        tip = add("assistant", tip, [{"type": "text", "text": "."}], message={"id": f"end_{index}"})
        expected_calls.append(calls)
    if rewind and len(turns) > 1:
        add("user", None, "again from the start")
        expected_calls = []
    append_records(path, records)
    context = Transcript.open(path).context()
    sent_calls = [
        [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
        for m in context
        if m["role"] == "assistant" and isinstance(m["content"], list)
    ]
    assert [c for c in sent_calls if c] == expected_calls
    for index, message in enumerate(context):
        if message["role"] != "assistant":
            continue
        calls = {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
        if calls:
            answers = [b["tool_use_id"] for b in context[index + 1]["content"]]
            assert sorted(answers) == sorted(calls)
            assert MISSING_RESULT not in json.dumps(context[index + 1])


def test_the_resume_model_is_the_last_responses_unless_the_client_retired_it() -> None:
    from sessiontree.model.context import resume_model
    from sessiontree.model.records import Record

    def reply(model: str) -> Record:
        return Record({"type": "assistant", "message": {"model": model, "content": []}})

    assert resume_model([reply("claude-opus-4-6"), reply("<synthetic>")]) == "claude-opus-4-6"
    assert resume_model([reply("claude-opus-4-6"), reply("claude-sonnet-4-20250514")]) is None
    assert resume_model([reply("claude-opus-4-1-20250805")]) is None
    assert resume_model([]) is None


def test_the_session_api_writes_parallel_calls_in_the_clients_shape(tmp_path: Path) -> None:
    """As client 2.1.328 writes them (``claude-code-2.1.328-par/FINDINGS.md`` §1): one
    record per block, chained in block order with one ``message.id``; each result on its
    own call's record, which its ``sourceToolAssistantUUID`` names too, in the order the
    calls finished; what comes next hangs on the result written last."""
    from sessiontree.session.session import Session
    from sessiontree.storage.layout import Layout

    session = Session.create(Layout(tmp_path / "root"), str(tmp_path / "work"))
    session.append_prompt("read three files at once")
    blocks = session.append_response(
        [{"type": "text", "text": "Doing 3 things at once."}, use("a"), use("b"), use("c")]
    )
    answers = [session.append_tool_result(call, f"{call}!") for call in ("c", "a", "b")]
    (reply,) = session.append_response([{"type": "text", "text": "Done."}])
    records = {
        r["uuid"]: r for r in map(json.loads, session.path.read_text().splitlines()) if "uuid" in r
    }
    assert [records[b]["parentUuid"] for b in blocks[1:]] == blocks[:-1]
    assert len({records[b]["message"]["id"] for b in blocks}) == 1
    call_record = {"a": blocks[1], "b": blocks[2], "c": blocks[3]}
    for call, answer in zip(("c", "a", "b"), answers, strict=True):
        assert records[answer]["parentUuid"] == call_record[call]
        assert records[answer]["sourceToolAssistantUUID"] == call_record[call]
    assert records[reply]["parentUuid"] == answers[-1]
    context = session.transcript().context()
    assert [b.get("id") for b in context[1]["content"]][1:] == ["a", "b", "c"]
    assert [b["tool_use_id"] for b in context[2]["content"]] == ["c", "a", "b"]


def test_unanswered_calls_are_answered_as_interrupted_at_the_end_and_left_out_before(
    tmp_path: Path,
) -> None:
    from sessiontree.model.context import INTERRUPTED_RESULT
    from sessiontree.session.session import Session
    from sessiontree.storage.layout import Layout

    session = Session.create(Layout(tmp_path / "root"), str(tmp_path / "work"))
    session.append_prompt("two at once")
    session.append_response([use("a"), use("b")])
    session.append_tool_result("b", "b!")
    ended = session.transcript().context()
    assert ended[-2]["content"] == [
        {"tool_use_id": "b", "type": "tool_result", "content": "b!"},
        {
            "type": "tool_result",
            "content": INTERRUPTED_RESULT,
            "is_error": True,
            "tool_use_id": "a",
        },
    ]
    assert ended[-1]["content"] == [{"type": "text", "text": "No response requested."}]
    session = Session.open(session.path)
    session.append_prompt("go on")
    went_on = session.transcript().context()
    assert [b["id"] for b in went_on[1]["content"]] == ["b"]
    assert INTERRUPTED_RESULT not in json.dumps(went_on)


def test_show_all_branches_prints_each_parallel_result_after_its_call() -> None:
    """Fixture 17 (2.1.328): three calls in one response, each result on its own call.
    Every branch is shown, and a result that ends there comes right after its call, not
    after the whole rest of the conversation."""
    from click.testing import CliRunner

    from sessiontree.cli.main import cli
    from tests.conftest import FIXTURES

    root = FIXTURES.parent / "claude-code-2.1.328-par" / "17-par-plain" / "claude-home"
    result = CliRunner().invoke(cli, ["--root", str(root), "show", "866d869d", "--all-branches"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # each call shown as what it acts on, each result after its tool's name
    calls = ["→ Read: /home/dev/17-par-plain/notes.md", "→ Read: /home/dev/17-par-plain/data.txt"]
    calls.append("→ Bash: ls /home/dev/17-par-plain")
    results = ["← Read: 1 # Notes", "← Read: 1 data line 1", "← Bash: data.txt notes.md"]
    shown = [next(i for i, line in enumerate(lines) if c in line) for c in calls]
    answered = [next(i for i, line in enumerate(lines) if r in line) for r in results]
    assert [a - s for s, a in zip(shown, answered, strict=True)] == [1, 1, 1]
