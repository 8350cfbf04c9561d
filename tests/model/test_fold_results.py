"""An attachment's user text after a tool result goes inside that result, as client 2.1.328
merges it (``fold_into_tool_result``), except the reminders it keeps apart
(``model/reminders.py``). The shapes below are what the real client sent for the session
of ``tests/fold_cases.py`` (``tests/interop/test_fold_interop.py`` holds it there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.context import fold_into_tool_result
from sessiontree.model.reminders import is_poll_event, never_folded, only_reminders
from tests.fold_cases import CASES, WORKER_RESTARTED, reminder, write_session

Block = dict[str, Any]


def result(content: Any, call: str = "toolu_1", **extra: Any) -> Block:
    return {"type": "tool_result", "tool_use_id": call, "content": content, **extra}


def text(value: str) -> Block:
    return {"type": "text", "text": value}


# -- the rule ------------------------------------------------------------------------------


def test_a_string_result_becomes_the_trimmed_texts_joined_by_a_blank_line() -> None:
    folded = fold_into_tool_result([result("  out \n")], " note \n", system_turns=False)
    assert folded == [result("out\n\nnote")]
    assert fold_into_tool_result([result("")], "note", system_turns=False) == [result("note")]
    assert fold_into_tool_result(
        [{"type": "tool_result", "tool_use_id": "t"}], "n", system_turns=False
    ) == [{"type": "tool_result", "tool_use_id": "t", "content": "n"}]


def test_a_list_result_gets_a_newline_after_its_last_text_and_the_text_as_a_block() -> None:
    folded = fold_into_tool_result([result([text("a"), text("b")])], "n", system_turns=False)
    assert folded == [result([text("a"), text("b\n"), text("n")])]
    image = {"type": "image", "source": {}}
    assert fold_into_tool_result([result([image])], "n", system_turns=False) == [
        result([image, text("n")])
    ]


def test_no_fold_into_a_tool_search_result_or_a_call_the_client_made() -> None:
    reference = {"type": "tool_reference", "tool_name": "WebFetch"}
    assert fold_into_tool_result([result([reference])], "n", system_turns=False) is None
    for prefix in ("poll_", "gettask_", "projectread_", "toolu_pdfread_"):
        assert (
            fold_into_tool_result([result("x", call=prefix + "1")], "n", system_turns=False) is None
        )


def test_nothing_to_fold_into() -> None:
    assert fold_into_tool_result([], "n", system_turns=False) is None
    assert fold_into_tool_result([text("prompt")], "n", system_turns=False) is None
    after = [result("x"), text("an earlier note")]
    assert fold_into_tool_result(after, "n", system_turns=False) is None


def test_a_text_goes_into_the_result_past_the_reminders_kept_apart_after_it() -> None:
    disk = reminder("Disk space is low: 1 GB free")
    assert fold_into_tool_result([result("x"), text(disk)], "n", system_turns=False) == [
        result("x\n\nn"),
        text(disk),
    ]
    assert fold_into_tool_result([text(disk)], "n", system_turns=False) is None
    assert fold_into_tool_result([result("x")], disk, system_turns=False) is None


def test_the_first_line_note_is_passed_only_while_it_holds_nothing_but_reminders() -> None:
    note = reminder("The first line of text after this note that is not a system reminder is X")
    assert fold_into_tool_result([result("x"), text(note)], "n", system_turns=False) == [
        result("x\n\nn"),
        text(note),
    ]
    assert (
        fold_into_tool_result([result("x"), text(note + "\nmore")], "n", system_turns=False) is None
    )
    assert only_reminders(note + "\n" + reminder("b")) and not only_reminders(note + "\nmore")


@pytest.mark.parametrize(
    "kept",
    [
        reminder(WORKER_RESTARTED),
        reminder("## Proactivity: high\n\nThe user has set ..."),
        reminder("Disk space is low: 2 GB free"),
        reminder("[TALK FROM A VOICE CALL - NOT USER INPUT]\nhello"),
        reminder("Attribution for git commits and pull requests you create from here on: x"),
    ],
)
def test_reminders_kept_apart(kept: str) -> None:
    assert never_folded(kept, system_turns=False)
    assert fold_into_tool_result([result("x")], kept, system_turns=False) is None


def test_file_notes_and_reminders_with_an_id_are_kept_apart_only_with_system_turns() -> None:
    notes = reminder("Claude Code's notes on the files offered by the tool call Bash: none")
    with_id = '<system-reminder id="0123456789abcdef">\nx\n</system-reminder>'
    for kept in (notes, with_id):
        assert never_folded(kept, system_turns=True)
        assert not never_folded(kept, system_turns=False)


def test_polled_events_are_kept_apart() -> None:
    assert is_poll_event(reminder('<event kind="x">e</event>'))
    assert is_poll_event(reminder("<system>authentic event nonces for this delivery: a b"))
    assert not is_poll_event(reminder("an event"))
    assert fold_into_tool_result([result("x")], reminder("<event a>"), system_turns=False) is None


def test_the_usual_attachment_texts_are_folded() -> None:
    for usual in (
        reminder("The task tools haven't been used recently. ..."),
        reminder("SessionStart hook additional context: a"),
        reminder("While bypass permissions mode is active:\n\n..."),
        "plain text",
    ):
        assert not never_folded(usual, system_turns=True) and not is_poll_event(usual)


# -- in the context sent --------------------------------------------------------------------


def _results(tmp_path: Path, model: str) -> dict[str, list[Block]]:
    root, cwd = tmp_path / "root", tmp_path / "work"
    cwd.mkdir()
    session_id = write_session(root, cwd, model)
    messages = Transcript.open(next((root / "projects").glob(f"*/{session_id}.jsonl"))).context()
    replies = [
        i
        for i, m in enumerate(messages)
        if m["role"] == "assistant" and m["content"][0].get("text", "").startswith("done ")
    ]
    assert len(replies) == len(CASES)
    return {
        case.name: next(m for m in reversed(messages[:i]) if m["role"] == "user")["content"]
        for case, i in zip(CASES, replies, strict=True)
    }


def test_older_model_every_case(tmp_path: Path) -> None:
    """Opus 4.7 takes no mid-conversation system message: system texts go as user text and
    are folded with the rest."""
    got = _results(tmp_path, "claude-opus-4-7")
    note = reminder
    assert got["string"] == [result(f"out A\n\n{note('note A')}", call="toolu_00" + "x" * 20)]
    assert got["list"][0]["content"] == [text("out B\n"), text(note("note B"))]
    assert got["two texts"][0]["content"] == [
        text("u1"),
        text("u2\n"),
        text(note("c1") + "\n"),
        text(note("c2")),
    ]
    assert got["error"][0]["is_error"] is True
    assert got["error"][0]["content"] == f"bad D\n\n{note('note D')}"
    assert got["kept apart, then folded past it"][0]["content"] == f"out E\n\n{note('note E')}"
    assert got["kept apart, then folded past it"][1] == text(note("Disk space is low: 1 GB free"))
    assert got["user text"][0]["content"] == "out F\n\nplain F text"
    assert got["polled events"][0]["content"] == "out H" and len(got["polled events"]) == 2
    assert got["empty"][0]["content"] == note("note I")
    assert got["whitespace"][0]["content"] == f"out P\n\n{note('note P  ').strip()}"
    assert got["image last"][0]["content"][-1] == text(note("note J"))
    assert got["prompt between"] == [
        {**got["prompt between"][0], "content": f"out L\n\n{note('note L')}"},
        text("typed L"),
    ]
    assert got["tool loaded"][1:] == [text("Tool loaded."), text(note("note K"))]
    assert got["tools gone"][0]["content"][-1] == text(note("note K2"))
    assert got["own call"][0]["content"] == "out T" and len(got["own call"]) == 2
    assert got["nested memory"][0]["content"] == f"out N\n\n{note('nested memory N')}"
    assert len(got["first-line note and more"]) == 3
    assert got["worker restarted"][0]["content"] == f"out S\n\n{note('after S')}"


def test_with_system_turns_some_user_texts_stay_apart(tmp_path: Path) -> None:
    """Opus 5.5 takes mid-conversation system messages: user-role nested memory, a
    prompt.submit hook's context and the files' notes are sent after the result, not in
    it; other user texts are still folded."""
    got = _results(tmp_path, "claude-opus-5-5")
    for name in ("nested memory", "prompt.submit hook", "file notes"):
        assert len(got[name]) == 2 and got[name][0]["content"].startswith("out ")
    assert got["user text"][0]["content"] == "out F\n\nplain F text"
    assert got["string"][0]["content"] == "out A"  # its text went to the system message
