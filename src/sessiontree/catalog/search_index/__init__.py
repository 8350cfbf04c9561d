"""The search index: every record of every session in SQLite FTS5, kept up to date by
reading only what was appended.

One database per config root, in a file the caller names (the CLI's cache folder: never
inside the root, the index is ours, not the client's). It holds a row per searchable part
of a record (:mod:`sessiontree.model.search_parts`): prompts, replies, thoughts, tool
inputs and outputs (with the tool's name), compaction summaries, system lines and
attachments, of every branch (rewound ones, compacted history) of every transcript, of
every subagent transcript (``<session>/subagents/*.jsonl``), and each entry of
``history.jsonl``. Beside the text, what the filters need: project, session, uuid,
record type, kind, role, tool name, timestamp, line and byte offset, sidechain.

Incremental (:func:`update_index`): transcripts only grow, so a file indexed before is
read only from where the index ended, when it is the same file only grown since (the
skeleton cache's rule, :class:`~sessiontree.storage.skeleton_cache.FileMark`); a file
whose stat is unchanged since well before it was last read is not opened at all (one
changed within :data:`RACY_NS` of that read is checked by its bytes: a write in the same
clock tick leaves the mtime as it was, git's "racily clean" case). A truncated or
replaced file is indexed again whole; a deleted file's rows go (the text index keeps no
copy of the text, so their words stay as dead rows no query returns, until enough of them
make an update build the index anew: :mod:`.database`). A torn last line is not
indexed until it is complete. Lines are found by the skeleton scan and decoded only
when their type holds text, as the fields searched
(:class:`~sessiontree.model.search_parts.SearchFields`), one at a time: a file is never
held. Bad lines and lines over ``max_line_bytes`` are
skipped and counted.

Queries (:func:`query`) rank by bm25, cut an FTS5 ``snippet()`` around the match (from
the text read again at the hit's offset: :mod:`.snippets`), and
say of each hit whether it is on its transcript's active path, computed then (appends
move the active path): the transcripts with hits are opened through the skeleton cache
the caller passes. Plain words are searched as FTS5 phrases (each whitespace-separated
word quoted: ``foo-bar`` finds "foo bar", a stray ``"`` is text); ``fts=True`` takes the
query as FTS5 syntax, and a syntax error is :class:`QuerySyntaxError`.

Modules: ``database`` (the schema, :func:`open_index`), ``updating``
(:func:`update_index`), ``querying`` (:func:`query`, :class:`Filters`, :class:`SearchHit`).
The faces call ``update_index(db, layout, ...)`` then ``query(db, text, filters=...)``.
"""

from sessiontree.catalog.search_index.database import (
    FORMAT,
    RACY_NS,
    SOURCES,
    Source,
    open_index,
    reset_index,
)
from sessiontree.catalog.search_index.querying import (
    SNIPPET_CHARS,
    Filters,
    QuerySyntaxError,
    SearchHit,
    date_bound,
    describe,
    parse_snippet,
    phrase_query,
    query,
)
from sessiontree.catalog.search_index.snippets import SNIPPET_TOKENS
from sessiontree.catalog.search_index.updating import (
    BATCH_BYTES,
    MAX_LINE_BYTES,
    IndexStats,
    update_index,
)

__all__ = [
    "BATCH_BYTES",
    "FORMAT",
    "MAX_LINE_BYTES",
    "RACY_NS",
    "SNIPPET_CHARS",
    "SNIPPET_TOKENS",
    "SOURCES",
    "Filters",
    "IndexStats",
    "QuerySyntaxError",
    "SearchHit",
    "Source",
    "date_bound",
    "describe",
    "open_index",
    "parse_snippet",
    "phrase_query",
    "query",
    "reset_index",
    "update_index",
]
