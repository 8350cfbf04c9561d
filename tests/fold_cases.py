"""A hand-made session whose turns each end in a tool result followed by attachment texts:
the cases of client 2.1.328's fold of a user text into the tool result before it. Used by
``tests/model/test_fold_results.py`` (sessiontree's context) and
``tests/interop/test_fold_interop.py`` (the same session resumed by the real client)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout

JsonDict = dict[str, Any]

#: An attachment type the client does not know: it sends the stored text as it is.
CUSTOM: JsonDict = {"type": "x_custom_note"}

NESTED_MEMORY: JsonDict = {
    "type": "nested_memory",
    "path": "/tmp/CLAUDE.md",
    "content": {"path": "/tmp/CLAUDE.md", "type": "Project", "content": "be nice"},
    "displayPath": "CLAUDE.md",
}

PROMPT_SUBMIT_HOOK: JsonDict = {
    "type": "hook_additional_context",
    "hookName": "prompt.submit",
    "hookEvent": "UserPromptSubmit",
    "toolUseID": "x",
    "content": ["ctx"],
}

WORKER_RESTARTED = (
    "This session's worker process was restarted. If your previous turn was already "
    "complete, take no action and wait for the next event. Otherwise, continue from "
    "where you left off."
)

PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ"
    "RU5ErkJggg=="
)


def reminder(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


@dataclass(frozen=True)
class Attached:
    texts: list[str]
    role: Literal["user", "system"] = "system"
    attachment: JsonDict = field(default_factory=lambda: CUSTOM)


@dataclass(frozen=True)
class Case:
    name: str
    result: str | list[JsonDict]
    attached: list[Attached]
    is_error: bool | None = None
    tool: str = "Bash"
    call_prefix: str = "toolu_"
    prompt_between: str | None = None  # a prompt typed after the result, before the texts


CASES = [
    Case("string", "out A", [Attached([reminder("note A")])]),
    Case("list", [{"type": "text", "text": "out B"}], [Attached([reminder("note B")])]),
    Case(
        "two texts",
        [{"type": "text", "text": "u1"}, {"type": "text", "text": "u2"}],
        [Attached([reminder("c1"), reminder("c2")], role="user")],
    ),
    Case("error", "bad D", [Attached([reminder("note D")])], is_error=True),
    Case(
        "kept apart, then folded past it",
        "out E",
        [Attached([reminder("Disk space is low: 1 GB free")]), Attached([reminder("note E")])],
    ),
    Case("user text", "out F", [Attached(["plain F text"], role="user")]),
    Case("polled events", "out H", [Attached([reminder('<event kind="x">e</event>')])]),
    Case("empty", "", [Attached([reminder("note I")])]),
    Case("whitespace", "  out P  \n", [Attached([reminder("note P  ")])]),
    Case(
        "image last",
        [
            {"type": "text", "text": "out J"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
            },
        ],
        [Attached([reminder("note J")])],
    ),
    Case("prompt between", "out L", [Attached([reminder("note L")])], prompt_between="typed L"),
    Case(
        "tool loaded",
        [{"type": "tool_reference", "tool_name": "WebFetch"}],
        [Attached([reminder("note K")])],
        tool="ToolSearch",
    ),
    Case(
        "tools gone",
        [{"type": "tool_reference", "tool_name": "EnterPlanMode"}],
        [Attached([reminder("note K2")])],
        tool="ToolSearch",
    ),
    Case("own call", "out T", [Attached([reminder("note T")])], call_prefix="gettask_"),
    Case(
        "nested memory",
        "out N",
        [Attached([reminder("nested memory N")], role="user", attachment=NESTED_MEMORY)],
    ),
    Case(
        "prompt.submit hook",
        "out N2",
        [
            Attached(
                [reminder("prompt.submit hook additional context: ctx")],
                role="user",
                attachment=PROMPT_SUBMIT_HOOK,
            )
        ],
    ),
    Case(
        "file notes",
        "out Q",
        [
            Attached(
                [reminder("Claude Code's notes on the files offered by the tool call Bash: none")],
                role="user",
            )
        ],
    ),
    Case(
        "first-line note and more",
        "out R",
        [
            Attached(
                [
                    reminder(
                        "The first line of text after this note that is not a system reminder is X"
                    )
                    + "\nmore"
                ],
                role="user",
            ),
            Attached([reminder("after R")], role="user"),
        ],
    ),
    Case(
        "worker restarted",
        "out S",
        [
            Attached([reminder(WORKER_RESTARTED)], role="user"),
            Attached([reminder("after S")], role="user"),
        ],
    ),
]


def write_session(root: Path, cwd: Path, model: str) -> str:
    """Every case as one turn (prompt, call, result, attachments, reply) answered by
    ``model``; returns the session id."""
    session = Session.create(Layout(root), str(cwd))
    for number, case in enumerate(CASES):
        session.append_prompt(f"case {case.name}")
        call = f"{case.call_prefix}{number:02d}{'x' * 20}"
        arguments = {"query": "select:WebFetch"} if case.tool == "ToolSearch" else {"command": "ls"}
        session.append_response(
            [{"type": "tool_use", "id": call, "name": case.tool, "input": arguments}],
            model=model,
            stop_reason="tool_use",
        )
        session.append_tool_result(call, case.result, is_error=case.is_error)
        if case.prompt_between is not None:
            session.append_prompt(case.prompt_between)
        for attached in case.attached:
            session.append_attachment(
                attached.attachment, rendered=attached.texts, rendered_role=attached.role
            )
        session.append_response([{"type": "text", "text": f"done {case.name}"}], model=model)
    return session.session_id
