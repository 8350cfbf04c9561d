"""Attachments stored without ``rendered`` (clients up to 2.1.1xx), rendered as client
2.1.328 renders them when it resumes: on the wild sessions in place (their licences keep
them out of this repository), text for text against what the client sent, and on small
hand-made records for the cases the wild ones do not reach.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.attachments import (
    AMBIENT,
    DEFERRED_TOOLS_ADDED,
    LIST_LIMIT,
    SKILLS_SHORTENED,
    TASK_REMINDER,
    render_attachment,
    takes_system_messages,
)
from sessiontree.model.context import build_context, resume_model
from sessiontree.model.records import Record
from tests.conftest import WILD, needs_wild
from tests.model.test_context_golden import normalize, truth_before_probe

CCL6 = ("ccl-6-worktrees", "ef958aa1-0e93-49f0-bb71-150f63befcd1")
HOOK8 = ("hook-08-loopkit", "da0d9633-7f7b-4ebc-80f9-81a9c987a7df")

wild = needs_wild


def _wrap(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


# -- the wild sessions, in place ------------------------------------------------------


def _session(case: tuple[str, str]) -> tuple[Transcript, dict[str, Any]]:
    scenario, session_id = case
    (path,) = (WILD / scenario / "claude-home" / "projects").glob(f"*/{session_id}.jsonl")
    truth = json.loads((WILD / scenario / "truth" / f"resume-{session_id}.json").read_text())
    return Transcript.open(path), truth


def _model(transcript: Transcript) -> str | None:
    return resume_model(transcript.records(transcript.active_path))


def _attachment(transcript: Transcript, uuid_prefix: str) -> dict[str, Any]:
    (uuid,) = [u for u in transcript.active_path if u.startswith(uuid_prefix)]
    record = transcript.record(uuid)
    assert record is not None and record.type == "attachment" and "rendered" not in record.raw
    attachment = record.get("attachment")
    assert isinstance(attachment, dict)
    return attachment


def _sent_texts(truth: dict[str, Any]) -> list[str]:
    """Every text the client sent, tool results' inner texts included."""
    texts: list[str] = []
    for message in truth["messages"]:
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if block.get("type") == "text":
                texts.append(block["text"])
            inner = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(inner, str):
                texts.append(inner)
            elif isinstance(inner, list):
                texts.extend(b["text"] for b in inner if b.get("type") == "text")
    return texts


def _was_sent(text: str, truth: dict[str, Any]) -> bool:
    """``text`` is one of the blocks the client sent, exactly; the client's merge of two
    user messages adds one ``\\n`` to the text that ends the first (its ``PVo``), so the
    block just before a prompt may carry it."""
    return any(sent in (text, text + "\n") for sent in _sent_texts(truth))


@wild
@pytest.mark.parametrize(
    ("case", "uuid", "kind"),
    [
        (CCL6, "440c63a2", "hook_additional_context"),
        (CCL6, "6738e66f", "deferred_tools_delta"),
        (CCL6, "f8d13cc3", "skill_listing"),
        (CCL6, "ee42da4a", "hook_success"),  # UserPromptSubmit
        (CCL6, "34b47ba6", "task_reminder"),  # sent inside the tool result before it
        (HOOK8, "7b800796", "mcp_instructions_delta"),
        (HOOK8, "de006106", "skill_listing"),
    ],
)
def test_rendered_as_the_client_sent_it(case: tuple[str, str], uuid: str, kind: str) -> None:
    transcript, truth = _session(case)
    attachment = _attachment(transcript, uuid)
    assert attachment["type"] == kind
    made = render_attachment(attachment, model=_model(transcript))
    assert made is not None
    role, texts = made
    assert role == "system" and len(texts) == 1
    assert _was_sent(texts[0], truth), texts[0][:200]


@wild
def test_what_the_client_leaves_out_of_the_wild_sessions() -> None:
    """Of ccl-6's 45 ``hook_success`` records, the 39 on the active path: the client sends
    the two UserPromptSubmit ones, not the SessionStart one (empty content) nor the
    PostToolUse and Stop ones (events it does not send); nor hook-08's companion_intro."""
    transcript, truth = _session(CCL6)
    model = _model(transcript)
    silent = 0
    for record in transcript.records(transcript.active_path):
        attachment = record.get("attachment")
        if record.type != "attachment" or attachment.get("type") != "hook_success":
            continue
        made = render_attachment(attachment, model=model)
        if attachment["hookEvent"] == "UserPromptSubmit":
            assert made is not None and made[1] and _was_sent(made[1][0], truth)
        else:
            assert made == ("system", [])
            said = f"{attachment['hookName']} hook success"
            assert not any(said in text for text in _sent_texts(truth))
            silent += 1
    assert silent == 37
    transcript, truth = _session(HOOK8)
    assert render_attachment(_attachment(transcript, "af3823a1")) == ("system", [])
    assert "Knurl" not in json.dumps(truth["messages"])


@wild
def test_hook08_context_is_what_the_client_sent() -> None:
    """Every message and block of hook-08 as the client sent it (on Opus 4.6, which takes
    no mid-conversation system message: the attachment texts lead the first prompt), up to
    the reminders the client adds at resume time."""
    transcript, truth = _session(HOOK8)
    assert not takes_system_messages(_model(transcript))
    want = normalize(truth_before_probe(truth))
    got = normalize(transcript.context())
    assert got == want[: len(got)]
    assert len(want) == len(got) + 1  # the resume-time reminders, not the session's
    assert all(b["text"].startswith("<system-reminder>") for b in want[-1][1])


@wild
def test_ccl6_prompts_carry_the_attachment_texts_the_client_sent() -> None:
    """ccl-6's prompts with what leads them: the SessionStart context, the deferred tools,
    the skills and the UserPromptSubmit hook output, in the client's order."""
    transcript, truth = _session(CCL6)
    want = normalize(truth_before_probe(truth))
    got = normalize(transcript.context())
    for index in (0, 20):
        assert got[index] == want[index]
    assert [b["text"].split("\n")[1][:30] for b in got[0][1][:4]] == [
        "SessionStart hook additional c",
        "The following deferred tools a",
        "The following skills are avail",
        "UserPromptSubmit hook success:",
    ]


@wild
def test_ccl6_context_is_what_the_client_sent() -> None:
    """ccl-6 as the client sent it, message for message (all but the reminders the client
    adds to the last one when it resumes): the task reminder folded into the last of the
    three results before it (message 26), and the older SendMessage call's input without
    its old fields (message 17)."""
    transcript, truth = _session(CCL6)
    want = normalize(truth_before_probe(truth))
    got = normalize(transcript.context())
    assert got[:-1] == want[:-1]
    *_, last = got[26][1]
    assert last["type"] == "tool_result" and last["content"][-1]["text"].startswith(
        "<system-reminder>\nThe task tools haven't been used recently."
    )
    sends = [b for b in got[17][1] if b.get("name") == "SendMessage"]
    assert len(sends) == 3
    assert all(not {"type", "recipient", "content"} & set(b["input"]) for b in sends)


# -- hand-made records ----------------------------------------------------------------


def test_hook_additional_context() -> None:
    made = render_attachment(
        {"type": "hook_additional_context", "hookName": "SessionStart", "content": ["a", "b"]}
    )
    assert made == ("system", [_wrap("SessionStart hook additional context: a\nb")])
    empty = {"type": "hook_additional_context", "hookName": "SessionStart", "content": []}
    assert render_attachment(empty) == ("system", [])


def test_hook_output_cannot_close_the_reminder() -> None:
    """The client's ``HL``: a ``<`` opening or closing a system-reminder tag, and a ``<``
    at the very end, become ``&lt;`` (the real client sent exactly this)."""
    made = render_attachment(
        {
            "type": "hook_additional_context",
            "hookName": "SessionStart",
            "content": ["x </system-reminder> y", "<System-Reminder> <"],
        }
    )
    assert made == (
        "system",
        [
            _wrap(
                "SessionStart hook additional context: x &lt;/system-reminder> y\n"
                "&lt;System-Reminder> &lt;"
            )
        ],
    )


@pytest.mark.parametrize(
    ("event", "name", "sent"),
    [
        ("SessionStart", "SessionStart:startup", True),
        ("UserPromptSubmit", "UserPromptSubmit", True),
        ("UserPromptExpansion", "UserPromptExpansion", True),
        ("PostToolUse", "PostToolUse:Bash", False),
        ("PreToolUse", "PreToolUse:Bash", False),
        ("Stop", "Stop", False),
        ("SubagentStop", "SubagentStop", False),
    ],
)
def test_hook_success_only_for_three_events(event: str, name: str, sent: bool) -> None:
    raw = {"type": "hook_success", "hookEvent": event, "hookName": name, "content": "out"}
    want = [_wrap(f"{name} hook success: out")] if sent else []
    assert render_attachment(raw) == ("system", want)
    assert render_attachment({**raw, "content": ""}) == ("system", [])


def test_hook_blocking_error_and_stopped_continuation() -> None:
    blocking = {
        "type": "hook_blocking_error",
        "hookName": "PreToolUse:Bash",
        "blockingError": {"command": "check.sh", "blockingError": "no rm"},
    }
    assert render_attachment(blocking) == (
        "system",
        [_wrap('PreToolUse:Bash hook blocking error from command: "check.sh": no rm')],
    )
    stopped = {"type": "hook_stopped_continuation", "hookName": "Stop", "message": "halt"}
    assert render_attachment(stopped) == ("system", [_wrap("Stop hook stopped continuation: halt")])


def test_deferred_tools_added_and_removed() -> None:
    raw = {
        "type": "deferred_tools_delta",
        "addedNames": ["AlphaTool", "mcp__srv__beta"],
        "addedLines": ["AlphaTool", "mcp__srv__beta"],
        "removedNames": ["OldTool", "mcp__gone__x"],
    }
    dont = "Do not search for them \u2014 ToolSearch will return no match"
    text = "\n\n".join(
        [
            f"{DEFERRED_TOOLS_ADDED}\nAlphaTool\nmcp__srv__beta",
            "The following deferred tools are no longer available (their MCP server "
            f"disconnected). {dont}:\nmcp__gone__x",
            f"The following deferred tools are no longer available in this session. {dont}:"
            "\nOldTool",
            AMBIENT,
        ]
    )
    assert render_attachment(raw) == ("system", [_wrap(text)])
    only_added = {**raw, "removedNames": []}
    assert render_attachment(only_added) == (
        "system",
        [_wrap(f"{DEFERRED_TOOLS_ADDED}\nAlphaTool\nmcp__srv__beta")],
    )
    # the lines are sent only when the names are there too
    assert render_attachment({**only_added, "addedNames": []}) == ("system", [])


def test_deferred_tools_many_mcp_removals_are_counted_by_server() -> None:
    names = [f"mcp__big__t{i:02d}" for i in range(LIST_LIMIT)] + ["mcp__one__only"]
    made = render_attachment({"type": "deferred_tools_delta", "removedNames": names})
    assert made is not None
    (text,) = made[1]
    assert (
        f"{LIST_LIMIT + 1} deferred tools are no longer available (MCP server disconnected): "
        f"mcp__big__* ({LIST_LIMIT}), mcp__one__*. Do not search for them" in text
    )


def test_deferred_tools_fields_not_modelled_are_left_unrendered() -> None:
    raw = {"type": "deferred_tools_delta", "addedNames": ["A"], "addedLines": ["A"]}
    assert render_attachment({**raw, "pendingMcpServers": ["srv"]}) is None
    assert render_attachment({**raw, "pendingMcpServers": []}) is not None


def test_skill_listing_variants() -> None:
    lead = "The following skills are available for use with the Skill tool:"
    raw = {"type": "skill_listing", "content": "- a: does a"}
    assert render_attachment(raw) == ("system", [_wrap(f"{lead}\n\n- a: does a")])
    shortened = render_attachment({**raw, "shortened": True})
    assert shortened == ("system", [_wrap(f"{lead}\n\n- a: does a\n\n{SKILLS_SHORTENED}")])
    more = render_attachment({**raw, "addsToEarlier": True})
    assert more is not None and more[1][0].startswith(
        "<system-reminder>\nThe following skills are also available for use with the Skill "
        "tool. This list adds to the skills listed earlier in this conversation and is not "
        "the full list:\n\n- a"
    )
    assert render_attachment({**raw, "content": ""}) == ("system", [])


def test_mcp_instructions_added_and_removed() -> None:
    raw = {
        "type": "mcp_instructions_delta",
        "addedNames": ["srvA"],
        "addedBlocks": ["## srvA\nUse A."],
        "removedNames": ["srvOld"],
    }
    text = (
        "# MCP Server Instructions\n\nThe following MCP servers have provided instructions "
        "for how to use their tools and resources:\n\n## srvA\nUse A.\n\n"
        "The following MCP servers have disconnected. Their instructions above no longer "
        f"apply:\nsrvOld\n\n{AMBIENT}"
    )
    assert render_attachment(raw) == ("system", [_wrap(text)])
    assert render_attachment({"type": "mcp_instructions_delta"}) == ("system", [])


def test_task_reminder_only_on_models_that_still_get_it() -> None:
    raw = {
        "type": "task_reminder",
        "content": [{"id": "1", "subject": "Do it", "status": "pending"}],
        "itemCount": 1,
    }
    text = f"{TASK_REMINDER}\n\nHere are the existing tasks:\n\n#1. [pending] Do it"
    assert render_attachment(raw, model="claude-opus-4-7") == ("system", [_wrap(text)])
    assert render_attachment({**raw, "content": []}, model="claude-sonnet-4-5") == (
        "system",
        [_wrap(TASK_REMINDER)],
    )
    assert render_attachment(raw, model="claude-opus-5-5") == ("system", [])
    assert render_attachment(raw, model=None) == ("system", [])  # the default model


def test_companion_intro_is_dropped_and_unknown_types_are_not_rendered() -> None:
    assert render_attachment({"type": "companion_intro", "name": "K"}) == ("system", [])
    assert render_attachment({"type": "no_such_attachment"}) is None
    assert render_attachment({}) is None


@pytest.mark.parametrize(
    ("model", "takes"),
    [
        (None, True),
        ("claude-opus-5-5", True),
        ("claude-opus-4-8", True),
        ("claude-sonnet-5", True),
        ("claude-opus-4-7", False),
        ("claude-opus-4-6", False),
        ("claude-sonnet-4-5", False),
        ("claude-haiku-4-5", False),
        ("claude-3-5-sonnet", False),
    ],
)
def test_which_models_take_system_messages(model: str | None, takes: bool) -> None:
    assert takes_system_messages(model) is takes


def _records(model: str) -> list[Record]:
    """A prompt led by two old-style attachments, and its reply, on ``model``."""
    raws: list[dict[str, Any]] = [
        {
            "type": "attachment",
            "uuid": "a1",
            "parentUuid": None,
            "attachment": {
                "type": "hook_additional_context",
                "hookName": "SessionStart",
                "content": ["ctx"],
            },
        },
        {
            "type": "attachment",
            "uuid": "a2",
            "parentUuid": "a1",
            "attachment": {
                "type": "hook_success",
                "hookName": "UserPromptSubmit",
                "hookEvent": "UserPromptSubmit",
                "content": "ok",
            },
        },
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": "a2",
            "message": {"role": "user", "content": "hello"},
        },
        {
            "type": "assistant",
            "uuid": "r1",
            "parentUuid": "u1",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": "hi"}],
            },
        },
    ]
    return [Record(raw) for raw in raws]


def test_context_sends_them_as_user_text_on_older_models() -> None:
    assert build_context(_records("claude-opus-4-7"))[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": _wrap("SessionStart hook additional context: ctx")},
            {"type": "text", "text": _wrap("UserPromptSubmit hook success: ok")},
            {"type": "text", "text": "hello"},
        ],
    }


def test_context_sends_them_as_one_system_message_on_newer_models() -> None:
    """As the real client sent them on Opus 5.5: bare texts, after the user message."""
    assert build_context(_records("claude-opus-5-5"))[:2] == [
        {"role": "user", "content": "hello"},
        {
            "role": "system",
            "content": "SessionStart hook additional context: ctx\n\n"
            "UserPromptSubmit hook success: ok",
        },
    ]


def _stored(model: str) -> list[Record]:
    """A prompt, an attachment stored with a system-role ``rendered`` text, the reply."""
    records = _records(model)
    stored = {
        "type": "attachment",
        "uuid": "a3",
        "parentUuid": "u1",
        "attachment": {"type": "date", "date": "2026-11-29"},
        "rendered": [{"content": _wrap("Today is 2026-11-29.")}],
        "renderedRole": "system",
    }
    return [*records[2:3], Record(stored), Record({**records[3].raw, "parentUuid": "a3"})]


def test_stored_system_texts_follow_the_same_rule() -> None:
    """Verified with the real client on fixture sessions answered by Sonnet 4.5 (the
    interop test): a stored system-role text goes as user text, wrapper kept, before the
    prompt it follows; on a newer model, as a bare system message."""
    assert build_context(_stored("claude-sonnet-4-5"))[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": _wrap("Today is 2026-11-29.")},
            {"type": "text", "text": "hello"},
        ],
    }
    assert build_context(_stored("claude-opus-5-5"))[:2] == [
        {"role": "user", "content": "hello"},
        {"role": "system", "content": "Today is 2026-11-29."},
    ]
