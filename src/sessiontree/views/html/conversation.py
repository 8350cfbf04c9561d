"""A conversation as the HTML pages show it: records become items, blocks become parts.

Pure over decoded records. Each part keeps the transcript's text as a plain ``str``
(the templates escape it) or as :class:`~markupsafe.Markup` made by
:func:`~sessiontree.views.html.markdown.render_markdown` (prose, rendered safely); no
other HTML is made here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from markupsafe import Markup

from sessiontree.model.records import COMMAND_RECORD_PREFIXES, Record
from sessiontree.views.html.markdown import render_markdown
from sessiontree.views.reader import call_summary
from sessiontree.views.shapes import is_shown
from sessiontree.views.times import local_time

PartKind = Literal["prose", "tool_use", "tool_result", "thinking", "other"]

#: Lines of a tool result shown above its fold.
PREVIEW_LINES = 3


@dataclass(frozen=True)
class Part:
    """One content block. ``html``: rendered prose; ``text``: shown escaped (a call's
    input as indented JSON, a result, a thought); ``summary``: the one line shown folded."""

    kind: PartKind
    text: str = ""
    html: Markup | None = None
    summary: str = ""
    is_error: bool = False
    lines: int = 0


@dataclass(frozen=True)
class Item:
    """One record of the conversation. ``role``: ``user``, ``assistant``, ``tool`` (a
    tool result), ``client`` (the client's text on the user's side: a caveat, a skill),
    ``command`` (a slash command's rows), ``system``, ``boundary`` (a compaction) or
    ``summary`` (what a compaction summarized, as the client wrote it)."""

    uuid: str
    role: str
    heading: str
    when: str
    timestamp: str
    parts: tuple[Part, ...]
    #: A compaction boundary's logical parent: the last record of the conversation it
    #: summarized (its branch shows what was summarized).
    summarized: str | None = None


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type')}]"
            for b in content
            if isinstance(b, dict)
        )
    return ""


def _first_lines(text: str, count: int = PREVIEW_LINES) -> str:
    lines = text.strip("\n").splitlines()
    shown = " ".join(" ".join(line.split()) for line in lines[:count])
    return shown if len(shown) <= 300 else shown[:299] + "…"


def build_part(block: Any) -> Part:
    """The :class:`Part` of one content block."""
    if not isinstance(block, dict):
        return Part("other", summary=type(block).__name__)
    kind = block.get("type")
    if kind == "text":
        return Part("prose", html=render_markdown(str(block.get("text", ""))))
    if kind == "tool_use":
        name = str(block.get("name", "?"))
        arguments = block.get("input")
        shown = json.dumps(arguments, ensure_ascii=False, indent=2)
        return Part("tool_use", text=shown, summary=f"→ {call_summary(name, arguments)}")
    if kind == "tool_result":
        text = _result_text(block.get("content"))
        return Part(
            "tool_result",
            text=text,
            summary=_first_lines(text) or "(no output)",
            is_error=block.get("is_error") is True,
            lines=len(text.splitlines()),
        )
    if kind in ("thinking", "redacted_thinking"):
        thought = str(block.get("thinking", "")) if kind == "thinking" else "(redacted)"
        return Part("thinking", text=thought, summary="thinking", lines=len(thought.splitlines()))
    return Part("other", summary=f"[{kind}]")


def _role(record: Record) -> tuple[str, str]:
    if record.type == "system" and record.subtype == "compact_boundary":
        return "boundary", "compacted"
    if record.is_compact_summary:
        return "summary", "what the compaction summarized"
    if record.is_tool_result:
        return "tool", "result"
    if record.type == "assistant":
        return "assistant", "assistant"
    if record.type == "user":
        return _user_role(record)
    return "system", record.subtype or "system"


def _user_role(record: Record) -> tuple[str, str]:
    """Who wrote a ``user`` record: a person ("you"), or the client on the user's side of
    the conversation (a caveat or a skill's text, ``isMeta``; a slash command's rows; a
    message another agent or a hook sent), which the client never shows as typed."""
    if record.is_meta:
        return "client", "added by the client"
    if record.text().lstrip().startswith(COMMAND_RECORD_PREFIXES):
        return "command", "slash command"
    kind = record.origin_kind
    if kind is not None and kind != "human":
        return "client", f"sent by {kind}"
    return "user", "you"


def build_item(record: Record) -> Item:
    """The :class:`Item` of one record a reader wants (:func:`is_shown`)."""
    role, heading = _role(record)
    content = record.content
    if role == "boundary":
        metadata = record.get("compactMetadata")
        trigger = metadata.get("trigger") if isinstance(metadata, dict) else None
        said = f"compacted ({trigger})" if isinstance(trigger, str) else "compacted"
        parts: tuple[Part, ...] = (Part("other", summary=said),)
    elif isinstance(content, str):
        parts = (Part("prose", html=render_markdown(content)),)
    else:
        parts = tuple(build_part(block) for block in content)
    logical = record.get("logicalParentUuid") if role == "boundary" else None
    return Item(
        uuid=record.uuid or "",
        role=role,
        heading=heading,
        when=local_time(record.timestamp),
        timestamp=record.timestamp or "",
        parts=parts,
        summarized=logical if isinstance(logical, str) else None,
    )


def build_items(records: Iterable[Record]) -> list[Item]:
    """The items of the records a reader wants, in the order given."""
    return [build_item(r) for r in records if is_shown(r)]
