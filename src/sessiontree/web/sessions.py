"""``/``: projects and their sessions; ``/search``: every branch of every session."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

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
from sessiontree.web.responses import config_of, page
from sessiontree.web.search import (
    MAX_HITS,
    SearchForm,
    find_hits,
    hit_label,
    project_folders,
)

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


@dataclass(frozen=True)
class Project:
    cwd: str
    rows: tuple[SessionRow, ...]


def _counts(config: ViewerConfig, info: SessionInfo) -> tuple[int | None, int | None]:
    if info.sizeBytes > COUNT_UP_TO:
        return None, None
    try:
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
    rows = list_sessions(config.layout, cache_file=config.cache_file)
    if search:  # as ``sessions --search`` (and ``-r``) match
        rows = [r for r in rows if session_matches(r, search)]
    shown = rows[page * size : (page + 1) * size]
    live = live_session_ids(config.layout)
    projects: dict[str, list[SessionRow]] = {}
    for info in shown:
        prompts, branches = _counts(config, info)
        projects.setdefault(info.cwd or info.projectDir, []).append(
            SessionRow(
                info,
                local_time(info.startedAt),
                local_time(info.updatedAt),
                info.sessionId in live,
                prompts,
                branches,
            )
        )
    listed = [Project(cwd, tuple(found)) for cwd, found in projects.items()]
    return Listing(listed, page, more=len(rows) > (page + 1) * size)


async def sessions_page(request: Request) -> Response:
    config = config_of(request)
    search = request.query_params.get("filter") or None
    number = request.query_params.get("page", "0")
    page_number = int(number) if number.isdigit() and len(number) < 7 else 0
    listing = await run_in_threadpool(build_projects, config, search, page_number)
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
        hits = await run_in_threadpool(partial(find_hits, config, query, form=form, limit=MAX_HITS))
    return page(
        request,
        "search.html",
        page_title=f"sessiontree: search {query}",
        query=query,
        hits=[(hit, hit_label(hit), local_time(hit.get("timestamp"))) for hit in hits],
        form=form,
        max_hits=MAX_HITS,
        indexed=config.search_index is not None,
        projects=await run_in_threadpool(project_folders, config),
        roles=ROLES,
    )


routes = [
    Route("/", sessions_page, name="sessions"),
    Route("/search", search_page, name="search"),
]
