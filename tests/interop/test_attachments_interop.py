"""Attachments written as clients up to 2.1.1xx wrote them (no ``rendered``), resumed by
the real client 2.1.328: it renders each one itself, and sessiontree must send the same
texts, in the same roles, in the same places.

The session is hand-made: every attachment type sessiontree renders, empty and silent
ones among them, before the first prompt and before a later one, answered by a model that
takes no mid-conversation system message (Opus 4.7: the texts lead the user message) and
by one that does (Opus 5.5: one system message after it). Compared block for block up to
the session's last reply (what the client adds at resume time is not the session's).

Attachments stored with ``rendered`` follow the same rule of roles: fixture sessions
answered by an older model send their system-role texts as user text."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.storage.layout import encode_cwd
from tests.conftest import FIXTURES
from tests.interop.realclient import resume, scenario_copy
from tests.model.test_context_golden import normalize

pytestmark = pytest.mark.interop

SESSION_START: list[dict[str, Any]] = [
    {
        "type": "hook_success",
        "hookName": "SessionStart:startup",
        "hookEvent": "SessionStart",
        "content": "",
        "stdout": "{}",
        "exitCode": 0,
    },
    {
        "type": "hook_success",
        "hookName": "SessionStart:startup",
        "hookEvent": "SessionStart",
        "content": "started",
        "exitCode": 0,
    },
    {
        "type": "hook_additional_context",
        "hookName": "SessionStart",
        "hookEvent": "SessionStart",
        "toolUseID": "SessionStart",
        "content": ["line one", "x </system-reminder> y <"],
    },
    {"type": "hook_additional_context", "hookName": "SessionStart", "content": []},
    {
        "type": "deferred_tools_delta",
        "addedNames": ["AlphaTool", "mcp__srv__beta"],
        "addedLines": ["AlphaTool", "mcp__srv__beta"],
        "removedNames": ["OldTool", "mcp__gone__x"],
    },
    {"type": "skill_listing", "content": "- s1: does one\n- s2: does two", "isInitial": True},
    {
        "type": "mcp_instructions_delta",
        "addedNames": ["srvA"],
        "addedBlocks": ["## srvA\nUse A."],
        "removedNames": ["srvOld"],
    },
    {"type": "companion_intro", "name": "Knurl", "species": "duck"},
    {
        "type": "task_reminder",
        "content": [{"id": "1", "subject": "Do it", "status": "pending", "blocks": []}],
        "itemCount": 1,
    },
    {
        "type": "hook_blocking_error",
        "hookName": "PreToolUse:Bash",
        "hookEvent": "PreToolUse",
        "blockingError": {"command": "check.sh", "blockingError": "no rm"},
    },
    {"type": "hook_stopped_continuation", "hookName": "Stop", "message": "halt"},
    {
        "type": "hook_success",
        "hookName": "UserPromptSubmit",
        "hookEvent": "UserPromptSubmit",
        "content": "busy",
        "exitCode": 0,
    },
]

SECOND_TURN: list[dict[str, Any]] = [
    {"type": "hook_success", "hookName": "Stop", "hookEvent": "Stop", "content": "idle"},
    {
        "type": "hook_success",
        "hookName": "PostToolUse:Read",
        "hookEvent": "PostToolUse",
        "content": "read",
    },
    {
        "type": "hook_success",
        "hookName": "UserPromptSubmit",
        "hookEvent": "UserPromptSubmit",
        "content": "busy again",
    },
]


def write_session(root: Path, cwd: Path, model: str) -> str:
    """The hand-made session under ``root``, as 2.1.114 would have written it."""
    session_id = str(uuid.uuid4())
    folder = root / "projects" / encode_cwd(str(cwd))
    folder.mkdir(parents=True)
    records: list[dict[str, Any]] = []

    def add(record: dict[str, Any]) -> None:
        record |= {
            "uuid": str(uuid.uuid4()),
            "parentUuid": records[-1]["uuid"] if records else None,
            "timestamp": f"2026-01-01T00:00:{len(records):02d}.000Z",
            "isSidechain": False,
            "userType": "external",
            "cwd": str(cwd),
            "sessionId": session_id,
            "version": "2.1.114",
            "gitBranch": "",
        }
        records.append(record)

    def turn(attachments: list[dict[str, Any]], prompt: str, reply: str) -> None:
        for attachment in attachments:
            add({"type": "attachment", "attachment": attachment})
        add({"type": "user", "message": {"role": "user", "content": prompt}})
        message = {
            "id": f"msg_{uuid.uuid4().hex[:16]}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": reply}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        add({"type": "assistant", "message": message})

    turn(SESSION_START, "first prompt", "first reply")
    turn(SECOND_TURN, "second prompt", "second reply")
    path = folder / f"{session_id}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return session_id


def up_to_last_reply(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return messages[: last + 1]


def resumed_both_ways(
    claude: Path, tmp_path: Path, write: Callable[[Path, Path, str], str], model: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A hand-made session (``write(root, cwd, model)`` returns its id): the context
    sessiontree computes, and what the real client sent up to the session's last reply."""
    root, cwd = tmp_path / "root", tmp_path / "work"
    cwd.mkdir()
    session_id = write(root, cwd, model)
    ours = Transcript.open(next((root / "projects").glob(f"*/{session_id}.jsonl"))).context()
    return ours, up_to_last_reply(resume(claude, root, session_id, cwd))


@pytest.mark.parametrize("model", ["claude-opus-4-7", "claude-opus-5-5"])
def test_client_renders_old_attachments_as_sessiontree_does(
    claude: Path, tmp_path: Path, model: str
) -> None:
    ours, theirs = resumed_both_ways(claude, tmp_path, write_session, model)
    assert normalize(ours) == normalize(theirs)
    sent = json.dumps(ours)
    assert "Knurl" not in sent and "idle" not in sent and "SessionStart:startup" in sent
    assert ("Here are the existing tasks" in sent) is (model == "claude-opus-4-7")
    assert any(m["role"] == "system" for m in ours) is (model == "claude-opus-5-5")


@pytest.mark.parametrize(
    "scenario",
    [
        "01-basic",
        "02-rewind-both",
        "07-summarize-from-here",
        "13-big-tool-output",
        "14-subagent",
        "06-compact",  # a permission-mode reminder folded into the Edit result before it
    ],
)
def test_stored_system_texts_go_as_user_text_on_an_older_model(
    claude: Path, tmp_path: Path, scenario: str
) -> None:
    """A fixture session (2.1.328, Opus 5.5, attachments stored with ``renderedRole``
    system) answered instead by Sonnet 4.5, which takes no mid-conversation system
    message: the client sends those stored texts as user text, and so does sessiontree."""
    root, cwd = scenario_copy(FIXTURES, scenario, tmp_path)
    paths = [p for p in (root / "projects").glob("*/*.jsonl") if not p.stem.startswith("agent-")]
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert '"model":"claude-opus-5-5"' in text
        path.write_text(text.replace('"model":"claude-opus-5-5"', '"model":"claude-sonnet-4-5"'))
    (path,) = paths
    ours = Transcript.open(path).context()
    assert not any(m["role"] == "system" for m in ours)
    theirs = resume(claude, root, path.stem, cwd)
    assert normalize(ours) == normalize(up_to_last_reply(theirs))


def test_system_texts_are_joined_as_the_client_joins_them(claude: Path, tmp_path: Path) -> None:
    """On a model that takes mid-conversation system messages: one attachment's texts by a
    newline, one attachment from the next by a blank line (compared exactly: the shape
    comparison leaves system messages out)."""
    from sessiontree.session.session import Session
    from sessiontree.storage.layout import Layout

    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "root"
    session = Session.create(Layout(root), str(cwd))
    session.append_prompt("hello")
    wrap = "<system-reminder>\n{}\n</system-reminder>".format
    texts = [wrap("first text"), wrap("second text")]
    session.append_attachment({"type": "made_up_note"}, rendered=texts, rendered_role="system")
    session.append_attachment(
        {"type": "made_up_note"}, rendered=[wrap("third text")], rendered_role="system"
    )
    session.append_response([{"type": "text", "text": "hi"}], model="claude-opus-5-5")
    session.end_turn(duration_ms=1)
    ours = Transcript.open(session.path).context()
    theirs = resume(claude, root, session.session_id, cwd)

    def system(messages: list[dict[str, Any]]) -> list[str]:
        return [m["content"] for m in messages if m["role"] == "system"]

    assert system(ours) == system(theirs)[: len(system(ours))]
    assert system(ours) == ["first text\nsecond text\n\nthird text"]
