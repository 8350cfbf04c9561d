"""The text client 2.1.328 renders for an attachment record stored without ``rendered``.

Pure. Clients up to 2.1.1xx wrote ``attachment`` records without the ``rendered`` texts
that newer ones store beside them. When 2.1.328 resumes such a session it renders the
attachment itself ("use ``rendered`` if it is there, else render the attachment
afresh"), with one table of renderers keyed by attachment type. This module
is that table for the types found in real sessions, each renderer a port of the client's:

============================  ================================================================
``hook_additional_context``   ``<hookName> hook additional context: <content lines>``
``hook_success``              ``<hookName> hook success: <content>``, for SessionStart,
                              UserPromptSubmit and UserPromptExpansion only, never when empty
``hook_blocking_error``       ``<hookName> hook blocking error from command: "<cmd>": <error>``
``hook_stopped_continuation`` ``<hookName> hook stopped continuation: <message>``
``deferred_tools_delta``      the tools added (``addedLines``) and removed (``removedNames``)
``skill_listing``             ``The following skills are available for use with the Skill tool``
``mcp_instructions_delta``    ``# MCP Server Instructions`` and the servers that disconnected
``agent_listing_delta``       ``Available agent types for the Agent tool:`` and the types removed
``task_reminder``             the task list, only when the model is one the client still gives
                              the old task reminder (:data:`TASK_REMINDER_MODELS`)
``companion_intro``           nothing: the client drops it
============================  ================================================================

Each text is wrapped in ``<system-reminder>`` as the client wraps it. The role is
``"system"`` for all of them: an attachment with no recorded role whose type the client
knows is promoted to a mid-conversation system message — but only when the resume model
takes those (:func:`takes_system_messages`); otherwise it is sent as user text, wrapper
and all. The client treats a stored ``rendered`` text whose ``renderedRole`` is
``"system"`` the same way in its message normalizer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

Role = Literal["user", "system"]

#: The client's order of models; mid-conversation system messages start at
#: ``claude-opus-4-8`` (a model before it in this order takes none).
MODEL_ORDER = (
    *("claude-opus-4-0", "claude-sonnet-4-0", "claude-opus-4-1", "claude-sonnet-4-5"),
    *("claude-haiku-4-5", "claude-opus-4-5", "claude-opus-4-6", "claude-sonnet-4-6"),
    *("claude-opus-4-7", "claude-opus-4-8", "claude-mythos-5", "claude-fable-5"),
    *("claude-sonnet-5", "claude-opus-5", "claude-mythos-5-1", "claude-fable-5-1"),
    *("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-mythos-5-2"),
    "claude-fable-5-2",
)

#: Models for which the client still renders a ``task_reminder`` (with any other model
#: the task-reminder renderer returns nothing).
TASK_REMINDER_MODELS = frozenset(
    {
        *("claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-3-5-sonnet"),
        *("claude-3-5-haiku", "claude-3-7-sonnet", "claude-opus-4-0", "claude-opus-4-1"),
        *("claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-0"),
        *("claude-sonnet-4-5", "claude-sonnet-4-6", "claude-haiku-4-5"),
    }
)

#: The hook events whose ``hook_success`` the client sends.
HOOK_SUCCESS_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "UserPromptExpansion"})

#: The sentence the client closes a "no longer available" notice with.
AMBIENT = (
    "This is ambient context \u2014 do not narrate it to the user unless they ask or it is "
    "directly relevant to their request."
)

#: Above this many MCP tools a removal notice counts them instead of listing them.
LIST_LIMIT = 30

TOOL_SEARCH = "ToolSearch"

DEFERRED_TOOLS_ADDED = (
    f"The following deferred tools are now available via {TOOL_SEARCH}. Their schemas are "
    "NOT loaded \u2014 calling them directly will fail with InputValidationError. Use "
    f'{TOOL_SEARCH} with query "select:<name>[,<name>...]" to load tool schemas before '
    "calling them:"
)

SKILLS_SHORTENED = (
    "This list is shortened to save room: a description that ends in \u2026 is cut there. "
    "The skills themselves are not cut. When a request fits a skill's name or the shown "
    "part of its description, use the skill."
)

TASK_REMINDER = (
    "The task tools haven't been used recently. If you're working on tasks that would "
    "benefit from tracking progress, consider using TaskCreate to add new tasks and "
    "TaskUpdate to update task status (set to in_progress when starting, completed when "
    "done). Also consider cleaning up the task list if it has become stale. Only use these "
    "if relevant to the current work. This is just a gentle reminder - ignore if not "
    "applicable.\n"
)

_OPENING, _CLOSING = "<system-reminder>", "</system-reminder>"


def takes_system_messages(model: str | None) -> bool:
    """Whether the client sends system-role attachment texts as mid-conversation system
    messages when it resumes on ``model`` (a canonical id; ``None``: its default model,
    which takes them). Models before ``claude-opus-4-8`` in its order, and every
    ``claude-3-`` model, do not: their attachment texts go in the user message."""
    if model is None:
        return True
    if "claude-3-" in model:
        return False
    if model not in MODEL_ORDER:
        return True
    return MODEL_ORDER.index(model) >= MODEL_ORDER.index("claude-opus-4-8")


def render_attachment(
    raw: Mapping[str, Any], *, model: str | None = None
) -> tuple[Role, list[str]] | None:
    """The role and texts client 2.1.328 sends for ``raw`` (a record's ``attachment``)
    when the record has no ``rendered``; ``None`` for a type or shape this module does not
    know (the caller sends nothing, as for any attachment it cannot render). An empty
    list: the client knows the attachment and sends nothing for it. ``model`` is the
    resume model (canonical id), which decides :data:`TASK_REMINDER_MODELS`."""
    kind = raw.get("type")
    renderer = _RENDERERS.get(kind) if isinstance(kind, str) else None
    if renderer is None:
        return None
    texts = renderer(raw, model)
    return None if texts is None else ("system", texts)


def _wrap(text: str) -> str:
    """A text in a ``<system-reminder>`` wrapper, as the client wraps reminders."""
    return f"{_OPENING}\n{text}\n{_CLOSING}"


def _escape(text: str) -> str:
    """Hook output as the client escapes it: a ``<`` that would open or close a
    system-reminder tag, or that ends the text, becomes ``&lt;``."""
    text = re.sub(r"<(?=\s*(?:/\s*)?system-reminder\b)", "&lt;", text, flags=re.IGNORECASE)
    return re.sub(r"<(?=\s*(?:/\s*)?\Z)", "&lt;", text, count=1)


def _strings(value: object) -> list[str] | None:
    """A list of strings (the client keeps only the strings of such a list)."""
    if not isinstance(value, list):
        return None
    return [v for v in value if isinstance(v, str)]


def _hook_additional_context(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """ "<hookName> hook additional context: <content lines>", escaped; nothing when the
    content is empty."""
    content = raw.get("content")
    if not isinstance(content, list) or not all(isinstance(c, str) for c in content):
        return None
    if not content:
        return []
    joined = "\n".join(content)
    return [_wrap(_escape(f"{raw.get('hookName')} hook additional context: {joined}"))]


def _hook_success(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """ "<hookName> hook success: <content>", escaped; only for
    :data:`HOOK_SUCCESS_EVENTS`, and nothing when the content is empty."""
    if raw.get("hookEvent") not in HOOK_SUCCESS_EVENTS or raw.get("content") == "":
        return []
    content = raw.get("content")
    if not isinstance(content, str):
        return None
    return [_wrap(_escape(f"{raw.get('hookName')} hook success: {content}"))]


def _hook_blocking_error(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """'<hookName> hook blocking error from command: "<command>": <error>', escaped."""
    error = raw.get("blockingError")
    if not isinstance(error, dict):
        return None
    text = (
        f'{raw.get("hookName")} hook blocking error from command: "{error.get("command")}": '
        f"{error.get('blockingError')}"
    )
    return [_wrap(_escape(text))]


def _hook_stopped_continuation(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """ "<hookName> hook stopped continuation: <message>", escaped."""
    message = raw.get("message")
    if not isinstance(message, str):
        return None
    return [_wrap(_escape(f"{raw.get('hookName')} hook stopped continuation: {message}"))]


#: The ``deferred_tools_delta`` fields the renderer below models: written by clients up
#: to 2.1.1xx. A record with any other field set is left unrendered (``None``).
_DEFERRED_FIELDS = frozenset({"type", "addedNames", "addedLines", "removedNames"})


def _deferred_tools_delta(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """A ``deferred_tools_delta`` as the client renders the fields old clients wrote: the
    added lines under :data:`DEFERRED_TOOLS_ADDED` ("The following deferred tools are now
    available via ToolSearch…", only when ``addedLines`` and ``addedNames`` are both non-empty), the
    removed MCP tools ("…no longer available (their MCP server disconnected)…", counted
    by server past :data:`LIST_LIMIT`), the other removed tools ("…no longer available in
    this session…"), then :data:`AMBIENT` after any removal; parts joined by a blank line."""
    if any(raw.get(key) not in (None, [], False) for key in raw.keys() - _DEFERRED_FIELDS):
        return None
    lines, names = _strings(raw.get("addedLines")) or [], _strings(raw.get("addedNames")) or []
    removed = _strings(raw.get("removedNames")) or []
    parts: list[str] = []
    if lines and names:
        parts.append(DEFERRED_TOOLS_ADDED + "\n" + "\n".join(lines))
    dont = f"Do not search for them \u2014 {TOOL_SEARCH} will return no match"
    mcp = [n for n in removed if n.startswith("mcp__")]
    other = [n for n in removed if not n.startswith("mcp__")]
    if len(mcp) > LIST_LIMIT:
        parts.append(
            f"{len(mcp)} deferred tools are no longer available (MCP server disconnected): "
            f"{_count_by_server(mcp)}. {dont}."
        )
    elif mcp:
        parts.append(
            "The following deferred tools are no longer available (their MCP server "
            f"disconnected). {dont}:\n" + "\n".join(mcp)
        )
    if other:
        parts.append(
            f"The following deferred tools are no longer available in this session. {dont}:\n"
            + "\n".join(other)
        )
    if removed:
        parts.append(AMBIENT)
    return [_wrap("\n\n".join(parts))] if parts else []


def _count_by_server(names: list[str]) -> str:
    """The removed MCP tools by server: ``mcp__server__*`` per server (with its count when more than
    one), sorted, comma-separated."""
    counts: dict[str, int] = {}
    for name in names:
        key = "__".join(name.split("__")[:2]) + "__*" if name.startswith("mcp__") else name
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} ({n})" if n > 1 else k for k, n in sorted(counts.items()))


def _skill_listing(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """ "The following skills are available for use with the Skill tool:" and the listing
    (nothing when it is empty) — ``addsToEarlier`` says "also" and
    that the list adds to an earlier one; ``shortened`` appends the note on cut
    descriptions. (The REPL-mode wording is not modelled: it needs REPL mode on.)"""
    content = raw.get("content")
    if not content:
        return []
    if not isinstance(content, str):
        return None
    also, adds = (
        (
            "also ",
            ". This list adds to the skills listed earlier in this conversation and is "
            "not the full list",
        )
        if raw.get("addsToEarlier") is True
        else ("", "")
    )
    listing = f"{content}\n\n{SKILLS_SHORTENED}" if raw.get("shortened") is True else content
    lead = f"The following skills are {also}available for use with the Skill tool{adds}:"
    return [_wrap(f"{lead}\n\n{listing}")]


def _mcp_instructions_delta(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """An ``mcp_instructions_delta``: the added servers' blocks under "# MCP Server
    Instructions" (when ``addedBlocks`` and ``addedNames`` are both non-empty), then the
    servers that disconnected and :data:`AMBIENT`; parts joined by a blank line."""
    blocks = _strings(raw.get("addedBlocks")) or []
    names = _strings(raw.get("addedNames")) or []
    removed = _strings(raw.get("removedNames")) or []
    parts: list[str] = []
    if blocks and names:
        cut = (
            ". To save room, some are cut, and [cut short] marks where a server's text stops"
            if raw.get("shortened") is True
            else ""
        )
        parts.append(
            "# MCP Server Instructions\n\nThe following MCP servers have provided instructions "
            f"for how to use their tools and resources{cut}:\n\n" + "\n\n".join(blocks)
        )
    if removed:
        parts.append(
            "The following MCP servers have disconnected. Their instructions above no longer "
            "apply:\n" + "\n".join(removed)
        )
        parts.append(AMBIENT)
    return [_wrap("\n\n".join(parts))] if parts else []


def _agent_listing_delta(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """An ``agent_listing_delta``: the added types' lines under "Available agent types
    for the Agent tool:" (``isInitial``; else "New agent types are now available…"), the
    removed types and :data:`AMBIENT`, and with ``showConcurrencyNote`` on the first
    listing the note on launching agents together; parts joined by a blank line."""
    lines, types = _strings(raw.get("addedLines")) or [], _strings(raw.get("addedTypes")) or []
    removed = _strings(raw.get("removedTypes")) or []
    parts: list[str] = []
    if lines and types:
        lead = (
            "Available agent types for the Agent tool:"
            if raw.get("isInitial")
            else "New agent types are now available for the Agent tool:"
        )
        parts.append(lead + "\n" + "\n".join(lines))
    if removed:
        parts.append(
            "The following agent types are no longer available:\n"
            + "\n".join(f"- {t}" for t in removed)
        )
        parts.append(AMBIENT)
    if lines and types and raw.get("isInitial") and raw.get("showConcurrencyNote"):
        parts.append(
            "When you launch multiple agents for independent work, send them in a single "
            "message with multiple tool uses so they run concurrently."
        )
    return [_wrap("\n\n".join(parts))] if parts else []


def _task_reminder(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """A ``task_reminder``, only when the resume model is one of
    :data:`TASK_REMINDER_MODELS` (and tasks are not switched off by
    ``CLAUDE_CODE_ENABLE_TASKS``); then the reminder and ``#id. [status] subject`` per
    task. The variants for ``statusKeeper`` (the desktop app's) are not modelled."""
    if model not in TASK_REMINDER_MODELS:
        return []
    items = raw.get("content")
    if not isinstance(items, list) or raw.get("statusKeeper") is not None:
        return None
    tasks = "\n".join(
        f"#{t.get('id')}. [{t.get('status')}] {t.get('subject')}"
        for t in items
        if isinstance(t, dict)
    )
    text = TASK_REMINDER + (f"\n\nHere are the existing tasks:\n\n{tasks}" if tasks else "")
    return [_wrap(text)]


def _dropped(raw: Mapping[str, Any], model: str | None) -> list[str] | None:
    """A type the client knows and sends nothing for (``companion_intro`` is in its list of
    attachment types that ``normalizeAttachmentForAPI`` skips without a warning)."""
    return []


_Renderer = Callable[[Mapping[str, Any], "str | None"], "list[str] | None"]

_RENDERERS: dict[str, _Renderer] = {
    "hook_additional_context": _hook_additional_context,
    "hook_success": _hook_success,
    "hook_blocking_error": _hook_blocking_error,
    "hook_stopped_continuation": _hook_stopped_continuation,
    "deferred_tools_delta": _deferred_tools_delta,
    "skill_listing": _skill_listing,
    "mcp_instructions_delta": _mcp_instructions_delta,
    "task_reminder": _task_reminder,
    "agent_listing_delta": _agent_listing_delta,
    "companion_intro": _dropped,
}
