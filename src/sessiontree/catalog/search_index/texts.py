"""The text of each row of the index, made from its record the same way twice: when the
record is indexed, and when a hit's snippet is cut (the index keeps no copy of it).

A transcript record gives one row per searchable part with text
(:func:`~sessiontree.model.search_parts.parse_search_parts`; a row names its part by its
place in that list); a ``history.jsonl`` entry gives one row, what was typed with its
pastes put back. Both are decoded with the same fields (``SearchFields``), so the text is
the same whenever the line is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sessiontree.catalog.search_index.database import MARK_CLOSE, MARK_OPEN
from sessiontree.model.records import Line, Record
from sessiontree.model.search_parts import SearchFields, parse_search_parts
from sessiontree.storage.jsonl import iter_path_records
from sessiontree.storage.layout import Layout, StrPath

if TYPE_CHECKING:  # (history's reading is imported by the functions of its rows: a
    # search whose hits are all in transcripts loads none of it)
    from sessiontree.model.builders.history import HistoryLine


def indexed_text(text: str) -> str:
    """Text as indexed: without the characters that mark a snippet's highlights."""
    if MARK_OPEN in text or MARK_CLOSE in text:
        return text.replace(MARK_OPEN, " ").replace(MARK_CLOSE, " ")
    return text


def parse_history(record: Record, line: int) -> HistoryLine:
    """A ``history.jsonl`` record as a history entry (``line``: its line number)."""
    from sessiontree.model.builders.history import parse_history_entry

    return parse_history_entry(record.raw, line=line)


def history_text(entry: HistoryLine, layout: Layout) -> str:
    """What a history entry's row holds: what was typed, its pastes put back."""
    from sessiontree.history.log import read_paste
    from sessiontree.model.builders.history import expand_pastes

    pastes = entry.paste_texts(lambda content_hash: read_paste(layout, content_hash))
    return expand_pastes(entry.display or "", pastes)


def iter_records(
    path: StrPath, lines: Iterable[Line], *, read_ahead: bool = False
) -> Iterator[Record]:
    """The records of ``lines`` of one file, decoded with the fields every row's text is
    made from (indexing reads ahead through a file; a snippet reads its lines alone)."""
    return iter_path_records(Path(path), lines, fields=SearchFields, read_ahead=read_ahead)


def row_text(record: Record, *, history: bool, part: int, layout: Layout) -> str | None:
    """The text of the row a record gave at ``part`` (a history entry gives one), as
    indexed; None if the record has no such row (its line changed since)."""
    if history:
        entry = parse_history(record, record.line or 0)
        return indexed_text(history_text(entry, layout)) if entry.display else None
    parts = parse_search_parts(record.raw)
    if not 0 <= part < len(parts) or not parts[part].text:
        return None
    return indexed_text(parts[part].text)
