"""A hit's snippet, cut from its text read again where its entry says it is.

The index keeps no copy of the text (:mod:`.database`), so for the hits a query keeps,
and only for them, each line is read at its offset and its row's text made again
(:func:`~sessiontree.catalog.search_index.texts.row_text`). FTS5 then cuts the snippets
itself, in a table of those texts alone made for the query (in memory, the index's own
tokenizer): the highlights are the words the index matched, found as it finds them.

A line that is not the record the index saw (the file changed since, and the index was
not brought up to date) gives no snippet: an empty one, never another record's text.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sessiontree.catalog.search_index.database import TOKENIZE
from sessiontree.catalog.search_index.texts import iter_records, row_text
from sessiontree.model.records import Line
from sessiontree.storage.layout import Layout

#: Tokens of text around the match in a snippet (FTS5 allows at most 64).
SNIPPET_TOKENS = 24
#: Hits whose texts are read and snipped at a time.
BATCH = 500


@dataclass(frozen=True)
class RowPlace:
    """Where a hit's text is: its row, its file, its line, which part of the record."""

    row_id: int
    path: str
    history: bool
    uuid: str | None
    line: int
    offset: int
    length: int
    part: int


def row_texts(places: Iterable[RowPlace]) -> dict[int, str]:
    """The text of each row, read from its file (rows whose line changed are left out)."""
    by_file: dict[str, list[RowPlace]] = defaultdict(list)
    for place in places:
        by_file[place.path].append(place)
    texts: dict[int, str] = {}
    for path, rows in by_file.items():
        rows.sort(key=lambda p: p.offset)
        lines = {p.line: Line(p.line, p.offset, p.length, None) for p in rows}
        layout = Layout(Path(path).parent)  # (history.jsonl is at the root: its pastes)
        try:
            records = {r.line: r for r in iter_records(path, lines.values())}
        except OSError:
            continue  # gone since it was indexed
        for place in rows:
            record = records.get(place.line)
            if record is None or (place.uuid is not None and record.uuid != place.uuid):
                continue
            text = row_text(record, history=place.history, part=place.part, layout=layout)
            if text:
                texts[place.row_id] = text
    return texts


def cut_snippets(
    conn: sqlite3.Connection, match: str, places: Sequence[RowPlace]
) -> dict[int, str]:
    """The snippet of each row (its highlights marked as the index's are), by row id;
    the texts read :data:`BATCH` rows at a time, in file order (a query without a limit
    may keep every match of a common word: never all their texts at once)."""
    ordered = sorted(places, key=lambda p: (p.path, p.offset))
    snippets: dict[int, str] = {}
    if not ordered:
        return snippets
    conn.execute("PRAGMA temp_store = MEMORY")  # (no temporary file for a page's texts)
    conn.execute(f"CREATE VIRTUAL TABLE temp.cut USING fts5(body, tokenize = {TOKENIZE})")
    try:
        for at in range(0, len(ordered), BATCH):
            texts = row_texts(ordered[at : at + BATCH])
            conn.executemany("INSERT INTO temp.cut (rowid, body) VALUES (?, ?)", texts.items())
            snippets.update(
                conn.execute(
                    "SELECT rowid, snippet(cut, 0, char(2), char(3), '…', ?) FROM temp.cut "
                    "WHERE cut MATCH ?",
                    (SNIPPET_TOKENS, match),
                ).fetchall()
            )
            conn.execute("DELETE FROM temp.cut")
    finally:
        conn.execute("DROP TABLE temp.cut")
    return snippets
