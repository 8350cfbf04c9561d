"""``history.jsonl``: every prompt the user typed, across projects, pastes expanded.

``display`` holds ``[Pasted text #N +L lines]`` placeholders. Short pastes are stored
inline in ``pastedContents``; long ones live in ``paste-cache/<contentHash>.txt``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sessiontree.model.builders.history import HistoryLine, expand_pastes, parse_history_entry
from sessiontree.model.records import Problem
from sessiontree.storage.jsonl import decode_record, iter_records
from sessiontree.storage.layout import Layout, StrPath, is_paste_hash


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


def parse_history_lines(lines: Iterable[bytes]) -> Iterator[HistoryLine]:
    """History lines given as their bytes (the store's, merged from every machine),
    parsed as :func:`iter_history_lines` parses the file's, numbered in the order given."""
    for number, raw in enumerate(lines, 1):
        value, _ = decode_record(raw)
        if value is not None:
            yield parse_history_entry(value, line=number)


def iter_history_lines(layout: Layout) -> Iterator[HistoryLine]:
    """Every readable line of ``history.jsonl``, parsed, in file order (lines that are no
    JSON object are skipped; none at all when there is no history). The one reader of the
    file: the ``history`` command, ``doctor`` and retention all go through it."""
    path = layout.history_path
    if not path.is_file():
        return
    for record in iter_records(path):
        yield parse_history_entry(record.raw, line=record.line)


def read_paste(layout: Layout, content_hash: str) -> str | None:
    """A stored paste's text, bytes as stored (``\r\n`` kept; invalid UTF-8 replaced);
    None for a value that is no paste hash, or a file that cannot be read."""
    if not is_paste_hash(content_hash):
        return None
    try:
        data = layout.paste_path(content_hash).read_bytes()
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def iter_history(
    layout: Layout | None,
    *,
    project: StrPath | None = None,
    search: str | None = None,
    lines: Iterable[HistoryLine] | None = None,
    paste: Callable[[str], str | None] | None = None,
) -> Iterator[HistoryEntry]:
    """History entries in file order, filtered by project path (exactly as recorded) and
    text (case-insensitive, in the text with pastes expanded). ``lines`` and ``paste``:
    history read elsewhere (the store) and where its pastes are, instead of ``layout``."""
    project = None if project is None else os.fspath(project)
    needle = search.casefold() if search else None
    if lines is None or paste is None:
        assert layout is not None
        root = layout
        lines = iter_history_lines(root) if lines is None else lines
        paste = paste or (lambda content_hash: read_paste(root, content_hash))
    for line in lines:
        if line.display is None:
            continue
        if project is not None and line.project != project:
            continue
        texts = line.paste_texts(paste)
        text = expand_pastes(line.display, texts)
        if needle is not None and needle not in text.casefold():
            continue
        timestamp = line.timestamp
        yield HistoryEntry(
            display=line.display,
            text=text,
            timestamp=timestamp if isinstance(timestamp, int) else None,
            project=line.project,
            session_id=line.session_id,
        )


def find_missing_pastes(layout: Layout) -> list[Problem]:
    """History entries whose large paste is not in ``paste-cache/`` (retention removed it,
    or it was never written): ``history`` then shows the placeholder."""
    problems: list[Problem] = []
    for line in iter_history_lines(layout):
        for item in line.pasted.values():
            content_hash = item.content_hash
            if content_hash is not None and not (
                is_paste_hash(content_hash) and layout.paste_path(content_hash).is_file()
            ):
                problems.append(
                    Problem(
                        "missing-paste",
                        str(layout.history_path),
                        line.line,
                        f"paste-cache/{content_hash}.txt is not there",
                    )
                )
    return problems
