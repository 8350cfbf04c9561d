"""What an interactive session writes for its commands: /rewind (with code), /compact,
/branch, checkpoints before edits, a background subagent and its notification."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sessiontree.checkpoints.capture import FileHistory
from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import NULL_UUID
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout, subagent_meta_path


def make(tmp_path: Path) -> tuple[Layout, Session, Path]:
    layout = Layout(tmp_path / "root")
    project = tmp_path / "project"
    project.mkdir()
    counter = itertools.count()
    start = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def clock() -> datetime:
        return start + timedelta(seconds=next(counter))

    session = Session.create(
        layout,
        str(project),
        record_history=True,
        clock=clock,
        new_id=lambda: f"00000000-0000-4000-8000-{next(counter):012d}",
    )
    session.file_history = FileHistory(layout, session.session_id, project, clock=clock)
    return layout, session, project


def edit_turn(session: Session, prompt: str, path: Path, text: str) -> str:
    uuid = session.append_prompt(prompt)
    tool_id = f"toolu_{uuid[-6:]}"
    session.append_response(
        [{"type": "tool_use", "id": tool_id, "name": "Write", "input": {"file_path": str(path)}}],
        stop_reason="tool_use",
    )
    session.before_edit(path, tool_use_id=tool_id)
    path.write_text(text)
    session.append_tool_result(tool_id, "ok")
    session.append_response([{"type": "text", "text": "Done."}])
    session.end_turn()
    return uuid


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rewind_restores_code_and_marks_the_next_prompt(tmp_path: Path) -> None:
    layout, session, project = make(tmp_path)
    notes = project / "notes.md"
    notes.write_text("one\n")
    edit_turn(session, "first", notes, "two\n")
    second = edit_turn(session, "second", notes, "three\n")
    plan = session.rewind(second, restore_code=True)
    assert plan is not None and notes.read_text() == "two\n"
    again = session.append_prompt("second, again")
    records = lines(session.path)
    at = next(i for i, r in enumerate(records) if r.get("uuid") == again)
    assert records[at - 1]["type"] == "file-history-snapshot"
    assert records[at + 1] == {
        "type": "last-prompt",
        "leafUuid": NULL_UUID,
        "explicit": True,
        "sessionId": session.session_id,
    }
    transcript = Transcript.open(session.path)
    assert transcript.tree.parent[again] == transcript.tree.parent[second]
    assert records[at]["turnPosition"]["promptIndex"] == 2
    deltas = [r for r in records if r["type"] == "file-history-delta"]
    assert len(deltas) == 1 and deltas[0]["trackingPath"] == "notes.md"  # first edit only
    history = [h["display"] for h in lines(layout.history_path)]
    assert history == ["first", "second", "/rewind", "second, again"]


def test_typed_compact_preserves_the_last_response(tmp_path: Path) -> None:
    layout, session, project = make(tmp_path)
    edit_turn(session, "first", project / "a.txt", "a\n")
    tip = session.compact("What happened.", tools_used=["Write"], typed=True)
    transcript = Transcript.open(session.path)
    boundary = transcript.record(transcript.active_path[0])
    assert boundary is not None and boundary.subtype == "compact_boundary"
    segment = boundary.get("compactMetadata")["preservedSegment"]
    assert transcript.active_path[1] == segment["anchorUuid"]
    assert transcript.record(segment["headUuid"]).type == "assistant"  # type: ignore[union-attr]
    assert transcript.active_path[-1] == tip
    assert "<command-name>/compact</command-name>" in json.dumps(transcript.context())
    assert [h["display"] for h in lines(layout.history_path)][-1] == "/compact"


def test_branch_and_background_subagent(tmp_path: Path) -> None:
    layout, session, _project = make(tmp_path)
    session.append_prompt("audit it")
    session.append_response(
        [{"type": "tool_use", "id": "toolu_agent", "name": "Agent", "input": {}}],
        stop_reason="tool_use",
    )
    session.append_tool_result("toolu_agent", "launched")
    session.append_response([{"type": "text", "text": "Running."}])
    session.end_turn(pending_background_agents=1)
    sub = session.start_subagent(
        "a1234",
        "Audit the routes.",
        agent_type="general-purpose",
        description="Audit",
        tool_use_id="toolu_agent",
        model="claude-sonnet-4-5",
    )
    sub.append_response([{"type": "text", "text": "All fine."}])
    sub_lines = lines(sub.path)
    assert sub_lines[0]["parentUuid"] is None
    assert all(r["isSidechain"] and r["agentId"] == "a1234" for r in sub_lines)
    assert sub_lines[-1]["attributionAgent"] == "general-purpose"
    assert json.loads(subagent_meta_path(sub.path).read_text())["toolUseId"] == "toolu_agent"
    note = session.append_task_notification("<task-notification>done</task-notification>")
    record = lines(session.path)[-1]
    assert record["uuid"] == note and record["origin"]["kind"] == "task-notification"
    assert record["turnPosition"] == {"promptIndex": 1, "turnIndex": 2}
    session.append_response([{"type": "text", "text": "The audit is back."}])
    session.end_turn()
    fork = session.branch(title="Audit (Branch)")
    fork.append_prompt("go on")
    forked = lines(fork.path)
    assert forked[-1]["turnPosition"] == {"promptIndex": 2, "turnIndex": 3}
    parent = Transcript.open(session.path)
    assert [r["uuid"] for r in forked if "forkedFrom" in r] == parent.active_path
    assert [h["display"] for h in lines(layout.history_path)] == ["audit it", "/branch", "go on"]
