"""Exporting a session: Markdown or HTML of the active path, or JSON of every record.

JSON export splices the stored bytes of each record (no decode, no re-encode), so it
streams a transcript of any size and keeps every unknown field exactly as written.

Markdown export renders text from the transcript (a prompt, a reply, a tool's output,
anything a user pasted or a tool printed) so that a Markdown renderer shows it as text:

- what goes in a fence (a tool call's input, a tool's result) goes verbatim in a fence
  longer than any run of backticks in it (CommonMark closes a fence on a run at least
  as long: a ```` ``` ```` in a tool's output closed the fence early);
- a prompt's or reply's text stays Markdown (lists, emphasis, its own fenced code
  blocks, kept verbatim and closed if left open), but outside its fences ``<`` and
  ``>`` are escaped, and ``&`` where it would start an entity, so no HTML (``<script>``,
  ``<img onerror>``, a comment) reaches the renderer; and a line that would make a
  heading is escaped, so a text cannot forge a turn's ``## User``;
- the names and ids around them are escaped inline text.

HTML export renders the web viewer's templates (:func:`iter_html`), autoescaped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import Record
from sessiontree.storage.jsonl import iter_raw_lines
from sessiontree.views.marks import ON_PATH, REWOUND, SUMMARIZED
from sessiontree.views.shapes import is_shown

if TYPE_CHECKING:
    from sessiontree.views.outline import OutlineSection


def _blocks_md(record: Record, *, markdown: bool = True) -> str:
    """The record's text, tool calls and results, as Markdown: safe to render
    (``markdown``), or as it is, for HTML to escape whole into a ``<pre>``."""
    prose = _safe_prose if markdown else _as_is
    code = _code_span if markdown else _backticked
    plain = _inline_text if markdown else _as_is
    content = record.content
    if isinstance(content, str):
        return prose(content)
    parts = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append(prose(str(block.get("text", ""))))
        elif kind == "tool_use":
            body = json.dumps(block.get("input"), indent=2, ensure_ascii=False)
            name, ident = plain(str(block.get("name"))), code(str(block.get("id")))
            parts.append(f"**{name}** {ident}\n\n{_fence(body, 'json')}")
        elif kind == "tool_result":
            inner = block.get("content")
            text = inner if isinstance(inner, str) else Record({"content": inner}).text()
            ident = code(str(block.get("tool_use_id")))
            parts.append(f"Result of {ident}:\n\n{_fence(text)}")
        else:
            parts.append(f"_[{plain(str(kind))}]_")
    return "\n\n".join(parts)


_BACKTICKS = re.compile(r"`+")


def _fence(content: str, info: str = "") -> str:
    """``content`` verbatim in a fenced code block whose fence is longer than any run of
    backticks in it, and at least 3: CommonMark closes a fence only on a line of a run at
    least as long as the one that opened it."""
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{content}\n{ticks}"


#: CommonMark's line endings (a lone CR ends a line too: splitting on "\n" only would
#: see a fence's closing line where a renderer sees none, or the other way round).
_LINE_END = re.compile(r"\r\n|\r|\n")
#: A line that opens a fenced code block: up to 3 spaces, 3+ backticks and an info
#: string without one, or 3+ tildes and any info string.
_FENCE_OPEN = re.compile(r"( {0,3})(`{3,}(?=[^`]*$)|~{3,})(.*)")
#: A line that would make a heading: ATX (``#`` to ``######``) or a setext underline.
_HEADING = re.compile(r"( {0,3})(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$)")
#: An ``&`` that a renderer would read as the start of an entity (``&amp;``, ``&#60;``).
_ENTITY_AMP = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{0,31};)")
#: Characters that make inline Markdown (emphasis, code, links, strikethrough, tables).
_INLINE_MARKUP = re.compile(r"([\\`*_\[\]!|~])")
#: What an id is made of: shown as code when it is only that.
_PLAIN_ID = re.compile(r"[A-Za-z0-9_.:+@/-]+")


def _escape_html(text: str) -> str:
    """No tag, comment or entity: ``<`` and ``>`` always, ``&`` where it starts an entity."""
    return _ENTITY_AMP.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")


def _safe_prose(text: str) -> str:
    """A prompt's or reply's Markdown, safe to render: its own fenced code blocks verbatim
    (one left open is closed, or it would swallow the rest of the document), and outside
    them no HTML and no heading."""
    out: list[str] = []
    open_fence: tuple[str, int] | None = None  # the text's own fence: its char and length
    for line in _LINE_END.split(text):
        if open_fence is not None:
            char, length = open_fence
            if re.fullmatch(rf" {{0,3}}{re.escape(char)}{{{length},}}[ \t]*", line):
                # Closed (the same char, a run at least as long): by the same fence as it
                # was opened with, which renders the same and reads plainly.
                out.append(char * length)
                open_fence = None
            else:
                out.append(line)
            continue
        opening = _FENCE_OPEN.fullmatch(line)
        if opening:
            indent, run, info = opening.groups()
            open_fence = (run[0], len(run))
            out.append(f"{indent}{run}{_escape_html(info)}")
            continue
        heading = _HEADING.match(line)
        if heading:
            line = f"{line[: heading.end(1)]}\\{line[heading.end(1) :]}"
        out.append(_escape_html(line))
    if open_fence is not None:
        out.append(open_fence[0] * open_fence[1])
    return "\n".join(out)


def _inline_text(text: str) -> str:
    """A name or id as inline text: one line, no HTML, no inline markup."""
    flat = " ".join(_LINE_END.split(text))
    return _INLINE_MARKUP.sub(r"\\\1", _escape_html(flat))


def _code_span(text: str) -> str:
    """An id as code when it is only an id's characters, else as escaped inline text."""
    return f"`{text}`" if _PLAIN_ID.fullmatch(text) else _inline_text(text)


def _backticked(text: str) -> str:
    return f"`{text}`"


def _as_is(text: str) -> str:
    return text


def _heading(record: Record) -> str:
    if record.type == "system" and record.subtype == "compact_boundary":
        return "Compacted"
    if record.is_tool_result:
        return "Tool result"
    return {"user": "User", "assistant": "Assistant"}.get(record.type or "", "System")


def iter_markdown(transcript: Transcript, *, all_branches: bool = False) -> Iterator[str]:
    """The active path's records under ``## `` headings; ``all_branches``: every branch,
    each a ``## `` section (the active path first) with its records under ``### ``, each
    record once (:mod:`sessiontree.views.outline`)."""
    yield f"# Session {_inline_text(transcript.session_id)}\n\n"
    if not all_branches:
        yield from _records_md(transcript.active_records(), level="##")
        return
    from sessiontree.views.outline import ShownAbove, iter_outline

    for part in iter_outline(transcript, ShownAbove(transcript.tree)):
        yield f"## {_section_heading_md(part)}\n\n"
        yield from _records_md(part.records, level="###")


def _records_md(records: Iterable[Record], *, level: str) -> Iterator[str]:
    for record in records:
        if not is_shown(record):
            continue
        when = _inline_text(record.timestamp or "")
        yield f"{level} {_heading(record)}\n\n_{when}_ · {_code_span(record.uuid or '')}\n\n"
        yield _blocks_md(record).rstrip() + "\n\n"


def _section_heading_md(part: OutlineSection) -> str:
    section = part.section
    said = {
        "active": f"{ON_PATH} The active path (what resuming sends)",
        "rewound": f"{REWOUND} A rewound branch",
        "summarized": f"{SUMMARIZED} Summarized by a compaction",
    }[section.kind]
    if part.fork is not None:
        said += f" from {_code_span(part.fork[:8])}"
    if section.loop:
        said += " (its parents loop: see doctor)"
    count = len(part.shown)
    return f"{said} · {count} record{'' if count == 1 else 's'}"


def iter_html(transcript: Transcript, *, all_branches: bool = False) -> Iterator[str]:
    """One self-contained HTML file: the session's title as its title, the tree drawn
    with every branch, and the conversation of the active path (``all_branches``: of
    every branch, as :mod:`sessiontree.views.outline` cuts it, the active path first and
    marked, each tree node a link to its record), rendered by the web viewer's templates
    (:mod:`sessiontree.views.html`); the stylesheet inlined, no script, a
    Content-Security-Policy that lets nothing load or run. Everything from the
    transcript is escaped (prose rendered as Markdown with raw HTML off); streamed, one
    record at a time."""
    from markupsafe import Markup

    from sessiontree.views.html import environment, static_bytes
    from sessiontree.views.html.conversation import build_items
    from sessiontree.views.html.graph import GraphNode
    from sessiontree.views.html.pages import (
        graph_view,
        iter_items,
        session_title,
        summarized_record,
    )
    from sessiontree.views.outline import ShownAbove, iter_outline

    title = session_title(transcript)
    above = ShownAbove(transcript.tree)

    on_path = set(transcript.active_path)

    def href(node: GraphNode) -> str | None:
        """A node's record in the file: the last of its records shown, or the nearest
        shown above them (a turn's ``turn_duration`` note is not shown); without
        ``all_branches``, one of the active path's only."""
        if not all_branches and not node.on_path:
            return None
        shown = above(node.tip)
        return f"#r-{shown}" if shown is not None and (all_branches or shown in on_path) else None

    def summarized_href(logical: str) -> str | None:
        """The conversation a compaction summarized (:func:`summarized_record`), shown."""
        at = summarized_record(transcript, logical, on_path=on_path)
        shown = above(at) if at is not None else None
        return f"#r-{shown}" if shown is not None and shown not in on_path else None

    sections = (
        (
            (part, (it for record in part.records for it in build_items([record])))
            for part in iter_outline(transcript, above)
        )
        if all_branches
        else None
    )
    template = environment().get_template("export.html")
    yield from template.generate(
        standalone=True,
        page_title=title,
        inline_css=Markup(static_bytes("viewer.css").decode()),  # ours
        title=title,
        session_id=transcript.session_id,
        cwd=transcript.cwd,
        graph=graph_view(transcript),
        export_href=href,
        summarized_href=summarized_href,
        items=None if all_branches else iter_items(transcript, transcript.active_path),
        sections=sections,
    )
    yield "\n"


def iter_json(transcript: Transcript) -> Iterator[bytes]:
    """``{sessionId, leafUuid, activePath, records: [...]}`` with records as stored bytes."""
    head = {
        "sessionId": transcript.session_id,
        "leafUuid": transcript.leaf,
        "activePath": transcript.active_path,
    }
    yield json.dumps(head)[:-1].encode() + b', "records": [\n'
    first = True
    for raw in iter_raw_lines(transcript.lines_from, transcript.scan.lines):
        yield (b"" if first else b",\n") + raw.replace(b"\x00", b"")
        first = False
    yield b"\n]}\n"
