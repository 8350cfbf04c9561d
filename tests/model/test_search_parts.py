"""What of a record is searched (model/search_parts.py)."""

from __future__ import annotations

from typing import Any

from sessiontree.model.search_parts import SearchPart, flatten_input, parse_search_parts


def _user(content: Any, **fields: Any) -> dict[str, Any]:
    return {"type": "user", "uuid": "u", "message": {"role": "user", "content": content}, **fields}


def _assistant(blocks: list[Any]) -> dict[str, Any]:
    return {"type": "assistant", "uuid": "a", "message": {"role": "assistant", "content": blocks}}


def test_a_typed_prompt_and_other_user_text() -> None:
    assert parse_search_parts(_user("fix the bug")) == [SearchPart("prompt", "user", "fix the bug")]
    meta = _user("<command-name>/x</command-name>", isMeta=True)
    assert parse_search_parts(meta) == [
        SearchPart("user", "user", "<command-name>/x</command-name>")
    ]
    blocks = _user(
        [{"type": "text", "text": "one"}, {"type": "image"}, {"type": "text", "text": "two"}]
    )
    assert parse_search_parts(blocks) == [SearchPart("prompt", "user", "one\ntwo")]


def test_a_tool_result_names_its_call() -> None:
    record = _user(
        [
            {"type": "tool_result", "tool_use_id": "c1", "content": "out one"},
            {
                "type": "tool_result",
                "tool_use_id": "c2",
                "content": [{"type": "text", "text": "out two"}],
            },
            {"type": "tool_result", "tool_use_id": "c3", "content": ""},
        ]
    )
    assert parse_search_parts(record) == [
        SearchPart("tool_result", "tool", "out one", tool_use_id="c1"),
        SearchPart("tool_result", "tool", "out two", tool_use_id="c2"),
    ]


def test_assistant_text_thinking_and_tool_calls() -> None:
    record = _assistant(
        [
            {"type": "thinking", "thinking": "hmm, zebras", "signature": "x"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Here you go."},
            {
                "type": "tool_use",
                "id": "c1",
                "name": "Bash",
                "input": {"command": "ls -la", "timeout": 5},
            },
            "not a block",
        ]
    )
    assert parse_search_parts(record) == [
        SearchPart("thinking", "assistant", "hmm, zebras"),
        SearchPart("text", "assistant", "Here you go."),
        SearchPart("tool_use", "tool", "ls -la\n5", tool_name="Bash", tool_use_id="c1"),
    ]


def test_summaries_system_lines_and_attachments() -> None:
    compact = _user("This session is being continued…", isCompactSummary=True)
    assert parse_search_parts(compact) == [
        SearchPart("summary", "system", "This session is being continued…")
    ]
    assert parse_search_parts({"type": "summary", "summary": "Fixing the parser"}) == [
        SearchPart("summary", "system", "Fixing the parser")
    ]
    assert parse_search_parts({"type": "system", "content": "Conversation compacted"}) == [
        SearchPart("system", "system", "Conversation compacted")
    ]
    rendered = {"type": "attachment", "rendered": [{"content": "a reminder"}]}
    assert parse_search_parts(rendered) == [SearchPart("attachment", "system", "a reminder")]
    assert parse_search_parts({"type": "attachment", "attachment": {"type": "x"}}) == []


def test_records_with_nothing_to_search() -> None:
    for raw in (
        {"type": "file-history-snapshot", "snapshot": {}},
        {"type": "progress"},
        {"type": "user", "message": "not a dict"},
        {"type": "assistant", "message": {"content": None}},
        {"type": "user", "message": {"content": ""}},
        {"type": "summary", "summary": 3},
        {},
    ):
        assert parse_search_parts(raw) == [], raw


def test_flatten_input_keeps_values_not_keys() -> None:
    """Strings and numbers, not flags (an Edit's replace_all read False in every snippet)."""
    value = {"a": "x", "b": [1, True, {"c": "y"}], "d": None, "e": ""}
    assert flatten_input(value) == "x\n1\ny"
    assert flatten_input(None) == ""
