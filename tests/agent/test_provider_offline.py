"""The offline provider: the stand-in's directives, one response per step, deterministic."""

from __future__ import annotations

import json
from typing import Any

from sessiontree.agent.offline import (
    Directive,
    OfflineProvider,
    parse_directives,
    request_kind,
)
from sessiontree.agent.provider import ModelRequest
from tests.agent.loop_harness import SCHEMAS

MODEL = "claude-opus-5-5"


def ask(messages: list[dict[str, Any]], *, tools: bool = True, system: str = "") -> ModelRequest:
    blocks = [{"type": "text", "text": system}] if system else []
    return ModelRequest(MODEL, blocks, messages, SCHEMAS if tools else [])


def test_directives_parse_as_the_stand_in_reads_them() -> None:
    steps = parse_directives("x [[WRITE a|b\\nc]] y [[PAR READ a ;; EDIT b|1|2]] [[BASH ls -l]]")
    assert steps == [
        [Directive("WRITE", "a|b\\nc")],
        [Directive("READ", "a"), Directive("EDIT", "b|1|2")],
        [Directive("BASH", "ls -l")],
    ]


def test_one_response_per_step_then_done() -> None:
    provider = OfflineProvider()
    prompt = {"role": "user", "content": "[[WRITE a.txt|x\\ny]] [[PAR READ a.txt ;; BASH ls]]"}
    first = provider.respond(ask([prompt]))
    assert first.stop_reason == "tool_use"
    assert first.tool_calls == [
        {
            "type": "tool_use",
            "id": first.tool_calls[0]["id"],
            "name": "Write",
            "input": {"file_path": "a.txt", "content": "x\ny"},
        }
    ]
    answered = [
        prompt,
        {"role": "assistant", "content": first.content},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": first.tool_calls[0]["id"], "content": "ok"}
            ],
        },
    ]
    second = provider.respond(ask(answered))
    assert second.text == "Doing 2 things at once."
    assert [c["name"] for c in second.tool_calls] == ["Read", "Bash"]
    results = [
        {"type": "tool_result", "tool_use_id": c["id"], "content": "ok"} for c in second.tool_calls
    ]
    done = provider.respond(
        ask(
            [
                *answered,
                {"role": "assistant", "content": second.content},
                {"role": "user", "content": results},
            ]
        )
    )
    assert done.text == "Done with 2 steps." and done.stop_reason == "end_turn"


def test_echo_compact_and_title() -> None:
    provider = OfflineProvider()
    reminder = {"type": "text", "text": "<system-reminder>\nmemory\n</system-reminder>"}
    echo = provider.respond(
        ask([{"role": "user", "content": [reminder, {"type": "text", "text": "hi"}]}])
    )
    assert echo.text == "Echo: hi"
    compact = ask(
        [{"role": "user", "content": "CRITICAL: Respond with TEXT ONLY. Give a summary."}],
        tools=False,
    )
    assert request_kind(compact) == "compact"
    assert "<summary>" in provider.respond(compact).text
    title = ask([{"role": "user", "content": "hi"}], tools=False, system="A title, as JSON")
    assert request_kind(title) == "title"
    assert json.loads(provider.respond(title).text) == {"title": "Offline session title"}


def test_the_same_request_gets_the_same_answer() -> None:
    request = ask([{"role": "user", "content": "[[PAR READ a ;; READ b]]"}])
    one, two = OfflineProvider().respond(request), OfflineProvider().respond(request)
    assert one == two
    assert len({c["id"] for c in one.tool_calls}) == 2


def test_a_tool_it_was_not_given_is_said_not_called() -> None:
    response = OfflineProvider().respond(
        ask([{"role": "user", "content": "[[BASH ls]]"}], tools=False)
    )
    assert response.text == "I have no Bash tool here." and not response.tool_calls
    bad = OfflineProvider().respond(ask([{"role": "user", "content": "[[EDIT only-a-path]]"}]))
    assert bad.text.startswith("EDIT needs path|old|new")
