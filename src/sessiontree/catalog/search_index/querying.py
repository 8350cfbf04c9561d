"""Asking the index: ranked (bm25), filtered, snipped hits, each marked on or off its
transcript's active path as it is now."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from sessiontree.catalog.search_index.database import (
    MARK_CLOSE,
    MARK_OPEN,
    Source,
    meta_number,
    open_index,
    settled,
)
from sessiontree.catalog.search_index.snippets import RowPlace, cut_snippets
from sessiontree.errors import DataError, Refused
from sessiontree.model.search_parts import Kind, Role
from sessiontree.storage.layout import StrPath
from sessiontree.storage.skeleton_cache import SkeletonCache

#: Characters a snippet is cut to, around its first highlight.
SNIPPET_CHARS = 300


class QuerySyntaxError(Refused):
    """A query given as FTS5 syntax that FTS5 refuses (a usage error: exit 2)."""

    exit_code = 2

    def __init__(self, query: str, reason: str) -> None:
        super().__init__(f"not a valid FTS5 query: {query!r} ({reason})")
        self.query = query
        self.reason = reason


def describe(kind: str | None, type_: str | None, tool: str | None, source: str | None) -> str:
    """What a hit is, in a word or two: ``user``, ``assistant thinking``, ``Bash call``,
    ``Read result``, ``agent text`` (a subagent's)."""
    label = {
        "tool_use": f"{tool or 'tool'} call",
        "tool_result": f"{tool or 'tool'} result",
        "thinking": "assistant thinking",
        "summary": "summary",
        "history": "history",
    }.get(kind or "", type_ or kind or "record")
    return f"agent {label}" if source == "subagent" else label


def date_bound(text: str, *, end: bool) -> datetime:
    """A ``since``/``until`` bound: ISO 8601, a date or a date and time, in the local
    time zone unless it names one. A date alone stands for its whole day: ``end`` a date
    is up to the end of that day. Raises ValueError for anything else."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.astimezone()  # the local time zone
    return moment + timedelta(days=1) if end and len(text.strip()) <= 10 else moment


@dataclass(frozen=True)
class SearchHit:
    """One match: a part of a record (or a history entry), where it is, and a snippet
    whose ``highlights`` are the (start, end) character ranges of the matched text."""

    session_id: str | None
    uuid: str | None
    type: str | None
    kind: Kind
    role: Role
    tool_name: str | None
    timestamp: str | None
    project: str | None  # the cwd the session ran in (a history entry's project)
    project_dir: str | None  # the project folder's name under projects/
    path: str
    source: Source
    agent_id: str | None
    is_sidechain: bool
    line: int
    offset: int
    rank: float
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    on_active_path: bool

    @property
    def label(self) -> str:
        """What the hit is, in a word or two (:func:`describe`)."""
        return describe(self.kind, self.type, self.tool_name, self.source)

    def as_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "uuid": self.uuid,
            "type": self.type,
            "onActivePath": self.on_active_path,
            "snippet": self.snippet,
            "highlights": [list(pair) for pair in self.highlights],
            "rank": self.rank,
            "kind": self.kind,
            "role": self.role,
            "toolName": self.tool_name,
            "timestamp": self.timestamp,
            "project": self.project,
            "projectDir": self.project_dir,
            "path": self.path,
            "source": self.source,
            "agentId": self.agent_id,
            "isSidechain": self.is_sidechain,
            "line": self.line,
            "offset": self.offset,
        }


def phrase_query(text: str) -> str:
    """Plain words as an FTS5 query: each whitespace-separated word a quoted phrase (its
    own ``"`` doubled) whose last token may go on (a prefix: ``cels`` finds "Celsius",
    ``json`` "jsonl", as people type part of a word), all of them required. ``foo-bar``
    is the phrase "foo bar…"; no word is FTS5 syntax."""
    return " ".join('"' + word.replace('"', '""') + '"*' for word in text.split())


#: What SQLite says of a MATCH it cannot parse (any other error is not the query's).
_SYNTAX_ERRORS = ("fts5", "syntax error", "no such column", "unterminated", "unknown special")


@dataclass(frozen=True)
class Filters:
    """What :func:`query` narrows hits to; None (or empty) for no limit of that kind."""

    project_dirs: Collection[StrPath] | None = None  # project folders (paths or names)
    session_ids: Collection[str] | None = None
    since: datetime | float | None = None  # a moment (aware) or epoch seconds, inclusive
    until: datetime | float | None = None  # exclusive
    roles: Collection[Role] | None = None
    kinds: Collection[Kind] | None = None
    tools: Collection[str] | None = None  # tool names, case-insensitive
    sources: Collection[Source] | None = None

    def where(self) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []

        def among(column: str, values: Collection[Any] | None, *, nocase: bool = False) -> None:
            if values is None:
                return
            items = list(values)
            marks = ", ".join("?" * len(items))
            collate = " COLLATE NOCASE" if nocase else ""
            clauses.append(f"{column}{collate} IN ({marks})" if items else "0")
            params.extend(items)

        if self.project_dirs is not None:
            names = [Path(p).name for p in self.project_dirs]
            among("COALESCE(e.project_dir, f.project_dir)", names)
        among("COALESCE(e.session_id, f.session_id)", self.session_ids)
        among("e.role", self.roles)
        among("e.kind", self.kinds)
        among("e.tool_name", self.tools, nocase=True)
        among("f.source", self.sources)
        for bound, op in ((self.since, ">="), (self.until, "<")):
            if bound is not None:
                seconds = bound.timestamp() if isinstance(bound, datetime) else float(bound)
                clauses.append(f"e.moment {op} ?")
                params.append(seconds)
        return clauses, params


_COLUMNS = (
    "SELECT e.id, f.path, f.source, COALESCE(e.project_dir, f.project_dir), "
    "COALESCE(e.cwd, f.cwd), COALESCE(e.session_id, f.session_id), f.agent_id, e.uuid, "
    "e.type, e.kind, e.role, e.tool_name, e.timestamp, e.line, e.offset, e.sidechain, "
    "e.length, e.part, "
)
#: A page of hits, best first: filtered on what each row's entry and file say.
_SELECT = (
    _COLUMNS + "texts.rank "
    "FROM texts JOIN entries e ON e.id = texts.rowid JOIN files f ON f.id = e.file_id "
    "WHERE texts MATCH ? AND texts.rowid >= ?{where} ORDER BY texts.rank, e.id "
    "LIMIT ? OFFSET ?"
)
#: :data:`_SELECT` without filters: the page ranked on the text alone, then joined (the
#: window's thousands of matches need not each find their entry and file first). Only
#: for an index without dead rows: the join would drop those after the page is cut.
_SELECT_UNFILTERED = (
    _COLUMNS + "page.rank FROM ("
    "SELECT rowid AS id, rank FROM texts WHERE texts MATCH ? AND rowid >= ? "
    "ORDER BY rank, rowid LIMIT ? OFFSET ?"
    ") AS page JOIN entries e ON e.id = page.id JOIN files f ON f.id = e.file_id "
    "ORDER BY page.rank, page.id"
)
#: The rowid of the :data:`RANK_WINDOW`-th newest match (rows are numbered as indexed:
#: newer rows, higher ids), found in the index's own order, none of them scored.
_WINDOW_START = "SELECT rowid FROM texts WHERE texts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?"
#: A first page of hits (a ``limit``) for text found in more rows than this is ranked
#: among its newest this many: bm25 scores every match it ranks, and a word found
#: everywhere matches hundreds of thousands of rows in a big archive (0.3 s on 2 GB; its
#: newest 5,000: a few ms). When they hold fewer hits than the page asks for (filters,
#: the active path), every match is ranked.
RANK_WINDOW = 5_000


def query(
    db_path: StrPath,
    text: str,
    *,
    fts: bool = False,
    filters: Filters | None = None,
    on_active_path: bool | None = None,
    limit: int | None = None,
    skeleton_cache: SkeletonCache | None = None,
) -> list[SearchHit]:
    """The hits of ``text`` in the index at ``db_path``, best first (bm25), at most
    ``limit``. ``fts``: ``text`` is FTS5 syntax (else plain words: :func:`phrase_query`).
    ``on_active_path``: only hits on (True) or off (False) their transcript's active
    path, computed now (history entries are on none). The transcripts with hits are
    opened through ``skeleton_cache`` when given (and their active path kept in the index
    until they change). Raises :class:`QuerySyntaxError` for FTS5 syntax FTS5 refuses,
    :class:`~sessiontree.errors.Refused` for an empty query."""
    match = text.strip() if fts else phrase_query(text)
    if not match:
        raise Refused("an empty query matches everything; give some text")
    clauses, params = (filters or Filters()).where()
    where = "".join(f" AND {clause}" for clause in clauses)
    page = max(200, 2 * limit) if limit is not None else -1
    with open_index(db_path) as conn:
        dead = meta_number(conn, "dead_rows")
        sql = _SELECT_UNFILTERED if not clauses and not dead else _SELECT.format(where=where)
        active = _ActivePaths(conn, skeleton_cache)

        def ranked(start: int) -> list[tuple[Any, ...]]:
            """Hits from the matches with a rowid of at least ``start``, best first (each
            row's place on its active path worked out only where it is asked for or the
            hit kept: a page of 20 hits need not read the active path of every
            transcript a page of 200 rows touches)."""
            kept: list[tuple[Any, ...]] = []
            offset = 0
            while limit is None or len(kept) < limit:
                rows = _run(conn, sql, [match, start, *params, page, offset], text, fts)
                if on_active_path is None:
                    kept += rows
                else:
                    kept += [
                        (*row, on_active_path)
                        for row in rows
                        if row[2] != "history" and _on_path(row, active) == on_active_path
                    ]
                if page < 0 or len(rows) < page:
                    break
                offset += page
            kept = kept if limit is None else kept[:limit]
            if on_active_path is None:
                kept = [(*row, _on_path(row, active)) for row in kept]
            return kept

        start = _window_start(conn, match, text, fts) if limit is not None else None
        kept = ranked(start) if start is not None else []
        if start is None or len(kept) < (limit or 0):
            kept = ranked(0)  # (rowids start at 1)
        snippets = cut_snippets(conn, match, [_place(row) for row in kept])
    return [_hit(row, snippets.get(row[0], "")) for row in kept]


def _place(row: tuple[Any, ...]) -> RowPlace:
    """Where the text of a row of :data:`_SELECT` is."""
    row_id, path, source, uuid, line, offset, length, part = (
        row[0], row[1], row[2], row[7], row[13], row[14], row[16], row[17],
    )  # fmt: skip
    return RowPlace(row_id, path, source == "history", uuid, line, offset, length, part)


def _run(
    conn: sqlite3.Connection, sql: str, params: list[Any], text: str, fts: bool
) -> list[tuple[Any, ...]]:
    """``sql``'s rows; an FTS5 syntax error in a ``fts`` query as :class:`QuerySyntaxError`."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        reason = str(exc)
        if fts and any(sign in reason.lower() for sign in _SYNTAX_ERRORS):
            raise QuerySyntaxError(text, reason) from None
        raise


def _window_start(conn: sqlite3.Connection, match: str, text: str, fts: bool) -> int | None:
    """Where the newest :data:`RANK_WINDOW` matches start, or None when there are no
    more matches than that (all are ranked)."""
    found = _run(conn, _WINDOW_START, [match, RANK_WINDOW - 1], text, fts)
    return int(found[0][0]) if found else None


class _ActivePaths:
    """The active path of each transcript with hits, read once per query: kept in the
    index beside the file's stat, read again (through the skeleton cache) when the file
    changed since, or changed just before it was read (:func:`_settled`)."""

    def __init__(self, conn: sqlite3.Connection, cache: SkeletonCache | None) -> None:
        self.conn = conn
        self.cache = cache
        self.paths: dict[str, frozenset[str]] = {}

    def of(self, path: str) -> frozenset[str]:
        found = self.paths.get(path)
        if found is None:
            found = self.paths[path] = self._read(path)
        return found

    def _read(self, path: str) -> frozenset[str]:
        checked_ns = time.time_ns()  # before the stat: a write after it is seen next time
        try:
            st = os.stat(path)
        except OSError:
            return frozenset()  # gone since it was indexed
        stat = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        row = self.conn.execute(
            "SELECT device, inode, size, mtime_ns, checked_ns, uuids FROM active_paths "
            "WHERE path = ?",
            (path,),
        ).fetchone()
        if row is not None and tuple(row[:4]) == stat and settled(st.st_mtime_ns, row[4]):
            with contextlib.suppress(msgspec.DecodeError):
                return frozenset(_uuids_decoder.decode(row[5]))
        try:
            from sessiontree.conversation.transcript import Transcript  # (a stale path only)

            uuids = Transcript.open(path, skeleton_cache=self.cache).active_path
        except (DataError, OSError):
            return frozenset()
        # A memo, not the index: when another process holds the index, it is not kept.
        with contextlib.suppress(sqlite3.OperationalError):
            self.conn.execute("PRAGMA busy_timeout = 50")
            self.conn.execute(
                "INSERT OR REPLACE INTO active_paths VALUES (?, ?, ?, ?, ?, ?, ?)",
                (path, *stat, checked_ns, msgspec.json.encode(uuids)),
            )
        return frozenset(uuids)


_uuids_decoder = msgspec.json.Decoder(list[str])


def _on_path(row: tuple[Any, ...], active: _ActivePaths) -> bool:
    path, source, uuid = row[1], row[2], row[7]
    return source != "history" and uuid is not None and uuid in active.of(path)


def _hit(row: tuple[Any, ...], marked: str) -> SearchHit:
    (
        _id,
        path,
        source,
        project_dir,
        cwd,
        session_id,
        agent_id,
        uuid,
        kind_of_record,
        kind,
        role,
        tool_name,
        timestamp,
        line,
        offset,
        sidechain,
        _length,
        _part,
        rank,
        on_path,
    ) = row
    snippet, highlights = parse_snippet(marked)
    return SearchHit(
        session_id=session_id,
        uuid=uuid,
        type=kind_of_record,
        kind=kind,
        role=role,
        tool_name=tool_name,
        timestamp=timestamp,
        project=cwd,
        project_dir=project_dir,
        path=path,
        source=source,
        agent_id=agent_id,
        is_sidechain=bool(sidechain),
        line=line,
        offset=offset,
        rank=rank,
        snippet=snippet,
        highlights=highlights,
        on_active_path=on_path,
    )


_MARKS = re.compile(f"([{MARK_OPEN}{MARK_CLOSE}])")


def parse_snippet(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """An FTS5 snippet with its highlight marks as plain text, whitespace runs folded to
    one space, cut to :data:`SNIPPET_CHARS` around its first highlight, and the
    (start, end) ranges of the highlights in it."""
    folded = " ".join(marked.split())
    out: list[str] = []
    ranges: list[tuple[int, int]] = []
    size = 0
    opened: int | None = None
    for piece in _MARKS.split(folded):  # text and marks, in turn
        if piece == MARK_OPEN:
            opened = size
        elif piece == MARK_CLOSE:
            if opened is not None and size > opened:
                ranges.append((opened, size))
            opened = None
        elif piece:
            out.append(piece)
            size += len(piece)
    text = "".join(out)
    if len(text) <= SNIPPET_CHARS:
        return text, tuple(ranges)
    first = ranges[0][0] if ranges else 0
    begin = max(0, min(first - SNIPPET_CHARS // 3, len(text) - SNIPPET_CHARS))
    end = begin + SNIPPET_CHARS
    cut = text[begin:end]
    lead = "…" if begin > 0 and not cut.startswith("…") else ""
    trail = "…" if end < len(text) and not cut.endswith("…") else ""
    shift = len(lead) - begin
    kept = tuple(
        (max(a, begin) + shift, min(b, end) + shift) for a, b in ranges if a < end and b > begin
    )
    return lead + cut + trail, kept
