"""The Session API writes what the client writes, and reads back as written."""

from __future__ import annotations

import itertools
import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sessiontree.index import list_sessions
from sessiontree.session import Session
from sessiontree.storage.layout import Layout

CWD = "/home/dev/project"


def make(tmp_path: Path) -> tuple[Layout, Session]:
    layout = Layout(tmp_path / "root")
    counter = itertools.count()
    start = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    session = Session.create(
        layout,
        CWD,
        session_id="5e55f00d-0000-4000-8000-000000000001",
        clock=lambda: start + timedelta(seconds=next(counter)),
        new_id=lambda: f"00000000-0000-4000-8000-{next(counter):012d}",
    )
    return layout, session


def one_turn(session: Session, prompt: str, answer: str) -> None:
    session.append_prompt(prompt)
    session.append_response(
        [
            {"type": "text", "text": "Reading."},
            {
                "type": "tool_use",
                "id": f"toolu_{prompt}",
                "name": "Read",
                "input": {"file_path": "a"},
            },
        ]
    )
    session.append_tool_result(f"toolu_{prompt}", "1\talpha")
    session.append_response([{"type": "text", "text": answer}])
    session.end_turn(duration_ms=12)


def test_file_appears_with_the_first_record_0600(tmp_path: Path) -> None:
    layout, session = make(tmp_path)
    assert not session.path.exists()
    assert session.path == layout.transcript_path(CWD, session.session_id)
    session.append_prompt("hello")
    assert session.path.exists()
    assert stat.S_IMODE(session.path.stat().st_mode) == 0o600


def test_turns_read_back_as_the_context_the_model_saw(tmp_path: Path) -> None:
    _, session = make(tmp_path)
    one_turn(session, "p1", "done one")
    one_turn(session, "p2", "done two")
    transcript = session.transcript()
    assert transcript.problems == []
    roles = [m["role"] for m in transcript.context()]
    assert roles == ["user", "assistant", "user", "assistant"] * 2
    messages = transcript.context()
    assert messages[0]["content"] == "p1"
    assert [b["type"] for b in messages[1]["content"]] == ["text", "tool_use"]  # one message
    assert messages[2]["content"][0]["tool_use_id"] == "toolu_p1"
    assert messages[-1]["content"][0]["text"] == "done two"
    # the next prompt hung on the turn end, as the client's do
    records = transcript.active_records()
    second = next(r for r in records if r.is_prompt and r.text() == "p2")
    parent = transcript.record(second.parent_uuid or "")
    assert parent is not None and parent.subtype == "turn_duration"
    lines = [json.loads(line) for line in session.path.read_text().splitlines()]
    bookmarks = [line for line in lines if line["type"] == "last-prompt"]
    assert bookmarks[-1]["leafUuid"] == transcript.active_path[-1]
    assert bookmarks[-1]["lastPrompt"] == "p2"


def test_open_continues_where_the_file_left_off(tmp_path: Path) -> None:
    _, session = make(tmp_path)
    one_turn(session, "p1", "done one")
    again = Session.open(session.path)
    assert again.session_id == session.session_id
    assert again.tip == session.tip and again.prompt_index == 1
    again.append_prompt("p2")
    again.append_response([{"type": "text", "text": "two"}])
    again.end_turn()
    texts = [r.text() for r in again.transcript().active_records() if r.is_prompt]
    assert texts == ["p1", "p2"]


def test_titles_and_listing(tmp_path: Path) -> None:
    layout, session = make(tmp_path)
    one_turn(session, "p1", "done")
    session.set_title("My work")
    (row,) = list_sessions(layout)
    assert row.title == "My work" and row.cwd == CWD and row.firstPrompt == "p1"


def test_misuse_is_refused(tmp_path: Path) -> None:
    _, session = make(tmp_path)
    with pytest.raises(ValueError, match="prompt"):
        session.append_response([{"type": "text", "text": "x"}])
    session.append_prompt("p1")
    with pytest.raises(ValueError, match="toolu_nope"):
        session.append_tool_result("toolu_nope", "x")


def test_attachments_and_system_records(tmp_path: Path) -> None:
    _, session = make(tmp_path)
    session.append_prompt("look at notes.md")
    session.append_attachment(
        {"type": "host_note"},
        rendered=["<system-reminder>notes.md holds: hello</system-reminder>"],
    )
    session.append_attachment(
        {"type": "date", "date": "2026-11-29"},
        rendered=["<system-reminder>Today is 2026-11-29.</system-reminder>"],
        rendered_role="system",
    )
    session.append_attachment({"type": "session_context"})  # kept, not sent
    session.append_response([{"type": "text", "text": "It says hello."}])
    session.append_system("informational", content="not sent to the model")
    session.end_turn()
    records = [json.loads(line) for line in session.path.read_text().splitlines()]
    kinds = [(r["type"], r.get("subtype"), r.get("renderedRole")) for r in records]
    assert kinds[:6] == [
        ("user", None, None),
        ("attachment", None, "user"),
        ("attachment", None, "system"),
        ("attachment", None, None),
        ("assistant", None, None),
        ("system", "informational", None),
    ]
    context = session.transcript().context()
    sent = json.dumps(context)
    assert "notes.md holds: hello" in sent and "Today is 2026-11-29." in sent
    assert "not sent to the model" not in sent and "session_context" not in sent
    assert [m["role"] for m in context] == ["user", "system", "assistant"]
