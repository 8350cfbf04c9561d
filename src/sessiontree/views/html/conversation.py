"""A conversation as the HTML pages show it: records become items, blocks become parts.

Pure over decoded records. Each part keeps the transcript's text as a plain ``str``
(the templates escape it) or as :class:`~markupsafe.Markup` made by
:func:`~sessiontree.views.html.markdown.render_markdown` (prose, rendered safely); no
other HTML is made here. Every piece of the transcript's text is shown with its control
characters as escapes (:func:`~sessiontree.views.text.printable`: ``\\x1b``, not an
invisible ESC), and a slash command's records as the lines the client shows
(:func:`~sessiontree.views.commands.command_text`), not their tags.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from markupsafe import Markup

from sessiontree.model.records import COMMAND_RECORD_PREFIXES, Record
from sessiontree.views.commands import command_text
from sessiontree.views.html.markdown import render_markdown
from sessiontree.views.reader import call_summary
from sessiontree.views.shapes import is_shown
from sessiontree.views.text import printable, printable_line
from sessiontree.views.times import local_time

PartKind = Literal["prose", "tool_use", "tool_result", "thinking", "command", "other"]

#: Lines of a tool result shown above its fold.
PREVIEW_LINES = 3
#: How long a description of records (:func:`describe_records`) is at most.
LABEL = 60


@dataclass(frozen=True)
class Part:
    """One content block. ``html``: rendered prose; ``text``: shown escaped (a call's
    input as indented JSON, a result, a thought, a slash command's line or output);
    ``summary``: the one line shown folded."""

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
    lines = printable(text).strip("\n").splitlines()
    shown = " ".join(" ".join(line.split()) for line in lines[:count])
    return shown if len(shown) <= 300 else shown[:299] + "…"


def build_part(block: Any) -> Part:
    """The :class:`Part` of one content block."""
    if not isinstance(block, dict):
        return Part("other", summary=type(block).__name__)
    kind = block.get("type")
    if kind == "text":
        return Part("prose", html=render_markdown(printable(str(block.get("text", "")))))
    if kind == "tool_use":
        name = str(block.get("name", "?"))
        arguments = block.get("input")
        shown = printable(json.dumps(arguments, ensure_ascii=False, indent=2))
        return Part("tool_use", text=shown, summary=f"→ {printable(call_summary(name, arguments))}")
    if kind == "tool_result":
        text = _result_text(block.get("content"))
        return Part(
            "tool_result",
            text=printable(text),
            summary=_first_lines(text) or "(no output)",
            is_error=block.get("is_error") is True,
            lines=len(text.splitlines()),
        )
    if kind in ("thinking", "redacted_thinking"):
        thought = str(block.get("thinking", "")) if kind == "thinking" else "(redacted)"
        return Part(
            "thinking", text=printable(thought), summary="thinking", lines=len(thought.splitlines())
        )
    return Part("other", summary=printable(f"[{kind}]"))


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
    if record.subtype == "local_command":
        return "command", _command_heading(record)
    return "system", record.subtype or "system"


def _command_heading(record: Record) -> str:
    """A slash command's record: the command typed, or what it printed."""
    output = record.text().lstrip().startswith(("<local-command-stdout>", "<local-command-stderr>"))
    return "command output" if output else "slash command"


def _user_role(record: Record) -> tuple[str, str]:
    """Who wrote a ``user`` record: a person ("you"), or the client on the user's side of
    the conversation (a caveat or a skill's text, ``isMeta``; a slash command's rows; a
    message another agent or a hook sent), which the client never shows as typed."""
    if record.is_meta:
        return "client", "added by the client"
    if record.text().lstrip().startswith(COMMAND_RECORD_PREFIXES):
        return "command", _command_heading(record)
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
    elif role in ("command", "client") and (line := command_text(record.text())) is not None:
        parts = (Part("command", text=printable(line)),)
    elif isinstance(content, str):
        parts = (Part("prose", html=render_markdown(printable(content))),)
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


def describe_records(records: Sequence[Record], *, above: Record | None, limit: int) -> str:
    """What records that hold no prompt are, on one line of at most ``limit``
    characters, for a node of the tree: the first tool call (``→ Read: a.py``, and how
    many more), else a slash command's line or output, else the call a tool result
    answers (``result of Read: a.py``: its call is among ``records`` or in ``above``,
    the record before them), else a reply's first words, else what the first record is
    (an empty message, the client's text, a system record's subtype). Controls escaped."""
    own = _calls(records)
    calls = [*_calls([above] if above is not None else []), *own]
    if own:
        more = f" (+{len(own) - 1} more)" if len(own) > 1 else ""
        first = own[0]
        call = f"→ {call_summary(str(first.get('name', '?')), first.get('input'))}"
        return _line(call, limit - len(more)) + more
    for record in records:
        if record.type in ("user", "system") and (said := command_text(record.text())):
            return _line(said, limit)
    for record in records:
        if record.is_tool_result:
            ids = {b.get("tool_use_id") for b in record.content if isinstance(b, dict)}
            answered = next((b for b in calls if b.get("id") in ids), None)
            if answered is None:
                return "(tool result)"
            name, arguments = str(answered.get("name", "?")), answered.get("input")
            return _line(f"result of {call_summary(name, arguments)}", limit)
    for record in records:
        if record.type == "assistant" and (text := record.text().strip()):
            return _line(f"reply: {text}", limit)
    return _what(records[0]) if records else "(record)"


def _calls(records: Iterable[Record]) -> list[dict[str, Any]]:
    return [
        block
        for r in records
        if r.type == "assistant" and not isinstance(r.content, str)
        for block in r.content
        if block.get("type") == "tool_use"
    ]


def _what(record: Record) -> str:
    if record.type == "user":
        if record.is_meta:
            return "(added by the client)"
        return "(empty message)" if not record.text().strip() else _line(record.text(), LABEL)
    if record.type == "assistant":
        return "(empty reply)"
    if record.type == "attachment":
        return _line(f"(attachment: {record.text() or 'empty'})", LABEL)
    return f"(system: {printable(record.subtype or record.type or 'record')})"


def _line(text: str, limit: int) -> str:
    return printable_line(text, max(limit, 1))


def build_items(records: Iterable[Record]) -> list[Item]:
    """The items of the records a reader wants, in the order given."""
    return [build_item(r) for r in records if is_shown(r)]
