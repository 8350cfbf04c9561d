"""``history.jsonl``: every prompt the user typed, across projects, pastes expanded.

``display`` holds ``[Pasted text #N +L lines]`` placeholders. Short pastes are stored
inline in ``pastedContents``; long ones live in ``paste-cache/<contentHash>.txt``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sessiontree.model.records import Problem
from sessiontree.storage.jsonl import iter_records
from sessiontree.storage.layout import Layout, is_paste_hash

_PLACEHOLDER = re.compile(r"\[(?:Pasted text|Image) #(\d+)(?: \+\d+ lines)?\]")


@dataclass(frozen=True)
class HistoryEntry:
    display: str
    text: str
    timestamp: int | None
    project: str | None
    session_id: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "display": self.display,
            "text": self.text,
            "timestamp": self.timestamp,
            "project": self.project,
            "sessionId": self.session_id,
        }


def expand_pastes(display: str, pasted: dict[str, Any], read_paste: Any) -> str:
    """Replace each placeholder by its pasted text (inline, else from the paste cache)."""

    def replace(match: re.Match[str]) -> str:
        item = pasted.get(match.group(1))
        if not isinstance(item, dict) or item.get("type", "text") != "text":
            return match.group(0)
        content = item.get("content")
        if isinstance(content, str):
            return content
        content_hash = item.get("contentHash")
        if isinstance(content_hash, str):
            found = read_paste(content_hash)
            if isinstance(found, str):
                return found
        return match.group(0)

    return _PLACEHOLDER.sub(replace, display)


def iter_history(
    layout: Layout, *, project: str | None = None, search: str | None = None
) -> Iterator[HistoryEntry]:
    """History entries in file order, filtered by project path and text (case-insensitive)."""
    path = layout.history_path
    if not path.is_file():
        return

    def read_paste(content_hash: str) -> str | None:
        if not is_paste_hash(content_hash):
            return None
        try:
            data = layout.paste_path(content_hash).read_bytes()  # bytes: keep \r\n as stored
            return data.decode("utf-8", errors="replace")
        except OSError:
            return None

    needle = search.casefold() if search else None
    for record in iter_records(path):
        display = record.get("display")
        if not isinstance(display, str):
            continue
        where = record.get("project")
        if project is not None and where != project:
            continue
        pasted = record.get("pastedContents")
        text = expand_pastes(display, pasted if isinstance(pasted, dict) else {}, read_paste)
        if needle is not None and needle not in text.casefold():
            continue
        timestamp = record.get("timestamp")
        session_id = record.get("sessionId")
        yield HistoryEntry(
            display=display,
            text=text,
            timestamp=timestamp if isinstance(timestamp, int) else None,
            project=where if isinstance(where, str) else None,
            session_id=session_id if isinstance(session_id, str) else None,
        )


def find_missing_pastes(layout: Layout) -> list[Problem]:
    """History entries whose large paste is not in ``paste-cache/`` (retention removed it,
    or it was never written): ``history`` then shows the placeholder."""
    problems: list[Problem] = []
    path = layout.history_path
    if not path.is_file():
        return problems
    for record in iter_records(path):
        pasted = record.get("pastedContents")
        if not isinstance(pasted, dict):
            continue
        for item in pasted.values():
            content_hash = item.get("contentHash") if isinstance(item, dict) else None
            if isinstance(content_hash, str) and not (
                is_paste_hash(content_hash) and layout.paste_path(content_hash).is_file()
            ):
                problems.append(
                    Problem(
                        "missing-paste",
                        str(path),
                        record.line,
                        f"paste-cache/{content_hash}.txt is not there",
                    )
                )
    return problems
