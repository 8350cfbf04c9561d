"""Drawing a turn as it happens (rich): the assistant's text streamed, each tool call
folded to one line with its input summarized, each result to one line under it.

The summaries are pure functions (:func:`tool_call_line`, :func:`tool_result_line`);
:class:`TurnView` holds the console and the callbacks a turn's ``TurnEvents`` takes. The
callbacks may come from a tool's worker thread: output is serialized by a lock. Nothing
here colours text when the console was made with ``no_color`` (``NO_COLOR``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from rich.console import Console
from rich.text import Text

from sessiontree.model.records import Record
from sessiontree.views.text import printable

#: Which input field says what a call does, per tool (the client's names).
_SUBJECT = {
    "Read": ("file_path",),
    "Write": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "Bash": ("command",),
    "Glob": ("pattern", "path"),
    "Grep": ("pattern", "path"),
    "WebFetch": ("url",),
    "WebSearch": ("query",),
    "Task": ("description",),
    "Agent": ("description",),
}

LINE = 100


def _flat(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(printable(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_call_line(name: str, tool_input: Mapping[str, Any], *, limit: int = LINE) -> str:
    """``Bash(sleep 5)``, ``Write(notes.md)``, ``Grep(TODO, src)``: the tool and what it
    acts on; for a tool not known here, its first string input."""
    keys = _SUBJECT.get(name)
    if keys is None:
        keys = tuple(k for k, v in tool_input.items() if isinstance(v, str))[:1]
    parts = [_flat(tool_input[k], limit) for k in keys if tool_input.get(k) not in (None, "")]
    inner = ", ".join(parts)
    if name == "Edit" and tool_input.get("replace_all"):
        inner += " (all)"
    return _flat(f"{name}({inner})", limit)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, Mapping):
                if block.get("type") == "text":
                    texts.append(str(block.get("text", "")))
                else:
                    texts.append(f"[{block.get('type')}]")
        return "\n".join(texts)
    return ""


def tool_result_line(content: Any, *, is_error: bool, limit: int = LINE) -> str:
    """One line for a result: an error's first line; otherwise the first line of the
    output and how many more there are (``(no output)`` for none)."""
    text = _content_text(content).strip("\n")
    if not text.strip():
        return "Error" if is_error else "(no output)"
    lines = text.splitlines()
    first = _flat(lines[0], limit)
    if is_error:
        return f"Error: {first}" if not first.lower().startswith("error") else first
    more = len(lines) - 1
    return first if not more else f"{first} … +{more} line{'s' if more != 1 else ''}"


#: What a line of a conversation drawn again is: a prompt, the assistant's text, a tool
#: call, its result (``result-error``), a compaction's summary.
LineKind = Literal["prompt", "text", "call", "result", "result-error", "summary"]


def conversation_lines(
    records: Iterable[Record], *, limit: int = LINE
) -> list[tuple[LineKind, str]]:
    """A conversation drawn again (a resumed session): each prompt's first line (and how
    many more it has), the assistant's text, each tool call and result folded to one line
    as a turn draws them, a compaction's summary as one line. Meta records, the client's
    own commands' rows and sidechains are left out, as the client's resumed screen does."""
    lines: list[tuple[LineKind, str]] = []
    for record in records:
        if record.type not in ("user", "assistant") or record.is_meta or record.is_sidechain:
            continue
        if record.is_compact_summary:
            lines.append(("summary", "(earlier conversation compacted into a summary)"))
            continue
        content = record.content
        if record.type == "user" and isinstance(content, str):
            text = content.strip("\n")
            if not text or text.startswith(("<command-", "<local-command-")):
                continue
            first, *more = text.splitlines()
            extra = f" … +{len(more)} line{'s' if len(more) != 1 else ''}" if more else ""
            lines.append(("prompt", _flat(first, limit) + extra))
            continue
        for block in content if isinstance(content, list) else []:
            kind = block.get("type")
            if kind == "text":
                text = str(block.get("text", "")).strip()
                if not text or text.startswith(("<command-", "<local-command-")):
                    continue
                if record.type == "user":
                    lines.append(("prompt", _flat(text.splitlines()[0], limit)))
                else:
                    lines.append(("text", text))
            elif kind == "tool_use":
                tool_input = block.get("input")
                lines.append(
                    (
                        "call",
                        tool_call_line(
                            str(block.get("name", "")),
                            tool_input if isinstance(tool_input, Mapping) else {},
                            limit=limit,
                        ),
                    )
                )
            elif kind == "tool_result":
                error = block.get("is_error") is True
                summary = tool_result_line(block.get("content", ""), is_error=error, limit=limit)
                lines.append(("result-error" if error else "result", summary))
    return lines


class TurnView:
    """Draws one turn after another on ``console``."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._lock = threading.RLock()
        self._in_text = False  # the cursor is after streamed text, mid-line

    def _end_text(self) -> None:
        if self._in_text:
            self.console.print()
            self._in_text = False

    def on_text(self, chunk: str) -> None:
        with self._lock:
            if not self._in_text:
                self.console.print(Text("⏺ ", style="bold"), end="")
                self._in_text = True
            self.console.print(Text(printable(chunk)), end="")
            self.console.file.flush()

    def on_tool_call(self, name: str, tool_input: Mapping[str, Any]) -> None:
        with self._lock:
            self._end_text()
            line = Text("⏺ ", style="bold green")
            line.append(tool_call_line(name, tool_input, limit=max(20, self.console.width - 4)))
            self.console.print(line)

    def on_tool_result(self, _call: str, outcome: Any) -> None:
        with self._lock:
            self._end_text()
            error = bool(getattr(outcome, "is_error", False))
            summary = tool_result_line(
                getattr(outcome, "content", ""),
                is_error=error,
                limit=max(20, self.console.width - 6),
            )
            self.console.print(Text(f"  ⎿  {summary}", style="red" if error else "dim"))

    def replay(self, lines: Iterable[tuple[LineKind, str]]) -> None:
        """A conversation drawn again (:func:`conversation_lines`), as its turns were."""
        with self._lock:
            self._end_text()
            for kind, text in lines:
                if kind == "prompt":
                    self.console.print(Text(f"> {text}", style="bold"))
                elif kind == "text":
                    self.console.print(Text(f"⏺ {printable(text)}"))
                elif kind == "call":
                    line = Text("⏺ ", style="bold green")
                    line.append(text)
                    self.console.print(line)
                elif kind == "summary":
                    self.console.print(Text(f"  {text}", style="dim"))
                else:
                    style = "red" if kind == "result-error" else "dim"
                    self.console.print(Text(f"  ⎿  {text}", style=style))

    def on_notice(self, text: str) -> None:
        with self._lock:
            self._end_text()
            self.console.print(Text(f"  {printable(text)}", style="yellow"))

    def finish(self) -> None:
        """The turn is over: end a line of streamed text."""
        with self._lock:
            self._end_text()

    def say(self, text: str, style: str = "") -> None:
        """One line of the host's own (a command's result)."""
        with self._lock:
            self._end_text()
            self.console.print(Text(text, style=style))
