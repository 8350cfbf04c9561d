"""Agent writes: what a Write, Edit or MultiEdit tool result says a file was and became.

A tool result whose ``toolUseResult`` has ``filePath`` and ``structuredPatch`` records a
file write (Write, Edit and MultiEdit all do; a failed edit records a string, not an
object). Write (``type`` ``create`` or ``update``) records the new file as ``content``;
Edit records ``originalFile`` and the ``structuredPatch`` applied to it (``oldString`` →
``newString`` is the fallback when the patch does not fit). A created file has
``type: create`` or ``originalFile: null``.

Drift (:mod:`.drift`) uses the file as the write left it; a restore that puts back
subagents' writes (:mod:`.restore`) uses the file as it was before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sessiontree.model.records import Record

ToolName = Literal["Write", "Edit", "MultiEdit"]


def _split_lines(text: str) -> list[str]:
    """``text`` as lines that keep their ``\\n`` (only ``\\n`` splits, as jsdiff's does)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _matches(line: str, text: str) -> bool:
    body = line[:-1] if line.endswith("\n") else line
    return body == text or body.rstrip("\r") == text.rstrip("\r")


def apply_structured_patch(original: str, hunks: Any) -> str | None:
    """``original`` with a jsdiff ``structuredPatch`` applied, or None if it does not fit.

    Each hunk has ``oldStart`` (1-based) and ``lines`` prefixed ``' '`` (context), ``'-'``,
    ``'+'``, or ``'\\'`` (no newline at the end of the line before). Context and removed
    lines must match ``original`` exactly where the hunk says they are.
    """
    if not isinstance(hunks, list):
        return None
    old = _split_lines(original)
    out: list[str] = []
    position = 0
    for hunk in hunks:
        if not isinstance(hunk, dict):
            return None
        start, lines = hunk.get("oldStart"), hunk.get("lines")
        if not isinstance(start, int) or not isinstance(lines, list):
            return None
        start = max(start - 1, 0)
        if start < position or start > len(old):
            return None
        out.extend(old[position:start])
        position = start
        count = hunk.get("oldLines")
        if isinstance(count, int) and count != sum(
            1 for e in lines if isinstance(e, str) and e[:1] in (" ", "-")
        ):
            return None
        last = ""
        for entry in lines:
            if not isinstance(entry, str) or not entry:
                return None
            tag, text = entry[0], entry[1:]
            if tag in " -":
                if position >= len(old) or not _matches(old[position], text):
                    return None
                if tag == " ":
                    out.append(old[position])
                position += 1
            elif tag == "+":
                out.append(text + "\n")
            elif tag == "\\":
                if last == "+" and out:
                    out[-1] = out[-1].removesuffix("\n")
                continue
            else:
                return None
            last = tag
    out.extend(old[position:])
    return "".join(out)


def written_content(result: Mapping[str, Any]) -> str | None:
    """The file as a Write/Edit/MultiEdit ``toolUseResult`` left it, or None."""
    content = result.get("content")
    if result.get("type") in ("create", "update") and isinstance(content, str):
        return content
    original = result.get("originalFile")
    if not isinstance(original, str):
        return None
    patched = apply_structured_patch(original, result.get("structuredPatch"))
    if patched is not None:
        return patched
    old, new = result.get("oldString"), result.get("newString")
    if isinstance(old, str) and isinstance(new, str) and old and old in original:
        return (
            original.replace(old, new)
            if result.get("replaceAll")
            else original.replace(old, new, 1)
        )
    return None


def _tool_name(result: Mapping[str, Any]) -> ToolName:
    if result.get("type") in ("create", "update"):
        return "Write"
    return "MultiEdit" if isinstance(result.get("edits"), list) else "Edit"


@dataclass(frozen=True)
class AgentWrite:
    """One file write a tool result records.

    ``original`` is ``originalFile`` (None when the write created the file, or when it is
    not a string: see ``created``); ``content`` is the file as the write left it (None
    when it cannot be replayed)."""

    path: str
    timestamp: str | None
    line: int
    tool: ToolName
    created: bool
    original: str | None
    content: str | None


def parse_agent_write(record: Record) -> AgentWrite | None:
    """The write a tool-result record describes (Write, Edit, MultiEdit), or None."""
    result = record.get("toolUseResult")
    if not isinstance(result, dict) or "structuredPatch" not in result:
        return None
    path = result.get("filePath")
    if not isinstance(path, str):
        return None
    original = result.get("originalFile")
    return AgentWrite(
        path=path,
        timestamp=record.timestamp,
        line=record.line or 0,
        tool=_tool_name(result),
        created=result.get("type") == "create" or original is None,
        original=original if isinstance(original, str) else None,
        content=written_content(result),
    )
