"""The viewer's search: one function, so no route knows the engine behind it: the
search index (:mod:`~sessiontree.catalog.search_index`, brought up to date first, as the
CLI's ``search`` does) when the viewer has one, else a scan of each transcript
(:func:`~sessiontree.catalog.search.search_transcript`); an index that cannot be used
(a cache: unwritable, broken) is scanned past as well.

The filters of ``search`` (project, session, date range, role, tool, on or off the active
path, ``history.jsonl`` too) come from the search page's form as a :class:`SearchForm`;
only the index answers them (a scan, which has no filters, is then refused rather than
showing what they leave out).

On a store, the store's own search answers (``catalog/store_search.py``'s
``search_store``: the same hits and filters, each hit with the machine and user that
synced it)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sessiontree.catalog.index import list_sessions
from sessiontree.catalog.search import search_transcript
from sessiontree.catalog.search_index import (
    Filters,
    Source,
    date_bound,
    describe,
    query,
    update_index,
)
from sessiontree.errors import Refused
from sessiontree.model.records import is_session_id
from sessiontree.model.search_parts import ROLES
from sessiontree.web.config import ViewerConfig

#: Hits a search page shows at most.
MAX_HITS = 500


#: The search form's fields (query parameters) beyond ``q``, and what ``path`` takes.
FILTER_FIELDS = ("project", "session", "since", "until", "role", "tool", "path", "history")
PATHS = ("", "active", "off")
#: What the ``history`` box sends when ticked ("" when not).
TICKED = ("1", "on")


@dataclass(frozen=True)
class SearchForm:
    """The search page's filters as the form sends them (each "" for none): ``project``
    a project folder's name under ``projects/``, ``session`` a full session id,
    ``since``/``until`` dates (YYYY-MM-DD, local time; ``until`` includes its day),
    ``role`` one of :data:`~sessiontree.model.search_parts.ROLES`, ``tool`` a tool's
    name, ``path`` ``active`` or ``off`` (the active path, or off it), ``history``
    ticked (``1``) to search ``history.jsonl`` too, what was typed (``search --history``)."""

    project: str = ""
    session: str = ""
    since: str = ""
    until: str = ""
    role: str = ""
    tool: str = ""
    path: str = ""
    history: str = ""

    @classmethod
    def of(cls, params: Mapping[str, str]) -> SearchForm:
        return cls(**{name: params.get(name, "").strip() for name in FILTER_FIELDS})

    @property
    def used(self) -> bool:
        return any(getattr(self, name) for name in FILTER_FIELDS)

    def filters(self) -> tuple[Filters, bool | None]:
        """The index's :class:`Filters` and ``on_active_path``; a value that is not one
        is refused (:class:`~sessiontree.errors.Refused`: a page saying which)."""
        if self.project and ("/" in self.project or self.project in (".", "..")):
            raise Refused(f"project: a folder of projects/, not {self.project!r}")
        if self.session and not is_session_id(self.session):
            raise Refused(f"session: a session id, not {self.session!r}")
        if self.role and self.role not in ROLES:
            raise Refused(f"role: one of {', '.join(ROLES)}, not {self.role!r}")
        if self.path not in PATHS:
            raise Refused(f"path: active or off, not {self.path!r}")
        if self.history and self.history not in TICKED:
            raise Refused(f"history: 1 or nothing, not {self.history!r}")
        sources: list[Source] = ["transcript", "subagent"]
        if self.history:
            sources.append("history")
        filters = Filters(
            project_dirs=[self.project] if self.project else None,
            session_ids=[self.session.lower()] if self.session else None,
            since=_moment("since", self.since, end=False) if self.since else None,
            until=_moment("until", self.until, end=True) if self.until else None,
            roles=[self.role] if self.role else None,
            tools=[self.tool] if self.tool else None,
            sources=sources,
        )
        return filters, {"": None, "active": True, "off": False}[self.path]


def _moment(name: str, text: str, *, end: bool) -> datetime:
    """A date (or ISO 8601 moment) of the form, as ``search --since/--until`` reads it
    (:func:`~sessiontree.catalog.search_index.date_bound`)."""
    try:
        return date_bound(text, end=end)
    except ValueError:
        raise Refused(f"{name}: a date such as 2026-11-30, not {text!r}") from None


def hit_label(hit: Mapping[str, Any]) -> str:
    """What a hit (its ``--json`` shape, from the index or the scan) is, as ``search``
    says it (:func:`~sessiontree.catalog.search_index.describe`)."""
    return describe(hit.get("kind"), hit.get("type"), hit.get("toolName"), hit.get("source"))


def project_folders(config: ViewerConfig) -> list[str]:
    """The project folders' names under ``projects/`` (every machine's, on a store), for
    the form's choice."""
    if config.store is not None:
        from sessiontree.storage.store.reads import current_sources

        folders = {s.project_dir for s in current_sources(config.store_conn())}
        return sorted(f for f in folders if f is not None)
    try:
        return sorted(p.name for p in config.layout.projects_dir.iterdir() if p.is_dir())
    except OSError:
        return []


def find_hits(
    config: ViewerConfig,
    text: str,
    *,
    form: SearchForm | None = None,
    limit: int = MAX_HITS,
) -> list[dict[str, Any]]:
    """Hits ``{sessionId, uuid, type, onActivePath, snippet, ...}`` for ``text`` in every
    session of the viewer's root, every branch, best first, at most ``limit``, narrowed
    to what ``form`` asks. Raises
    :class:`~sessiontree.catalog.search_index.QuerySyntaxError` only for FTS5 syntax,
    which plain words never are, and :class:`~sessiontree.errors.Refused` for a filter
    that is not one, or filters without a usable index."""
    form = form or SearchForm()
    filters, on_active_path = form.filters()
    if config.store is not None:
        from sessiontree.catalog.store_search import search_store

        found = search_store(
            config.store_conn(), text, filters=filters, on_active_path=on_active_path, limit=limit
        )
        return [hit.as_json() for hit in found]
    if config.search_index is not None:
        try:
            update_index(config.search_index, config.layout)
            hits = query(
                config.search_index,
                text,
                filters=filters,
                on_active_path=on_active_path,
                limit=limit,
                skeleton_cache=config.skeleton_cache(),
            )
        except (sqlite3.Error, OSError):
            pass  # the index is a cache: without it a search is slower, not broken
        else:
            return [hit.as_json() for hit in hits]
    if form.used:
        raise Refused("the filters need the search index, which this viewer cannot use")
    return _scan(config, text, limit)


def warm_index(config: ViewerConfig) -> None:
    """Bring the viewer's search index up to date, if it has one (``serve`` runs this in
    the background as it starts, so that the first search does not wait for the first
    build: half a minute for a few GB). An index it cannot use is left to the search to
    scan past. A store has no index here: the store searches itself."""
    if config.search_index is None or config.store is not None:
        return
    with contextlib.suppress(sqlite3.Error, OSError):
        update_index(config.search_index, config.layout)


def _scan(config: ViewerConfig, text: str, limit: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for row in list_sessions(config.layout, cache_file=config.cache_file):
        for hit in search_transcript(Path(row.path), text):
            found.append(hit)
            if len(found) >= limit:
                return found
    return found
