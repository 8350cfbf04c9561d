"""Search every branch of every session, reading as little as the query allows.

For a plain ASCII query (no quote or backslash, which JSON would escape) the stored bytes
contain the query exactly where the decoded text does, so a file without it is skipped
after one byte scan and only the lines that contain it are decoded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import Line
from sessiontree.storage.jsonl import iter_path_records, iter_raw_lines

CHUNK = 8 * 1024 * 1024
SNIPPET_CONTEXT = 60


def literal_needle(query: str) -> bytes | None:
    """The lower-cased bytes to pre-filter with, or None when bytes cannot be trusted."""
    if query.isascii() and query.isprintable() and '"' not in query and "\\" not in query:
        return query.lower().encode("ascii")
    return None


def file_contains(path: Path, needle: bytes) -> bool:
    """Whether the file's lower-cased bytes contain ``needle`` (chunked, with overlap)."""
    overlap = b""
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            window = overlap + chunk.lower()
            if needle in window:
                return True
            overlap = window[-(len(needle) - 1) :] if len(needle) > 1 else b""
    return False


def _snippet(text: str, at: int, length: int) -> str:
    start = max(0, at - SNIPPET_CONTEXT)
    flat = " ".join(text[start : at + length + SNIPPET_CONTEXT].split())
    return flat if len(flat) <= 160 else flat[:159] + "…"


def search_transcript(path: Path, query: str) -> Iterator[dict[str, Any]]:
    """Hits ``{sessionId, uuid, type, onActivePath, snippet}`` in one transcript."""
    needle = literal_needle(query)
    if needle is not None and not file_contains(path, needle):
        return
    transcript = Transcript.open(path)
    ordered: list[Line] = sorted(transcript.tree.nodes.values(), key=lambda ln: ln.number)
    if needle is not None:
        ordered = [
            line
            for line, raw in zip(ordered, iter_raw_lines(path, ordered), strict=True)
            if needle in raw.lower()
        ]
    on_path = set(transcript.active_path)
    folded = query.casefold()
    for record in iter_path_records(path, ordered):  # streamed: hits may be many
        text = record.text()
        at = text.casefold().find(folded)
        if at < 0:
            continue
        yield {
            "sessionId": transcript.session_id,
            "uuid": record.uuid,
            "type": record.type,
            "onActivePath": record.uuid in on_path,
            "snippet": _snippet(text, at, len(query)),
        }
