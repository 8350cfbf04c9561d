"""The Session API writes what the client writes, and reads back as written."""

from __future__ import annotations

import itertools
import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sessiontree.catalog.index import list_sessions
from sessiontree.session.session import Session
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
    # a model that takes mid-conversation system messages (older ones get the system-role
    # texts as user text: tests/model/test_attachments.py)
    session.append_response([{"type": "text", "text": "It says hello."}], model="claude-opus-5-5")
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


FIX12 = (
    Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.328" / "12-big-paste" / "claude-home"
)


def test_a_typed_prompt_with_a_paste_as_the_client_records_it(tmp_path: Path) -> None:
    """Fixture 12: the history line (placeholder, paste-cache hash), the paste-cache file
    and the transcript's prompt text, byte for byte."""
    real_history = json.loads((FIX12 / "history.jsonl").read_text().splitlines()[0])
    (real_prompt,) = [
        json.loads(line)
        for line in next((FIX12 / "projects").glob("*/*.jsonl")).read_text().splitlines()
        if '"promptSource"' in line and "pasted_content" in line
    ]
    content_hash = real_history["pastedContents"]["1"]["contentHash"]
    paste = (FIX12 / "paste-cache" / f"{content_hash}.txt").read_text()
    layout = Layout(tmp_path / "root")
    moment = datetime.fromtimestamp(real_history["timestamp"] / 1000, tz=UTC)
    session = Session.create(
        layout,
        real_history["project"],
        session_id=real_history["sessionId"],
        record_history=True,
        clock=lambda: moment,
    )
    session.append_prompt(real_history["display"], pastes={1: paste})
    written = [json.loads(line) for line in layout.history_path.read_text().splitlines()]
    assert written == [real_history]
    cached = layout.paste_path(content_hash).read_bytes()
    assert cached == (FIX12 / "paste-cache" / f"{content_hash}.txt").read_bytes()
    record = json.loads(session.path.read_text().splitlines()[0])
    assert record["message"]["content"] == real_prompt["message"]["content"]
    # a session that does not record history (the default, like claude -p) writes none
    quiet = Session.create(Layout(tmp_path / "quiet"), "/p")
    quiet.append_prompt("hello")
    assert not Layout(tmp_path / "quiet").history_path.exists()


def test_clear_is_recorded_under_the_old_session(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    old = Session.create(layout, "/p", record_history=True)
    old.append_prompt("first")
    new = old.clear()
    new.append_prompt("second")
    lines = [json.loads(line) for line in layout.history_path.read_text().splitlines()]
    assert [(x["display"], x["sessionId"]) for x in lines] == [
        ("first", old.session_id),
        ("/clear", old.session_id),
        ("second", new.session_id),
    ]


def test_a_large_bash_output_is_spilled_like_the_client(tmp_path: Path) -> None:
    _, session = make(tmp_path)
    session.append_prompt("run it")
    session.append_response(
        [{"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "x"}}]
    )
    output = "".join(f"big output line padded to fifty bytes {n:011d}\n" for n in range(3680))
    session.append_bash_result("toolu_b", output)
    record = json.loads(session.path.read_text().splitlines()[-1])
    result = record["toolUseResult"]
    saved = Path(result["persistedOutputPath"])
    assert saved.read_text() == output and result["persistedOutputSize"] == len(output)
    assert saved.parent == session.path.with_suffix("") / "tool-results"
    assert len(result["stdout"]) == 30_000
    content = record["message"]["content"][0]["content"]
    assert content.startswith(
        f"<persisted-output>\nOutput too large (179.7KB). Full output saved to: {saved}\n"
    )
    assert "big output line" in json.dumps(session.transcript().context())
    session.append_response([{"type": "text", "text": "ok"}])
    session.append_response(
        [{"type": "tool_use", "id": "toolu_c", "name": "Bash", "input": {"command": "y"}}]
    )
    session.append_bash_result("toolu_c", "small\n")
    small = json.loads(session.path.read_text().splitlines()[-1])
    assert small["message"]["content"][0]["content"] == "small\n"


FIX01 = Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.328" / "01-basic" / "claude-home"


def test_a_bash_result_has_the_clients_shape(tmp_path: Path) -> None:
    """Fixture 01's Bash result: ``is_error: false`` in the block, ``sandboxed: false``
    on the record, and the record's keys in the client's order (of those both write)."""
    real = next(
        json.loads(line)
        for line in next((FIX01 / "projects").glob("*/*.jsonl")).read_text().splitlines()
        if '"sandboxed"' in line
    )
    _, session = make(tmp_path)
    session.append_prompt("run it")
    session.append_response(
        [{"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "true"}}]
    )
    session.append_bash_result("toolu_b", "")
    mine = json.loads(session.path.read_text().splitlines()[-1])
    assert mine["message"]["content"] == [
        {**real["message"]["content"][0], "tool_use_id": "toolu_b"}
    ]
    assert mine["sandboxed"] is False and mine["toolUseResult"] == real["toolUseResult"]
    shared = [key for key in real if key in mine]
    assert [key for key in mine if key in real] == shared
    assert {"sandboxed", "sourceToolAssistantUUID", "toolUseResult"} <= set(shared)


def test_open_mid_turn_answers_the_open_tool_call(tmp_path: Path) -> None:
    _, session = make(tmp_path)
    session.append_prompt("read it")
    session.append_response(
        [{"type": "tool_use", "id": "toolu_open", "name": "Read", "input": {"p": "a"}}]
    )
    reopened = Session.open(session.path)  # the host was restarted mid-turn
    reopened.append_tool_result("toolu_open", "1\talpha")
    reopened.append_response([{"type": "text", "text": "It says alpha."}])
    reopened.end_turn()
    last_prompt = json.loads(session.path.read_text().splitlines()[-1])
    assert last_prompt["lastPrompt"] == "read it"
    record = [json.loads(x) for x in session.path.read_text().splitlines()][-4]
    assert record["promptId"] == json.loads(session.path.read_text().splitlines()[0])["promptId"]
    with pytest.raises(ValueError):
        Session.open(session.path).append_tool_result("toolu_open", "again")  # answered


def test_a_tool_call_is_answered_once(tmp_path: Path) -> None:
    _, session = make(tmp_path)
    session.append_prompt("read it")
    session.append_response([{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}])
    session.append_tool_result("toolu_1", "1\talpha")
    with pytest.raises(ValueError, match="toolu_1"):
        session.append_tool_result("toolu_1", "again")
