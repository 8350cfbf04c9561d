"""What the client does with tool calls and results when it sends a conversation.

Pure, over API messages and content blocks. Read from client 2.1.328 and seen on real
sessions (``tests/test_wild.py``):

* a ToolSearch result's ``tool_reference`` blocks naming tools the resumed client no
  longer has are dropped (:data:`TOOLS_GONE` if none is left), and a result that still
  loads tools is followed by "Tool loaded.";
* calls of tools that were renamed go under their new names (:data:`TOOL_ALIASES`);
* last, :func:`pair_tool_results`: every ``tool_use`` is answered in the very next
  message, and nothing else is (the client's ``ensureToolResultPairing``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

Message = dict[str, Any]
Block = dict[str, Any]

#: What the client sends in place of a user message that its repairs left empty.
NO_CONTENT = "(no content)"

#: The synthetic result the client gives a call that has none in the next message.
MISSING_RESULT = "[Tool result missing due to internal error]"

#: What stands for tool results dropped from the first message of a conversation.
ORPHAN_RESULT_REMOVED = "[Orphaned tool result removed due to conversation resume]"

#: The text the client adds after a ToolSearch result that loaded tools.
TOOL_LOADED = "Tool loaded."

#: The tools client 2.1.328 has when it resumes a session with ``-p`` and no MCP server
#: (its request's ``tools`` and the deferred ones it lists): a ToolSearch result's
#: reference to any other tool (``EnterPlanMode``, an ``mcp__…`` tool) is dropped.
RESUME_TOOLS = frozenset(
    {
        *("Agent", "Bash", "Edit", "ListAgents", "Read", "ReportFindings", "ScheduleWakeup"),
        *("Skill", "TaskCreate", "TaskUpdate", "ToolSearch", "WebFetch", "Workflow", "Write"),
        *("CronCreate", "CronDelete", "CronList", "EnterWorktree", "ExitWorktree", "Monitor"),
        *("NotebookEdit", "SendMessage", "TaskGet", "TaskList", "TaskStop", "WebSearch"),
    }
)

#: Old tool names and what client 2.1.328 calls them now: a call of an old name is sent
#: under the new one (``Task`` calls of 1.x/2.0 sessions go as ``Agent``).
TOOL_ALIASES = {
    "Task": "Agent",
    "KillShell": "TaskStop",
    "KillBash": "TaskStop",
    "ListPeers": "ListAgents",
    "Brief": "SendUserMessage",
    "ListMcpResources": "ListMcpResourcesTool",
    "ReadMcpResource": "ReadMcpResourceTool",
    "ReadMcpResourceDir": "ReadMcpResourceDirTool",
    "ProposeGoal": "SetGoal",
}

#: What a ToolSearch result says when every tool it loaded is gone.
TOOLS_GONE = "[Tool references removed - tools no longer available]"


def _is_tool_reference(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_reference"


def tool_available(name: str) -> bool:
    """Whether a tool a ToolSearch result loaded is still there on resume."""
    return TOOL_ALIASES.get(name, name) in RESUME_TOOLS


#: Fields of an older ``SendMessage`` call that the client drops from its input when it
#: re-sends the call (the input also has ``to`` and ``message`` or ``notify_when_idle``).
OLD_SEND_MESSAGE_FIELDS = (
    "type",
    "recipient",
    "recipient_kind",
    "content",
    "request_id",
    "approve",
)


def renamed(blocks: list[Block]) -> list[Block]:
    """A response's calls as the client re-sends them: under the tools' current names, and
    an older ``SendMessage`` input without its old fields (:data:`OLD_SEND_MESSAGE_FIELDS`;
    seen on ccl-6, client 2.1.114)."""
    out: list[Block] = []
    for block in blocks:
        if block.get("type") != "tool_use":
            out.append(block)
            continue
        name = block.get("name")
        if name in TOOL_ALIASES:
            block = {**block, "name": TOOL_ALIASES[str(name)]}
        given = block.get("input")
        if (
            block.get("name") == "SendMessage"
            and isinstance(given, dict)
            and "to" in given
            and ("message" in given or "notify_when_idle" in given)
            and any(field in given for field in OLD_SEND_MESSAGE_FIELDS)
        ):
            kept = {k: v for k, v in given.items() if k not in OLD_SEND_MESSAGE_FIELDS}
            block = {**block, "input": kept}
        out.append(block)
    return out


def with_tool_loaded(blocks: list[Block]) -> list[Block]:
    """ToolSearch results as the client re-sends them: ``tool_reference`` blocks naming a
    tool that is gone are dropped (all gone: the client's "[Tool references removed -
    tools no longer available]" text), and a result that still loads tools is followed
    by the client's "Tool loaded." text, unless the record already has it."""
    out: list[Block] = []
    for block in blocks:
        inner = block.get("content")
        if block.get("type") == "tool_result" and isinstance(inner, list):
            kept = [
                c
                for c in inner
                if not _is_tool_reference(c)
                or not isinstance(c.get("tool_name"), str)
                or not c["tool_name"]
                or tool_available(c["tool_name"])
            ]
            if len(kept) != len(inner):
                block = {**block, "content": kept or [_text(TOOLS_GONE)]}
        out.append(block)
    loads = any(
        b.get("type") == "tool_result"
        and isinstance(b.get("content"), list)
        and any(_is_tool_reference(c) for c in b["content"])
        for b in out
    )
    if not loads or any(
        b.get("type") == "text" and str(b.get("text", "")).startswith(TOOL_LOADED) for b in out
    ):
        return out
    return [*out, _text(TOOL_LOADED)]


def pair_tool_results(messages: list[Message]) -> list[Message]:
    """The client's last repair before it sends: every ``tool_use`` is answered in the
    very next message, and nothing else is.

    A call whose result is not in the next user message gets a synthetic error result
    (:data:`MISSING_RESULT`) there; results in that message that answer no call of the
    assistant before it are dropped (a message left empty becomes ``(no content)``);
    results in a user message that follows no assistant are dropped; a ``tool_use`` id
    seen before is dropped from a later assistant message. Read from client 2.1.328
    (``ensureToolResultPairing``) and seen in real sessions whose parallel calls were
    answered out of order."""
    return list(iter_paired(messages))


def iter_paired(messages: Iterable[Message]) -> Iterator[Message]:
    """:func:`pair_tool_results`, streamed: it looks one message ahead and keeps only the
    ids of the calls it has seen."""
    called: set[str] = set()
    last_role: str | None = None  # of the last message given out; None before the first
    upcoming = iter(messages)
    following: Message | None = next(upcoming, None)
    while following is not None:
        message, following = following, next(upcoming, None)
        if message["role"] != "assistant":
            content = message["content"]
            follows_call = last_role == "assistant"
            if message["role"] == "user" and isinstance(content, list) and not follows_call:
                kept = [b for b in content if b.get("type") != "tool_result"]
                if len(kept) != len(content):
                    if kept:
                        last_role = message["role"]
                        yield {**message, "content": kept}
                    elif last_role is None:
                        last_role = message["role"]
                        yield {**message, "content": [_text(ORPHAN_RESULT_REMOVED)]}
                    continue
            last_role = message["role"]
            yield message
            continue
        answered_inline = {
            b["tool_use_id"]
            for b in message["content"]
            if b.get("type") != "tool_result" and isinstance(b.get("tool_use_id"), str)
        }
        new_calls: list[str] = []
        blocks: list[Block] = []
        content = message["content"]
        for position, block in enumerate(content):
            kind = block.get("type")
            drop = False
            if kind == "tool_use":
                call = str(block.get("id"))
                if call in called:
                    drop = True
                else:
                    called.add(call)
                    new_calls.append(call)
            elif kind in ("server_tool_use", "mcp_tool_use"):
                drop = block.get("id") not in answered_inline
            elif kind == "tool_result":
                drop = True
            if not drop:
                blocks.append(block)
                continue
            before = content[position - 1].get("type") if position > 0 else None
            after = content[position + 1].get("type") if position + 1 < len(content) else None
            if before in THINKING and after in THINKING:
                blocks.append(_text("[Tool use removed]"))
        if not blocks:
            blocks.append(_text("[Tool use interrupted]"))
        last_role = "assistant"
        yield {**message, "content": blocks} if blocks != content else message
        given: list[str] = []
        duplicated = False
        if following is not None and following["role"] == "user":
            for block in _blocks(following["content"]):
                if block.get("type") == "tool_result":
                    answer = str(block.get("tool_use_id"))
                    duplicated = duplicated or answer in given
                    given.append(answer)
        missing = [c for c in new_calls if c not in given]
        stray = {g for g in given if g not in new_calls}
        if not missing and not stray and not duplicated:
            continue
        synthetic: list[Block] = [
            {"type": "tool_result", "tool_use_id": c, "content": MISSING_RESULT, "is_error": True}
            for c in missing
        ]
        if following is not None and following["role"] == "user":
            answering, following = following, next(upcoming, None)
            rest = _blocks(answering["content"])
            if stray or duplicated:
                seen: set[str] = set()
                kept_rest: list[Block] = []
                for block in rest:
                    if block.get("type") == "tool_result":
                        answer = str(block.get("tool_use_id"))
                        if answer in stray or answer in seen:
                            continue
                        seen.add(answer)
                    kept_rest.append(block)
                rest = kept_rest
            combined = synthetic + rest
            last_role = "user"
            yield {**answering, "content": combined if combined else NO_CONTENT}
        elif synthetic:
            last_role = "user"
            yield {"role": "user", "content": synthetic}


#: A thought, in any of its block types.
THINKING = ("thinking", "redacted_thinking")


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _blocks(content: str | list[Block]) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)
