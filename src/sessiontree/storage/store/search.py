"""The store's full-text search: the words of each searchable part of a line kept as a
``tsvector`` ('simple' configuration), found with a ``tsquery`` and ranked by the
server (``ts_rank_cd``); a hit's highlights cut by ``ts_headline`` from its text, read
again from its line (the store keeps no copy of the text).

What a part is, and its text, are the engine's (``model/search_parts.py``): this module
only stores and queries what it is given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from sessiontree.storage.store.reads import of_origin

if TYPE_CHECKING:
    import psycopg

#: The most characters of one part's text that are indexed (a ``tsvector`` holds at
#: most 1 MB; a tool's output is indexed by its start).
MAX_TEXT = 128 * 1024
MAX_TOOL_TEXT = 16 * 1024


class TextRow(msgspec.Struct, frozen=True):
    """One searchable part of a line, to index."""

    byte_offset: int
    part: int
    line_no: int
    kind: str
    role: str
    tool_name: str | None
    tool_use_id: str | None
    session_id: str | None
    uuid: str | None
    type: str | None
    timestamp: str | None
    cwd: str | None
    is_sidechain: bool
    text: str


def indexed_until(conn: psycopg.Connection[Any], source_id: int) -> tuple[int, int]:
    """(bytes, lines) of a source whose text is indexed (0, 0: none yet)."""
    row = conn.execute(
        "SELECT indexed_bytes, indexed_lines FROM sessiontree.text_state WHERE source_id = %s",
        (source_id,),
    ).fetchone()
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


def put_texts(
    conn: psycopg.Connection[Any],
    source_id: int,
    rows: Sequence[TextRow],
    *,
    indexed_bytes: int,
    indexed_lines: int,
) -> None:
    """Index ``rows`` of a source and note how far it is indexed, in one transaction. A
    tool result whose call is not among them is named from the call indexed before."""
    with conn.transaction():
        calls = {r.tool_use_id: r.tool_name for r in rows if r.kind == "tool_use"}
        missing = {
            r.tool_use_id
            for r in rows
            if r.kind == "tool_result" and r.tool_name is None and r.tool_use_id not in calls
        } - {None}
        if missing:
            for call_id, name in conn.execute(
                "SELECT tool_use_id, tool_name FROM sessiontree.line_text"
                " WHERE source_id = %s AND kind = 'tool_use' AND tool_use_id = ANY(%s)",
                (source_id, list(missing)),
            ):
                calls[call_id] = name
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO sessiontree.line_text (source_id, byte_offset, part, line_no,"
                " kind, role, tool_name, tool_use_id, session_id, uuid, type, ts, ts_text, cwd,"
                " is_sidechain, tsv) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
                " %s, %s, %s, %s::tsvector) ON CONFLICT DO NOTHING",
                [
                    (
                        source_id, r.byte_offset, r.part, r.line_no, r.kind, r.role,
                        _clean(r.tool_name or calls.get(r.tool_use_id or "")),
                        _clean(r.tool_use_id), _clean(r.session_id), _clean(r.uuid),
                        _clean(r.type), _moment(r.timestamp), _clean(r.timestamp),
                        _clean(r.cwd), r.is_sidechain, _searchable(r.text, r.kind),
                    )
                    for r in rows
                ],
            )  # fmt: skip
        conn.execute(
            "INSERT INTO sessiontree.text_state (source_id, indexed_bytes, indexed_lines)"
            " VALUES (%s, %s, %s) ON CONFLICT (source_id) DO UPDATE"
            " SET indexed_bytes = excluded.indexed_bytes,"
            " indexed_lines = excluded.indexed_lines",
            (source_id, indexed_bytes, indexed_lines),
        )


def unindexed_history(conn: psycopg.Connection[Any]) -> list[tuple[bytes, bytes]]:
    """(sha256, line) of the history lines not indexed yet."""
    rows = conn.execute(
        "SELECT h.sha256, h.raw FROM sessiontree.history_line h"
        " WHERE NOT EXISTS (SELECT 1 FROM sessiontree.history_text t WHERE t.sha256 = h.sha256)"
    ).fetchall()
    return [(bytes(sha), bytes(raw)) for sha, raw in rows]


def put_history_texts(
    conn: psycopg.Connection[Any],
    rows: Sequence[tuple[bytes, str | None, str | None, int | None, str]],
) -> None:
    """Index history entries: (sha256, project, session id, timestamp in ms, text)."""
    if not rows:
        return
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO sessiontree.history_text (sha256, project, session_id, ts, tsv)"
            " VALUES (%s, %s, %s, to_timestamp(%s / 1000.0), %s::tsvector)"
            " ON CONFLICT DO NOTHING",
            [
                (sha, _clean(project), _clean(session), ms, _searchable(text, "history"))
                for sha, project, session, ms, text in rows
            ],
        )


def _clean(value: str | None) -> str | None:
    """A value a ``text`` column takes: no NUL, no lone surrogate."""
    if value is None:
        return None
    if "\x00" in value:
        value = value.replace("\x00", "")
    return value.encode("utf-8", errors="replace").decode("utf-8")


def _searchable(text: str, kind: str) -> str:
    """The tsvector (input form) of a part's text, cut to what is indexed of it."""
    limit = MAX_TOOL_TEXT if kind in ("tool_result", "tool_use") else MAX_TEXT
    return format_tsvector(_clean(text[:limit]) or "")


def _moment(timestamp: str | None) -> datetime | None:
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


#: A word as local search's tokenizer sees one (SQLite's unicode61): a run of letters and
#: digits; anything else separates. The text indexed and the query are both cut so,
#: since PostgreSQL's own parser would keep ``weather.py`` or a path as one token.
WORD = re.compile(r"[^\W_]+")


#: PostgreSQL's limits on a tsvector: a lexeme's bytes, its positions, a position.
MAX_LEXEME_BYTES = 2046
MAX_POSITIONS = 256
MAX_POSITION = 16383


def format_tsvector(text: str) -> str:
    """A ``tsvector`` of ``text``'s words (:data:`WORD`, lower case) in its input form,
    ``'word':1,4 'other':2``: made here rather than by the server's parser
    (``to_tsvector`` cost the server 60% of a sync), so that the words indexed are cut
    by the one rule the query is cut by (:func:`query_terms`). Within the server's
    limits: a longer word is left out, a word's positions past 256 are dropped, and
    positions past 16383 count as 16383, as ``to_tsvector`` does."""
    positions: dict[str, list[int]] = {}
    for number, match in enumerate(WORD.finditer(text), 1):
        word = match.group().lower()
        if len(word.encode()) > MAX_LEXEME_BYTES:
            continue
        seen = positions.setdefault(word, [])
        if len(seen) < MAX_POSITIONS:
            at = min(number, MAX_POSITION)
            if not seen or seen[-1] != at:
                seen.append(at)
    return " ".join(f"'{word}':{','.join(map(str, at))}" for word, at in positions.items())


def query_terms(text: str) -> list[list[str]]:
    """Plain words as local search reads them: each whitespace-separated word a phrase
    of its words, lower case (its last word may go on: a prefix)."""
    phrases = []
    for chunk in text.split():
        words = [w.lower() for w in WORD.findall(chunk)]
        if words:
            phrases.append(words)
    return phrases


def words_query(text: str) -> str | None:
    """Plain words as a ``tsquery`` (its text form): every phrase of
    :func:`query_terms` required, the last word of each a prefix (``cels`` finds
    "Celsius"). None when there is no word."""
    # (built here: the words are letters and digits only, nothing to quote)
    phrases = [
        "(" + " <-> ".join(f"'{w}'" for w in words[:-1]) + (" <-> " if len(words) > 1 else "")
        + f"'{words[-1]}':*)"
        for words in query_terms(text)
    ]  # fmt: skip
    return " & ".join(phrases) or None


def web_query(conn: psycopg.Connection[Any], text: str) -> str | None:
    """A query in PostgreSQL's web search syntax (``"a phrase" or -word``) as a
    ``tsquery`` text; None when it holds no lexeme."""
    row = conn.execute("SELECT websearch_to_tsquery('simple', %s)::text", (text,)).fetchone()
    return str(row[0]) if row and row[0] else None


class TextHit(msgspec.Struct, frozen=True):
    """A part that matched: where it is, what it is, and its rank."""

    source_id: int | None
    byte_offset: int | None
    part: int
    line_no: int
    kind: str
    role: str
    tool_name: str | None
    session_id: str | None
    uuid: str | None
    type: str | None
    timestamp: str | None
    cwd: str | None
    is_sidechain: bool
    rank: float
    history_sha: bytes | None = None


class TextFilters(msgspec.Struct, frozen=True):
    """What a search is narrowed to (None: no limit of that kind)."""

    project_dirs: Sequence[str] | None = None  # project folder names
    session_ids: Sequence[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    roles: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    tools: Sequence[str] | None = None
    source_kinds: Sequence[str] = ("transcript", "subagent")
    machine: str | None = None
    user: str | None = None


def search_texts(
    conn: psycopg.Connection[Any],
    tsquery: str,
    filters: TextFilters,
    *,
    limit: int,
    offset: int = 0,
    history: bool = False,
) -> list[TextHit]:
    """The parts matching ``tsquery`` (text form), best ranked first, then newest."""
    where = [
        "t.tsv @@ q.q",
        "s.superseded_by IS NULL",
        "s.kind = ANY(%(source_kinds)s)",
    ]
    params: dict[str, Any] = {
        "query": tsquery,
        "source_kinds": list(filters.source_kinds),
        "limit": limit,
        "offset": offset,
    }

    def among(column: str, key: str, values: Sequence[str] | None) -> None:
        if values is not None:
            where.append(f"{column} = ANY(%({key})s)")
            params[key] = list(values)

    among("split_part(s.rel_path, '/', 2)", "projects", filters.project_dirs)
    among("t.session_id", "sessions", filters.session_ids)
    among("t.role", "roles", filters.roles)
    among("t.kind", "kinds", filters.kinds)
    among("lower(t.tool_name)", "tools", [t.lower() for t in filters.tools or []] or None)
    if filters.tools is not None and not filters.tools:
        where.append("false")
    if filters.since is not None:
        where.append("t.ts >= %(since)s")
        params["since"] = filters.since
    if filters.until is not None:
        where.append("t.ts < %(until)s")
        params["until"] = filters.until
    where += of_origin(params, filters.machine, filters.user)
    lines = (
        "SELECT t.source_id, t.byte_offset, t.part, t.line_no, t.kind, t.role, t.tool_name,"
        " t.session_id, t.uuid, t.type, t.ts_text, t.cwd, t.is_sidechain,"
        " ts_rank_cd(t.tsv, q.q) AS rank, NULL::bytea AS sha, t.ts"
        " FROM sessiontree.line_text t CROSS JOIN (SELECT %(query)s::tsquery AS q) q"
        " JOIN sessiontree.source s ON s.source_id = t.source_id"
        " JOIN sessiontree.machine m ON m.machine_id = s.machine_id"
        f" WHERE {' AND '.join(where)}"
    )
    if history:
        hwhere = ["h.tsv @@ q.q"]
        if filters.session_ids is not None:
            hwhere.append("h.session_id = ANY(%(sessions)s)")
        if filters.since is not None:
            hwhere.append("h.ts >= %(since)s")
        if filters.until is not None:
            hwhere.append("h.ts < %(until)s")
        if filters.roles is not None:
            hwhere.append("'user' = ANY(%(roles)s)")
        if filters.kinds is not None:
            hwhere.append("'history' = ANY(%(kinds)s)")
        if filters.tools is not None:
            hwhere.append("false")
        if filters.machine is not None or filters.user is not None:
            hwhere.append(
                "EXISTS (SELECT 1 FROM sessiontree.history_line l"
                " JOIN sessiontree.machine m ON m.machine_id = l.machine_id"
                " WHERE l.sha256 = h.sha256"
                + (" AND (m.label = %(machine)s OR m.machine_id::text = %(machine)s)"
                   if filters.machine is not None else "")
                + (" AND m.os_user = %(user)s" if filters.user is not None else "")
                + ")"
            )  # fmt: skip
        lines += (
            " UNION ALL SELECT NULL, NULL, 0, 0, 'history', 'user', NULL, h.session_id, NULL,"
            " NULL, to_char(h.ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),"
            " h.project, false, ts_rank_cd(h.tsv, q.q), h.sha256, h.ts"
            " FROM sessiontree.history_text h CROSS JOIN (SELECT %(query)s::tsquery AS q) q"
            f" WHERE {' AND '.join(hwhere)}"
        )
    sql = (
        f"SELECT * FROM ({lines}) hits"
        " ORDER BY rank DESC, ts DESC NULLS LAST, source_id, byte_offset, part"
        " LIMIT %(limit)s OFFSET %(offset)s"
    )
    found = []
    for row in conn.execute(sql.encode(), params):
        (source_id, offset, part, line_no, kind, role, tool, session, uuid, type_, stamp, cwd,
         side, rank, sha, _ts) = row  # fmt: skip
        found.append(
            TextHit(
                source_id, offset, part, line_no, kind, role, tool, session, uuid, type_,
                stamp, cwd, bool(side), float(rank), None if sha is None else bytes(sha),
            )
        )  # fmt: skip
    return found


def history_line_bytes(conn: psycopg.Connection[Any], shas: Sequence[bytes]) -> dict[bytes, bytes]:
    """The history lines of these digests."""
    rows = conn.execute(
        "SELECT sha256, raw FROM sessiontree.history_line WHERE sha256 = ANY(%s)", (list(shas),)
    ).fetchall()
    return {bytes(sha): bytes(raw) for sha, raw in rows}
