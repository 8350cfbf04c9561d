"""``/``: projects and their sessions; ``/search``: every branch of every session. On a
store, its sessions, each with the machine and user that synced it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sessiontree.catalog.index import SessionInfo, list_sessions
from sessiontree.catalog.resolve import session_matches
from sessiontree.conversation.rewind import switchable_leaves
from sessiontree.conversation.transcript import Transcript
from sessiontree.lifecycle.live import live_session_ids
from sessiontree.model.search_parts import ROLES
from sessiontree.views.times import local_time
from sessiontree.web.config import ViewerConfig
from sessiontree.web.responses import config_of, page, reading
from sessiontree.web.search import (
    MAX_HITS,
    SearchForm,
    find_hits,
    hit_label,
    project_folders,
)

if TYPE_CHECKING:
    from sessiontree.catalog.stored import StoredInfo
    from sessiontree.storage.store.reads import StoredSource

#: Sessions up to this size are opened for their prompts and branches; bigger ones say
#: so on their own page (a listing stays a stat and a head and tail read each).
COUNT_UP_TO = 8 * 1024 * 1024
#: Sessions a page lists, newest first: only those are opened for their counts, so the
#: first page of a store of thousands comes as fast as one of a hundred.
PAGE_SIZE = 100


@dataclass(frozen=True)
class SessionRow:
    info: SessionInfo
    started: str
    updated: str
    live: bool
    prompts: int | None
    branches: int | None
    machine: str | None = None  # (a stored session's: the machine and OS user that synced it)
    user: str | None = None


@dataclass(frozen=True)
class Project:
    cwd: str
    rows: tuple[SessionRow, ...]


def _counts(
    config: ViewerConfig, info: SessionInfo, source: StoredSource | None = None
) -> tuple[int | None, int | None]:
    """Its prompts and branches (``source``: where the store holds it)."""
    if info.sizeBytes > COUNT_UP_TO:
        return None, None
    try:
        if source is not None:
            from sessiontree.conversation.stored import open_stored

            transcript = open_stored(config.store_conn(), source)
        else:
            transcript = Transcript.open(Path(info.path), skeleton_cache=config.skeleton_cache())
        return len(transcript.numbered_prompts()), 1 + len(switchable_leaves(transcript))
    except OSError:
        return None, None


@dataclass(frozen=True)
class Listing:
    """One page of the listing: its sessions by project, and whether older ones follow."""

    projects: list[Project]
    page: int
    more: bool


def build_projects(
    config: ViewerConfig, search: str | None = None, page: int = 0, size: int | None = None
) -> Listing:
    """The sessions of the root, newest first, page ``page`` of ``size`` of them
    (:data:`PAGE_SIZE`), by project (in the order of their newest session)."""
    size = size or PAGE_SIZE
    rows: list[tuple[SessionInfo, StoredInfo | None]]
    if config.store is not None:
        from sessiontree.catalog.stored import list_stored_sessions

        rows = [(s.info, s) for s in list_stored_sessions(config.store_conn())]
        live: set[str] = set()  # (a stored session's processes ran where it was synced)
    else:
        rows = [(info, None) for info in list_sessions(config.layout, cache_file=config.cache_file)]
        live = live_session_ids(config.layout)
    if search:  # as ``sessions --search`` (and ``-r``) match
        rows = [(info, s) for info, s in rows if session_matches(info, search)]
    shown = rows[page * size : (page + 1) * size]
    projects: dict[str, list[SessionRow]] = {}
    for info, stored in shown:
        if stored is None:
            prompts, branches = _counts(config, info)
        else:
            prompts, branches = _counts(config, info, stored.source)
        projects.setdefault(info.cwd or info.projectDir, []).append(
            SessionRow(
                info,
                local_time(info.startedAt),
                local_time(info.updatedAt),
                info.sessionId in live,
                prompts,
                branches,
                stored.machine if stored else None,
                stored.user if stored else None,
            )
        )
    listed = [Project(cwd, tuple(found)) for cwd, found in projects.items()]
    return Listing(listed, page, more=len(rows) > (page + 1) * size)


async def sessions_page(request: Request) -> Response:
    search = request.query_params.get("filter") or None
    number = request.query_params.get("page", "0")
    page_number = int(number) if number.isdigit() and len(number) < 7 else 0
    listing = await run_in_threadpool(reading(request, build_projects), search, page_number)
    return page(
        request,
        "sessions.html",
        page_title="sessiontree: sessions",
        projects=listing.projects,
        listing=listing,
        filter=search or "",
    )


async def search_page(request: Request) -> Response:
    config = config_of(request)
    query = request.query_params.get("q", "")
    form = SearchForm.of(request.query_params)
    hits = []
    if query.strip():
        find = reading(request, find_hits)
        hits = await run_in_threadpool(partial(find, query, form=form, limit=MAX_HITS))
    return page(
        request,
        "search.html",
        page_title=f"sessiontree: search {query}",
        query=query,
        hits=[(hit, hit_label(hit), local_time(hit.get("timestamp"))) for hit in hits],
        form=form,
        max_hits=MAX_HITS,
        indexed=config.search_index is not None or config.store is not None,
        projects=await run_in_threadpool(reading(request, project_folders)),
        roles=ROLES,
    )


routes = [
    Route("/", sessions_page, name="sessions"),
    Route("/search", search_page, name="search"),
]
