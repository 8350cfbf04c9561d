"""Exporting a session: Markdown or HTML of the active path, or JSON of every record.

JSON export splices the stored bytes of each record (no decode, no re-encode), so it
streams a transcript of any size and keeps every unknown field exactly as written.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import Record
from sessiontree.storage.jsonl import iter_raw_lines
from sessiontree.views.shapes import is_shown


def _blocks_md(record: Record) -> str:
    content = record.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            body = json.dumps(block.get("input"), indent=2, ensure_ascii=False)
            parts.append(f"**{block.get('name')}** `{block.get('id')}`\n\n```json\n{body}\n```")
        elif kind == "tool_result":
            inner = block.get("content")
            text = inner if isinstance(inner, str) else Record({"content": inner}).text()
            parts.append(f"Result of `{block.get('tool_use_id')}`:\n\n```\n{text}\n```")
        else:
            parts.append(f"_[{kind}]_")
    return "\n\n".join(parts)


def _heading(record: Record) -> str:
    if record.type == "system" and record.subtype == "compact_boundary":
        return "Compacted"
    if record.is_tool_result:
        return "Tool result"
    return {"user": "User", "assistant": "Assistant"}.get(record.type or "", "System")


def iter_markdown(transcript: Transcript) -> Iterator[str]:
    yield f"# Session {transcript.session_id}\n\n"
    for record in transcript.active_records():
        if not is_shown(record):
            continue
        yield f"## {_heading(record)}\n\n_{record.timestamp or ''}_ · `{record.uuid}`\n\n"
        yield _blocks_md(record).rstrip() + "\n\n"


def iter_html(transcript: Transcript) -> Iterator[str]:
    title = html.escape(f"Session {transcript.session_id}")
    yield (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        "<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto}"
        "section{border-left:4px solid #ccc;padding:.2rem 1rem;margin:1rem 0}"
        ".user{border-color:#2a7}.assistant{border-color:#27c}pre{white-space:pre-wrap;"
        "background:#f6f6f6;padding:.5rem}</style></head><body>"
        f"<h1>{title}</h1>"
    )
    for record in transcript.active_records():
        if not is_shown(record):
            continue
        heading = html.escape(_heading(record))
        yield (
            f"<section class='{html.escape(record.type or '')}'><h2>{heading}</h2>"
            f"<small>{html.escape(record.timestamp or '')} · {html.escape(record.uuid or '')}"
            f"</small><pre>{html.escape(_blocks_md(record))}</pre></section>"
        )
    yield "</body></html>\n"


def iter_json(transcript: Transcript) -> Iterator[bytes]:
    """``{sessionId, leafUuid, activePath, records: [...]}`` with records as stored bytes."""
    head = {
        "sessionId": transcript.session_id,
        "leafUuid": transcript.leaf,
        "activePath": transcript.active_path,
    }
    yield json.dumps(head)[:-1].encode() + b', "records": [\n'
    first = True
    for raw in iter_raw_lines(transcript.path, transcript.scan.lines):
        yield (b"" if first else b",\n") + raw.replace(b"\x00", b"")
        first = False
    yield b"\n]}\n"
