"""The viewer's search: one function, so no route knows the engine behind it: the
search index (:mod:`~sessiontree.catalog.search_index`, brought up to date first, as the
CLI's ``search`` does) when the viewer has one, else a scan of each transcript
(:func:`~sessiontree.catalog.search.search_transcript`); an index that cannot be used
(a cache: unwritable, broken) is scanned past as well."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sessiontree.catalog.index import list_sessions
from sessiontree.catalog.search import search_transcript
from sessiontree.catalog.search_index import query, update_index
from sessiontree.web.config import ViewerConfig

#: Hits a search page shows at most.
MAX_HITS = 500


def find_hits(config: ViewerConfig, text: str, *, limit: int = MAX_HITS) -> list[dict[str, Any]]:
    """Hits ``{sessionId, uuid, type, onActivePath, snippet, ...}`` for ``text`` in every
    session of the viewer's root, every branch, best first, at most ``limit``. Raises
    :class:`~sessiontree.catalog.search_index.QuerySyntaxError` only for FTS5 syntax,
    which plain words never are."""
    if config.search_index is not None:
        try:
            update_index(config.search_index, config.layout)
            hits = query(
                config.search_index, text, limit=limit, skeleton_cache=config.skeleton_cache()
            )
        except (sqlite3.Error, OSError):
            pass  # the index is a cache: without it a search is slower, not broken
        else:
            return [hit.as_json() for hit in hits]
    return _scan(config, text, limit)


def _scan(config: ViewerConfig, text: str, limit: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for row in list_sessions(config.layout, cache_file=config.cache_file):
        for hit in search_transcript(Path(row.path), text):
            found.append(hit)
            if len(found) >= limit:
                return found
    return found
