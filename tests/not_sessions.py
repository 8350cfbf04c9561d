"""Minimal transcripts, one per kind of file the client will or will not resume.

Shared by the unit tests (tests/catalog/test_not_sessions.py) and the interop test that holds
the same files against the real client (tests/interop/test_not_sessions_interop.py).
Each case is the file's text and the reason sessiontree gives (None: a conversation).
"""

from __future__ import annotations

import json
from typing import Any

SID = "11111111-2222-4333-8444-555555555555"
U1 = "aaaaaaaa-0000-4000-8000-000000000001"
A1 = "aaaaaaaa-0000-4000-8000-000000000002"
TS = "2026-11-29T19:16:27.349Z"
CWD = "/home/dev/not-sessions"


def user(content: str, **fields: Any) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "message": {"role": "user", "content": content},
        "uuid": U1,
        "timestamp": TS,
        "cwd": CWD,
        "sessionId": SID,
        "version": "2.1.328",
        "userType": "external",
        **fields,
    }


def assistant(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "parentUuid": U1,
        "isSidechain": False,
        "type": "assistant",
        "message": {
            "id": "msg_0001",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-5-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
        },
        "uuid": A1,
        "timestamp": "2026-11-29T19:16:28.349Z",
        "cwd": CWD,
        "sessionId": SID,
        "version": "2.1.328",
        "userType": "external",
        **fields,
    }


def chain(kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "type": kind,
        "uuid": "aaaaaaaa-0000-4000-8000-000000000009",
        "timestamp": TS,
        "cwd": CWD,
        "sessionId": SID,
        **fields,
    }


SUMMARY = {"type": "summary", "summary": "A summary", "leafUuid": "2369a617-e71c-48aa-8c5c"}
SNAPSHOT = {
    "type": "file-history-snapshot",
    "messageId": U1,
    "snapshot": {"messageId": U1, "trackedFileBackups": {}, "timestamp": TS},
    "isSnapshotUpdate": False,
}
TITLE = {"type": "custom-title", "customTitle": "My title", "sessionId": SID}
LAST_PROMPT = {"type": "last-prompt", "lastPrompt": "hello", "sessionId": SID}
SLASH = "<command-name>/clear</command-name>\n<command-message>clear</command-message>"


def lines(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


#: name -> (file text, sessiontree's reason; None: the client resumes it)
CASES: dict[str, tuple[str, str | None]] = {
    "empty": ("", "empty"),
    "blank-lines": ("\n\n", "empty"),
    "not-json": ("not json\n", "not-json"),
    "only-summary": (lines(SUMMARY), "only-summaries"),
    "only-summaries": (lines(SUMMARY, {**SUMMARY, "summary": "two"}), "only-summaries"),
    "only-file-history": (lines(SNAPSHOT, SNAPSHOT), "only-file-history"),
    "only-custom-title": (lines(TITLE), "only-metadata"),
    "only-last-prompt": (lines(LAST_PROMPT), "only-metadata"),
    "metadata-mix": (
        lines(SUMMARY, SNAPSHOT, TITLE, LAST_PROMPT, {"type": "mode", "mode": "normal"}),
        "only-metadata",
    ),
    "only-queue-operation": (
        lines({"type": "queue-operation", "operation": "enqueue", "timestamp": TS}),
        "only-metadata",
    ),
    "only-progress": (lines(chain("progress", data={"type": "hook_progress"})), "only-metadata"),
    "only-sidechain": (
        lines(user("side", isSidechain=True), assistant("side ok", isSidechain=True)),
        "only-sidechain",
    ),
    # What the client does resume, however little it holds:
    "only-system": (lines(chain("system", subtype="informational", content="hi")), None),
    "only-attachment": (lines(chain("attachment", attachment={"type": "date"})), None),
    "only-meta-prompt": (lines(user("meta text", isMeta=True)), None),
    "only-slash-command": (lines(user(SLASH)), None),
    "only-prompt": (lines(user("hello there")), None),
    "only-reply": (lines({**assistant("lonely"), "parentUuid": None}), None),
    "summary-then-conversation": (
        lines(SUMMARY, SNAPSHOT, user("hello there"), assistant("hi")),
        None,
    ),
}


S1 = "cccccccc-0000-4000-8000-000000000001"
S2 = "cccccccc-0000-4000-8000-000000000002"

#: Main-chain messages, then sidechain records named by the newest last-prompt: the leaf
#: lands on a sidechain record and the client finds no conversation ("sidechain-leaf").
SIDECHAIN_LEAF = lines(
    user("main prompt"),
    assistant("main reply"),
    {**user("side prompt"), "uuid": S1, "isSidechain": True, "timestamp": "2026-11-29T19:16:29Z"},
    {**assistant("side reply"), "uuid": S2, "parentUuid": S1, "isSidechain": True},
    {"type": "last-prompt", "lastPrompt": "side prompt", "leafUuid": S2, "sessionId": SID},
)
#: The same without the bookmark: the leaf is the main reply, a conversation.
SIDECHAIN_LAST = "".join(SIDECHAIN_LEAF.splitlines(keepends=True)[:4])
#: A rewind to before the first prompt: the client resumes it empty (not a refusal).
CLEARED = lines(
    user("main prompt"),
    assistant("main reply"),
    {"type": "last-prompt", "lastPrompt": "", "leafUuid": None, "explicit": True},
)
