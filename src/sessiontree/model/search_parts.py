"""What of a record is searched: its text, cut into parts a search hit can name.

Pure: a stored record (the dict read from disk) in, :class:`SearchPart` values out. One
part per thing a person looks for: a prompt, a reply's text, a thought (marked
``thinking``), a tool call's input and a tool's output (both with the tool's name: a
result names its call's id, the index finds the name), a compaction's summary, a system
line, an attachment's text, and an entry of ``history.jsonl``.

Roles, the set ``search --role`` takes (:data:`ROLES`):

- ``user``: what the user sent (prompts, other user text, ``history.jsonl``);
- ``assistant``: the model's replies and thoughts;
- ``tool``: tool calls' inputs and tools' outputs;
- ``system``: system records, compaction summaries, attachments.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from sessiontree.model.records import attachment_text, content_text, is_typed_prompt

Role = Literal["user", "assistant", "tool", "system"]
ROLES: tuple[Role, ...] = ("user", "assistant", "tool", "system")

Kind = Literal[
    "prompt",  # a prompt the user typed (what /rewind lists)
    "user",  # other user text (meta, command output, a sidechain's task)
    "text",  # an assistant reply's text
    "thinking",  # an assistant's thought
    "tool_use",  # a tool call's input
    "tool_result",  # a tool's output
    "summary",  # a compaction's summary, a ``summary`` record
    "system",  # a system record's text
    "attachment",  # an attachment's rendered text
    "history",  # an entry of history.jsonl
]
KINDS: tuple[Kind, ...] = (
    "prompt",
    "user",
    "text",
    "thinking",
    "tool_use",
    "tool_result",
    "summary",
    "system",
    "attachment",
    "history",
)

#: The record types that hold text worth searching; the others (snapshots, progress,
#: titles, metadata) are not decoded.
SEARCHED_TYPES = frozenset({"user", "assistant", "system", "summary", "attachment"})


@dataclass(frozen=True)
class SearchPart:
    """One searchable piece of a record."""

    kind: Kind
    role: Role
    text: str
    #: The tool's name (a call's own; a result's is found from its call by the index).
    tool_name: str | None = None
    #: The call's id: of a ``tool_use`` (to name its result) or a ``tool_result``.
    tool_use_id: str | None = None


class SearchFields(msgspec.Struct, gc=False):
    """The fields of a line :func:`parse_search_parts` and the index read, each as
    stored; the rest (``toolUseResult``, which repeats a tool's output, above all) is
    skipped, not decoded. Covers ``history.jsonl`` entries too."""

    type: Any = msgspec.UNSET
    uuid: Any = msgspec.UNSET
    timestamp: Any = msgspec.UNSET
    cwd: Any = msgspec.UNSET
    sessionId: Any = msgspec.UNSET
    subtype: Any = msgspec.UNSET
    message: Any = msgspec.UNSET
    content: Any = msgspec.UNSET
    summary: Any = msgspec.UNSET
    isMeta: Any = msgspec.UNSET
    isCompactSummary: Any = msgspec.UNSET
    isSidechain: Any = msgspec.UNSET
    isVisibleInTranscriptOnly: Any = msgspec.UNSET
    origin: Any = msgspec.UNSET
    attachment: Any = msgspec.UNSET
    rendered: Any = msgspec.UNSET
    # history.jsonl
    display: Any = msgspec.UNSET
    pastedContents: Any = msgspec.UNSET
    project: Any = msgspec.UNSET


def flatten_input(value: Any) -> str:
    """A tool call's input as text: its string and number values, one a line (keys left
    out: they are the tool's schema, not what it was asked; flags too: an Edit's
    ``replace_all`` read ``False`` first in every snippet of its call). An Edit's change
    reads ``old → new`` (a ``→`` line between ``old_string`` and ``new_string``: no
    word, so it matches nothing)."""
    return "\n".join(_values(value))


def _values(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key == "new_string" and isinstance(value.get("old_string"), str):
                yield "→"
            yield from _values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _values(item)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)


def parse_search_parts(raw: Mapping[str, Any]) -> list[SearchPart]:
    """The searchable parts of a transcript record, in the order they appear; none for
    a record of another type, or one with no text."""
    kind = raw.get("type")
    if kind == "user":
        return _user_parts(raw)
    if kind == "assistant":
        return _assistant_parts(raw)
    if kind == "system":
        text = raw.get("content")
        return [SearchPart("system", "system", text)] if isinstance(text, str) and text else []
    if kind == "summary":
        text = raw.get("summary")
        return [SearchPart("summary", "system", text)] if isinstance(text, str) and text else []
    if kind == "attachment":
        rendered = raw.get("rendered")
        if not isinstance(rendered, list):
            return []  # only its kind: nothing a person would search for
        text = attachment_text(dict(raw))
        return [SearchPart("attachment", "system", text)] if text else []
    return []


def _content(raw: Mapping[str, Any]) -> Any:
    message = raw.get("message")
    return message.get("content") if isinstance(message, Mapping) else None


def _user_parts(raw: Mapping[str, Any]) -> list[SearchPart]:
    content = _content(raw)
    if raw.get("isCompactSummary") is True:
        text = content_text(content) if isinstance(content, str | list) else ""
        return [SearchPart("summary", "system", text)] if text else []
    kind: Kind = "prompt" if is_typed_prompt(raw) else "user"
    if isinstance(content, str):
        return [SearchPart(kind, "user", content)] if content else []
    if not isinstance(content, list):
        return []
    parts: list[SearchPart] = []
    texts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            body = content_text(inner) if isinstance(inner, str | list) else ""
            call = block.get("tool_use_id")
            if body:
                parts.append(
                    SearchPart(
                        "tool_result",
                        "tool",
                        body,
                        tool_use_id=call if isinstance(call, str) else None,
                    )
                )
    text = "\n".join(t for t in texts if t)
    return [SearchPart(kind, "user", text), *parts] if text else parts


def _assistant_parts(raw: Mapping[str, Any]) -> list[SearchPart]:
    content = _content(raw)
    if isinstance(content, str):
        return [SearchPart("text", "assistant", content)] if content else []
    if not isinstance(content, list):
        return []
    parts: list[SearchPart] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                parts.append(SearchPart("text", "assistant", text))
        elif kind == "thinking":
            text = block.get("thinking")
            if isinstance(text, str) and text:
                parts.append(SearchPart("thinking", "assistant", text))
        elif kind == "tool_use":
            name, call = block.get("name"), block.get("id")
            parts.append(
                SearchPart(
                    "tool_use",
                    "tool",
                    flatten_input(block.get("input")),
                    tool_name=name if isinstance(name, str) else None,
                    tool_use_id=call if isinstance(call, str) else None,
                )
            )
    return parts
