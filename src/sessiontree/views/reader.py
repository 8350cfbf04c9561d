"""``show`` for people: the conversation as a reader wants it.

Each prompt, reply and tool result under a header (who, its short id, when, in the local
time zone); text in full, wrapped to the terminal; a tool call as its name and what it
acts on (the command, the file, the pattern: :func:`call_summary`); a tool result and a
thought folded to their first lines unless ``full``. Every piece of transcript text is
shown with its terminal controls escaped (:func:`~sessiontree.views.text.printable`).
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape

from sessiontree.model.records import Record, one_line
from sessiontree.views.marks import COMPACTION
from sessiontree.views.shapes import is_shown
from sessiontree.views.text import printable, printable_line
from sessiontree.views.times import local_time

#: Lines of a tool result or a thought shown when folded.
FOLDED_LINES = 4

#: The input field that says what a call of each tool acts on.
_SUBJECT = {
    "Bash": "command",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "Grep": "pattern",
    "Glob": "pattern",
    "WebFetch": "url",
    "WebSearch": "query",
    "Task": "description",
    "Agent": "description",
}

_COLOURS = {"user": "green", "assistant": "blue", "tool": "cyan", "system": "yellow"}


def call_summary(name: str, arguments: Any) -> str:
    """What a tool call acts on, on one line: ``Bash: ls -la``, ``Read: src/a.py``, an
    Edit with its change (``Edit: src/a.py (x = 1 → x = 2)``, each side cut); for a tool
    not known here, its input as compact JSON, cut."""
    if isinstance(arguments, dict):
        subject = arguments.get(_SUBJECT.get(name, ""))
        if isinstance(subject, str) and subject:
            said = f"{name}: {' '.join(subject.split())}"
            old, new = arguments.get("old_string"), arguments.get("new_string")
            if name == "Edit" and isinstance(old, str) and isinstance(new, str):
                before, after = one_line(old, 40) or '""', one_line(new, 40) or '""'
                said += f" ({before} → {after})"
            return said
    text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return f"{name}: {text if len(text) <= 200 else text[:199] + '…'}"


def record_line(record: Record, limit: int, calls: dict[str, str]) -> str:
    """A record on one line of at most ``limit`` characters, controls escaped: its text,
    each tool call as what it acts on (``→ Read: src/a.py``), each result after the name
    of its tool (``← Read: …``; ``calls`` maps call ids to tool names, else ``tool``),
    other blocks as a tag (``[thinking]``, ``[image]``)."""
    content = record.content
    if record.type not in ("user", "assistant") or isinstance(content, str):
        return printable_line(record.text(), limit)
    room = max(4 * limit, 64)  # each part cut first: a result may be megabytes
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", ""))[:room])
        elif kind == "tool_use":
            parts.append("→ " + call_summary(str(block.get("name", "?")), block.get("input")))
        elif kind == "tool_result":
            name = calls.get(str(block.get("tool_use_id")), "tool")
            parts.append(f"← {name}: {_result_text(block.get('content'))[:room]}")
        elif kind in ("thinking", "redacted_thinking"):
            parts.append("[thinking]")
        else:
            parts.append(f"[{kind}]")
    return one_line(" ".join(parts), limit, shown=printable)


def render_reader(out: Console, records: list[Record], *, full: bool) -> None:
    """The records of the active path (those a reader wants) for people."""
    first = True
    for record in records:
        if is_shown(record):
            if not first:
                out.print()
            first = False
            _print_record(out, record, full=full)


def _print_record(out: Console, record: Record, *, full: bool) -> None:
    if record.type == "system" and record.subtype == "compact_boundary":
        out.print(f"[magenta]{COMPACTION}[/]")
        return
    role = "tool" if record.is_tool_result else (record.type or "?")
    colour = _COLOURS.get(role, "white")
    when = local_time(record.timestamp)
    who = "result" if role == "tool" else role
    out.print(f"[bold {colour}]{escape(who)}[/] [dim]{escape((record.uuid or '')[:8])} {when}[/]")
    content = record.content
    if isinstance(content, str):
        _print_text(out, content)
        return
    for block in content:
        kind = block.get("type")
        if kind == "text":
            _print_text(out, str(block.get("text", "")))
        elif kind == "tool_use":
            name = str(block.get("name", "?"))
            arguments = block.get("input")
            if full:
                shown = json.dumps(arguments, ensure_ascii=False, indent=2)
                out.print(f"[cyan]→ {escape(printable(name))}[/]")
                _print_text(out, shown, style="dim")
            else:
                out.print(f"[cyan]→ {escape(printable(call_summary(name, arguments)))}[/]")
        elif kind == "tool_result":
            style = "red" if block.get("is_error") is True else "dim"
            _print_folded(out, _result_text(block.get("content")), full=full, style=style)
        elif kind in ("thinking", "redacted_thinking"):
            thought = str(block.get("thinking", "")) if kind == "thinking" else "(redacted)"
            out.print("[dim italic]thinking[/]")
            _print_folded(out, thought, full=full, style="dim italic")
        else:
            out.print(f"[dim]\\[{escape(printable(str(kind)))}][/]")


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type')}]"
            for b in content
            if isinstance(b, dict)
        ]
        return "\n".join(parts)
    return ""


def _print_text(out: Console, text: str, *, style: str | None = None) -> None:
    shown = printable(text).rstrip()
    if shown:
        out.print(escape(shown), style=style, soft_wrap=False, overflow="fold")


def _print_folded(out: Console, text: str, *, full: bool, style: str) -> None:
    lines = printable(text).rstrip().splitlines()
    if full or len(lines) <= FOLDED_LINES:
        _print_text(out, "\n".join(lines), style=style)
        return
    _print_text(out, "\n".join(lines[:FOLDED_LINES]), style=style)
    out.print(f"[dim]… {len(lines) - FOLDED_LINES} more line(s) (--full shows them)[/]")
