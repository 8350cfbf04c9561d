"""The store's full-text search: the distinct words of each searchable part of a line
kept as a ``tsvector`` without positions ('simple' configuration), found with a
``tsquery`` and ranked by how few distinct words the part holds (as bm25 ranks parts
that all hold the words searched for); a phrase and a hit's highlights are found in
its text, read again from its line (the store keeps no copy of the text).

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


class Unindexed(msgspec.Struct, frozen=True):
    """A source whose stored lines are not all indexed for search yet."""

    source_id: int
    path: str  # where the file is (or was) on its machine
    pending: int  # stored bytes not indexed yet


#: A source not indexed as far as it is stored: never indexed, or stored further since
#: (but for a torn last line, which is never indexed: the line stored last begins where
#: its indexing stopped).
_UNINDEXED = (
    " FROM sessiontree.source s LEFT JOIN sessiontree.text_state t USING (source_id)"
    " WHERE s.kind <> 'history' AND coalesce(t.indexed_bytes, -1) < s.synced_bytes"
    " AND NOT (s.open_tail AND coalesce(t.indexed_bytes, -1) >= (SELECT max(l.byte_offset)"
    " FROM sessiontree.line l WHERE l.source_id = s.source_id))"
)


def unindexed_sources(conn: psycopg.Connection[Any], machine_id: str, root: str) -> list[Unindexed]:
    """The sources a machine's root stored that are not indexed as far as they are
    stored (oldest first)."""
    rows = conn.execute(
        "SELECT s.source_id, s.root || '/' || s.rel_path,"
        " s.synced_bytes - coalesce(t.indexed_bytes, 0)"
        + _UNINDEXED
        + " AND s.machine_id = %s AND s.root = %s ORDER BY s.source_id",
        (machine_id, root),
    ).fetchall()
    return [Unindexed(int(i), str(path), int(pending)) for i, path, pending in rows]


def unindexed_totals(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """(sources, bytes) stored but not indexed for search yet, across the store."""
    row = conn.execute(
        "SELECT count(*), coalesce(sum(s.synced_bytes - coalesce(t.indexed_bytes, 0)), 0)"
        + _UNINDEXED
    ).fetchone()
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


_TEXT_COLUMNS = (
    "source_id", "byte_offset", "part", "line_no", "kind", "role", "tool_name",
    "tool_use_id", "session_id", "uuid", "type", "ts", "ts_text", "cwd", "is_sidechain", "tsv",
    "words",
)  # fmt: skip


def put_texts(
    conn: psycopg.Connection[Any],
    source_id: int,
    rows: Sequence[TextRow],
    *,
    indexed_from: int,
    indexed_bytes: int,
    indexed_lines: int,
) -> int:
    """Index ``rows`` of a source, the parts of its lines from byte ``indexed_from`` to
    ``indexed_bytes``, and note how far it is indexed, in one transaction; how many
    parts were indexed. The source's text state is locked first: a sync that indexed
    the same lines meanwhile (two syncs of one machine) leaves nothing to add but what
    lies past where it stopped. A tool result whose call is not among them is named
    from the call indexed before."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO sessiontree.text_state (source_id, indexed_bytes, indexed_lines)"
            " VALUES (%s, 0, 0) ON CONFLICT DO NOTHING",
            (source_id,),
        )
        row = conn.execute(
            "SELECT indexed_bytes FROM sessiontree.text_state WHERE source_id = %s FOR UPDATE",
            (source_id,),
        ).fetchone()
        done = int(row[0]) if row else 0
        if done >= indexed_bytes:
            return 0
        if done > indexed_from:
            rows = [r for r in rows if r.byte_offset >= done]
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
        if rows:
            with conn.cursor() as cursor:
                sql = f"COPY sessiontree.line_text ({', '.join(_TEXT_COLUMNS)}) FROM STDIN"
                with cursor.copy(sql.encode()) as copy:
                    for r in rows:
                        tsv = _searchable(r.text, r.kind)
                        copy.write_row(
                            (
                                source_id, r.byte_offset, r.part, r.line_no, r.kind, r.role,
                                _clean(r.tool_name or calls.get(r.tool_use_id or "")),
                                _clean(r.tool_use_id), _clean(r.session_id), _clean(r.uuid),
                                _clean(r.type), _moment(r.timestamp), _clean(r.timestamp),
                                _clean(r.cwd), r.is_sidechain, tsv, count_words(tsv),
                            )
                        )  # fmt: skip
        conn.execute(
            "UPDATE sessiontree.text_state SET indexed_bytes = %s, indexed_lines = %s"
            " WHERE source_id = %s",
            (indexed_bytes, indexed_lines, source_id),
        )
    return len(rows)


def put_active_path(
    conn: psycopg.Connection[Any], source_id: int, synced_bytes: int, uuids: Sequence[str]
) -> None:
    """The uuids of a source's active path as read at ``synced_bytes`` of it."""
    conn.execute(
        "INSERT INTO sessiontree.active_path (source_id, synced_bytes, uuids)"
        " VALUES (%s, %s, %s) ON CONFLICT (source_id) DO UPDATE"
        " SET synced_bytes = excluded.synced_bytes, uuids = excluded.uuids",
        (source_id, synced_bytes, msgspec.msgpack.encode(list(uuids))),
    )


_uuids = msgspec.msgpack.Decoder(list[str])


def read_active_paths(
    conn: psycopg.Connection[Any], source_ids: Sequence[int]
) -> dict[int, tuple[int, frozenset[str]]]:
    """The active paths kept of these sources: (synced bytes read at, uuids) by id."""
    rows = conn.execute(
        "SELECT source_id, synced_bytes, uuids FROM sessiontree.active_path"
        " WHERE source_id = ANY(%s)",
        (list(source_ids),),
    )
    return {int(s): (int(b), frozenset(_uuids.decode(u))) for s, b, u in rows}


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


#: PostgreSQL's limit on a tsvector's lexeme, in bytes.
MAX_LEXEME_BYTES = 2046


def format_tsvector(text: str) -> str:
    """A ``tsvector`` of ``text``'s distinct words (:data:`WORD`, lower case) in its
    input form, ``'word' 'other'``, without positions: made here rather than by the
    server's parser (``to_tsvector`` cost the server 60% of a sync), so that the words
    indexed are cut by the one rule the query is cut by (:func:`query_terms`). A word
    longer than the server takes is left out.

    Speed: it runs over every word a sync indexes, so every step is one call into C
    (find the words, lower them joined, keep each once, join them): positions would
    take a Python step per word, and were most of a sync's time."""
    found = WORD.findall(text)
    if not found:
        return ""
    # (each word lowered alone: lowering the text first could split a word, "İ" -> "i̇")
    words = dict.fromkeys("\x00".join(found).lower().split("\x00"))
    if max(map(len, words)) * 4 > MAX_LEXEME_BYTES:  # (rare: look word by word)
        for word in [w for w in words if len(w.encode()) > MAX_LEXEME_BYTES]:
            del words[word]
    return "'" + "' '".join(words) + "'" if words else ""


def count_words(tsvector: str) -> int:
    """How many distinct words a tsvector made by :func:`format_tsvector` holds."""
    return tsvector.count("' '") + 1 if tsvector else 0


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
    """Plain words as a ``tsquery`` (its text form): every word of every phrase of
    :func:`query_terms` required, the last word of each a prefix (``cels`` finds
    "Celsius"). The index keeps no positions: that a phrase's words stand in a row is
    checked on the text (:func:`has_phrase`). None when there is no word."""
    # (built here: the words are letters and digits only, nothing to quote)
    words = [
        f"'{word}'" + (":*" if at == len(phrase) - 1 else "")
        for phrase in query_terms(text)
        for at, word in enumerate(phrase)
    ]
    return " & ".join(words) or None


def web_query(conn: psycopg.Connection[Any], text: str) -> str | None:
    """A query in PostgreSQL's web search syntax (``"a phrase" or -word``) as a
    ``tsquery`` text; None when it holds no lexeme. The index keeps no positions, so a
    quoted phrase asks for its words anywhere in the part (``<->`` read as ``&``)."""
    row = conn.execute(
        "SELECT regexp_replace(websearch_to_tsquery('simple', %s)::text, '<[0-9-]+>', '&', 'g')",
        (text,),
    ).fetchone()
    return str(row[0]) if row and row[0] else None


def phrase_spans(text: str, phrases: Sequence[Sequence[str]]) -> list[tuple[int, int]]:
    """Where in ``text`` each phrase stands: runs of consecutive words equal to the
    phrase's (case-blind), its last word a prefix; (start, end) character offsets."""
    words = list(WORD.finditer(text))
    lowered = [w.group().lower() for w in words]
    spans: list[tuple[int, int]] = []
    for phrase in phrases:
        n = len(phrase)
        head, last = list(phrase[:-1]), phrase[-1]
        for i in range(len(words) - n + 1):
            if lowered[i : i + n - 1] == head and lowered[i + n - 1].startswith(last):
                spans.append((words[i].start(), words[i + n - 1].end()))
    return spans


def has_phrase(text: str, phrases: Sequence[Sequence[str]]) -> bool:
    """Whether every phrase of more than one word stands in ``text`` (its words in a
    row): what the index, which keeps no positions, cannot tell."""
    return all(phrase_spans(text, [phrase]) for phrase in phrases if len(phrase) > 1)


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
    """The parts matching ``tsquery`` (text form), best ranked first (fewest distinct
    words: the words searched for stand out most), then newest."""
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
        " t.words AS rank, NULL::bytea AS sha, t.ts"
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
            " h.project, false, length(h.tsv), h.sha256, h.ts"
            " FROM sessiontree.history_text h CROSS JOIN (SELECT %(query)s::tsquery AS q) q"
            f" WHERE {' AND '.join(hwhere)}"
        )
    sql = (
        f"SELECT * FROM ({lines}) hits"
        " ORDER BY rank, ts DESC NULLS LAST, source_id, byte_offset, part"
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
