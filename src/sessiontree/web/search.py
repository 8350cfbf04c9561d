"""The viewer's search: one function, so the engine behind it can change (today
:func:`~sessiontree.catalog.search.search_transcript` over each transcript; a search
index later) without a route knowing."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sessiontree.catalog.search import search_transcript

#: Hits a search page shows at most.
MAX_HITS = 500


def find_hits(
    transcripts: Iterable[Path], query: str, *, limit: int = MAX_HITS
) -> list[dict[str, Any]]:
    """Hits ``{sessionId, uuid, type, onActivePath, snippet}`` for ``query`` in
    ``transcripts``, every branch, at most ``limit``."""
    hits: list[dict[str, Any]] = []
    for path in transcripts:
        for hit in search_transcript(path, query):
            hits.append(hit)
            if len(hits) >= limit:
                return hits
    return hits
