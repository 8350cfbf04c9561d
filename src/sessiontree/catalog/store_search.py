"""Search in the store: PostgreSQL's full-text search over every machine's sessions,
giving the hits local search gives (:class:`SearchHit`, the same filters, the same
reading of plain words: each a phrase whose last word may go on, so ``cels`` finds
"Celsius"), each with the machine and user that synced it.

The server finds and ranks the parts (``storage/store/search.py``); which parts a
record has, their text, and whether a hit is on its session's active path are the
engine's, as locally: the text is cut again from the hit's line, and the active path is
that of the stored transcript, read by the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from sessiontree.catalog.search_index.database import MARK_CLOSE, MARK_OPEN
from sessiontree.catalog.search_index.querying import Filters, SearchHit, parse_snippet
from sessiontree.catalog.search_index.texts import indexed_text
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.history.log import parse_history_lines
from sessiontree.model.builders.history import expand_pastes
from sessiontree.model.records import Line, fields_as_dict
from sessiontree.model.search_parts import SearchFields, parse_search_parts
from sessiontree.model.tree import build_tree
from sessiontree.storage.layout import is_paste_hash
from sessiontree.storage.store.reads import (
    StoredSource,
    lines_of_sources,
    read_named_artifact,
    read_scan,
    source_by_id,
    sources_by_id,
)
from sessiontree.storage.store.search import (
    TextFilters,
    TextHit,
    has_phrase,
    history_line_bytes,
    phrase_spans,
    query_terms,
    read_active_paths,
    search_texts,
    web_query,
    words_query,
)

if TYPE_CHECKING:
    import psycopg

_fields = msgspec.json.Decoder(SearchFields)


class StoredHit(msgspec.Struct, frozen=True):
    """A hit in the store, and the machine and user that synced what it is in (None for
    a history entry: every machine that typed it)."""

    hit: SearchHit
    machine: str | None
    user: str | None

    def as_json(self) -> dict[str, Any]:
        return {**self.hit.as_json(), "machine": self.machine, "user": self.user}


def search_store(
    conn: psycopg.Connection[Any],
    text: str,
    *,
    filters: Filters | None = None,
    on_active_path: bool | None = None,
    limit: int | None = None,
    machine: str | None = None,
    user: str | None = None,
    fts: bool = False,
) -> list[StoredHit]:
    """The hits of ``text`` in the store, best first, at most ``limit`` (default 100).
    ``fts``: ``text`` is PostgreSQL's web search syntax (``"a phrase" -word or
    other``). ``on_active_path``: only hits on (True) or off (False) the active path."""
    if not text.strip():
        raise Refused("an empty query matches everything; give some text")
    tsquery = web_query(conn, text) if fts else words_query(text)
    if tsquery is None:
        return []
    wanted = limit or 100
    given = filters or Filters()
    sources = list(given.sources or ("transcript", "subagent"))
    text_filters = TextFilters(
        project_dirs=None if given.project_dirs is None else [Path(p).name for p in
                                                              given.project_dirs],
        session_ids=None if given.session_ids is None else list(given.session_ids),
        since=_aware(given.since),
        until=_aware(given.until),
        roles=None if given.roles is None else list(given.roles),
        kinds=None if given.kinds is None else list(given.kinds),
        tools=None if given.tools is None else list(given.tools),
        source_kinds=[s for s in sources if s != "history"],
        machine=machine,
        user=user,
    )  # fmt: skip
    history = "history" in sources and on_active_path is not True
    terms = [] if fts else query_terms(text)
    # (the index keeps no positions: a phrase's words in a row are checked on the text)
    recheck = any(len(phrase) > 1 for phrase in terms)
    page = max(200, 2 * wanted)
    paths = _Paths(conn)
    kept: list[tuple[TextHit, str | None]] = []
    offset = 0
    while len(kept) < wanted:
        found = search_texts(
            conn, tsquery, text_filters, limit=page, offset=offset, history=history
        )
        if on_active_path is not None:  # (else only the kept hits' paths are read, below:
            paths.prefetch(found)  # a kept path is a set of every uuid on it)
        texts: list[str | None] = list(_texts(conn, found)) if recheck else [None] * len(found)
        for hit, part_text in zip(found, texts, strict=True):
            if part_text is not None and not has_phrase(part_text, terms):
                continue
            if on_active_path is not None and paths.on_path(hit) != on_active_path:
                continue
            kept.append((hit, part_text))
            if len(kept) == wanted:
                break
        if len(found) < page:
            break
        offset += page
    paths.prefetch([hit for hit, _ in kept])
    missing = _texts(conn, [hit for hit, part_text in kept if part_text is None])
    texts_kept = [part_text if part_text is not None else missing.pop(0) for _, part_text in kept]
    return [
        _stored_hit(hit, paths.on_path(hit), paths.source(hit), mark_matches(part_text, terms))
        for (hit, _), part_text in zip(kept, texts_kept, strict=True)
    ]


def mark_matches(text: str, phrases: Sequence[Sequence[str]]) -> str:
    """``text`` with the words each phrase matches marked (:data:`MARK_OPEN` …
    :data:`MARK_CLOSE`, as local snippets are): a run of consecutive words equal to the
    phrase's (case-blind), its last word a prefix. No phrase (web syntax): unmarked."""
    out, at = [], 0
    for start, end in sorted(phrase_spans(text, phrases)):
        if start < at:
            continue
        out += [text[at:start], MARK_OPEN, text[start:end], MARK_CLOSE]
        at = end
    out.append(text[at:])
    return "".join(out)


def _aware(bound: Any) -> Any:
    from datetime import UTC, datetime

    if bound is None or isinstance(bound, datetime):
        return bound
    return datetime.fromtimestamp(float(bound), tz=UTC)


class _Paths:
    """Sources and their active paths, read once a search: as the sync kept them when
    they are of the source's synced bytes, else read by the engine."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.sources: dict[int, StoredSource | None] = {}
        self.paths: dict[int, frozenset[str]] = {}

    def prefetch(self, hits: Sequence[TextHit]) -> None:
        """Read the sources of ``hits`` and their kept active paths, two queries for all
        (one each per source was a round trip per session with hits)."""
        ids = sorted({h.source_id for h in hits if h.source_id is not None})
        unknown = [i for i in ids if i not in self.sources]
        if unknown:
            found = sources_by_id(self.conn, unknown)
            for source_id in unknown:
                self.sources[source_id] = found.get(source_id)
        pathless = [i for i in ids if i not in self.paths and self.sources[i] is not None]
        if not pathless:
            return
        for source_id, (synced, uuids) in read_active_paths(self.conn, pathless).items():
            source = self.sources[source_id]
            if source is not None and synced == source.synced_bytes:
                self.paths[source_id] = uuids

    def source(self, hit: TextHit) -> StoredSource | None:
        if hit.source_id is None:
            return None
        if hit.source_id not in self.sources:
            self.sources[hit.source_id] = source_by_id(self.conn, hit.source_id)
        return self.sources[hit.source_id]

    def on_path(self, hit: TextHit) -> bool:
        source = self.source(hit)
        if source is None or hit.uuid is None:
            return False
        if source.source_id not in self.paths:
            kept = read_active_paths(self.conn, [source.source_id]).get(source.source_id)
            if kept is not None and kept[0] == source.synced_bytes:
                self.paths[source.source_id] = kept[1]
            else:
                scan = read_scan(self.conn, source)
                tree = build_tree(str(source.path), scan.lines)
                path = Transcript(path=source.path, scan=scan, tree=tree).active_path
                self.paths[source.source_id] = frozenset(path)
        return hit.uuid in self.paths[source.source_id]


def _texts(conn: psycopg.Connection[Any], hits: Sequence[TextHit]) -> list[str]:
    """The text of each hit's part, cut again from its line (or history entry): the
    lines of each source fetched together."""
    history = history_line_bytes(conn, [h.history_sha for h in hits if h.history_sha])
    by_source: dict[int, list[TextHit]] = {}
    for hit in hits:
        if hit.history_sha is None:
            assert hit.source_id is not None and hit.byte_offset is not None
            by_source.setdefault(hit.source_id, []).append(hit)
    raws = lines_of_sources(
        conn,
        {
            source_id: [Line(h.line_no, h.byte_offset or 0, 0, None) for h in found]
            for source_id, found in by_source.items()
        },
    )
    return [
        _history_text(conn, history.get(hit.history_sha, b""))
        if hit.history_sha is not None
        else _part_text(raws[hit.source_id or 0, hit.byte_offset or 0], hit.part)
        for hit in hits
    ]


def _part_text(raw: bytes, part: int) -> str:
    try:
        value = fields_as_dict(_fields.decode(raw.rstrip(b"\n").replace(b"\x00", b"")))
    except (msgspec.DecodeError, RecursionError):
        return ""
    parts = parse_search_parts(value)
    return indexed_text(parts[part].text) if 0 <= part < len(parts) else ""


def _history_text(conn: psycopg.Connection[Any], raw: bytes) -> str:
    for entry in parse_history_lines([raw]):

        def paste(content_hash: str) -> str | None:
            if not is_paste_hash(content_hash):
                return None
            data = read_named_artifact(conn, f"paste-cache/{content_hash}.txt")
            return None if data is None else data.decode("utf-8", errors="replace")

        return indexed_text(expand_pastes(entry.display or "", entry.paste_texts(paste)))
    return ""


def _stored_hit(hit: TextHit, on_path: bool, source: StoredSource | None, marked: str) -> StoredHit:
    snippet, highlights = parse_snippet(marked)
    path = "history.jsonl" if source is None else str(source.path)
    kind = "history" if source is None else source.kind
    agent = None
    if source is not None and source.kind == "subagent":
        agent = Path(source.rel_path).stem.removeprefix("agent-")
    found = SearchHit(
        session_id=hit.session_id,
        uuid=hit.uuid,
        type=hit.type,
        kind=hit.kind,  # type: ignore[arg-type]
        role=hit.role,  # type: ignore[arg-type]
        tool_name=hit.tool_name,
        timestamp=hit.timestamp,
        project=hit.cwd,
        project_dir=None if source is None else source.rel_path.split("/")[1],
        path=path if source is None else str(Path(source.root) / source.rel_path),
        source=kind,  # type: ignore[arg-type]
        agent_id=agent,
        is_sidechain=hit.is_sidechain,
        line=hit.line_no,
        offset=hit.byte_offset or 0,
        rank=hit.rank,  # (distinct words: lower is better, as bm25 locally)
        snippet=snippet,
        highlights=highlights,
        on_active_path=on_path,
    )
    return StoredHit(
        found,
        None if source is None else source.machine,
        None if source is None else source.os_user,
    )
