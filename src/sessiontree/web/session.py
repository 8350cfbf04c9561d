"""A session: ``/s/{id}`` (the conversation of a branch, paged, and the tree), the next
page of it, ``switch`` (preview, then a POST), and the HTML export."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from sessiontree.conversation.rewind import apply_switch, newest_leaves, plan_switch
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.model.resume import message_at_or_above
from sessiontree.views.export import iter_html
from sessiontree.views.html import render
from sessiontree.views.html.graph import GraphNode
from sessiontree.views.html.pages import (
    INLINE_GRAPH_RECORDS,
    PAGE,
    BranchView,
    branch_leaf,
    branch_view,
    graph_view,
    session_title,
)
from sessiontree.web.config import ViewerConfig
from sessiontree.web.responses import (
    config_of,
    live_holders,
    open_session,
    page,
    reading,
    refuse_on_store,
)
from sessiontree.web.security import check_write


def _start(request: Request) -> int:
    try:
        return max(0, int(request.query_params.get("start", "0")))
    except ValueError:
        return 0


def build_session(
    config: ViewerConfig,
    session_id: str,
    *,
    leaf: str | None,
    at: str | None,
    start: int,
    follow: bool,
) -> dict[str, Any]:
    """What the session page shows: the branch of ``leaf`` (or of ``at``, paged to it;
    neither: the active path), from ``start``; ``follow``: its last page, to follow."""
    transcript = open_session(config, session_id)
    shown = branch_leaf(transcript, leaf or at)
    view = branch_view(transcript, leaf=shown, start=start)
    if at is not None and at in view.path and start == 0:
        index = view.path.index(at)
        if index >= PAGE:
            view = branch_view(transcript, leaf=shown, start=max(0, index - 5))
    if follow and view.more is not None:
        view = branch_view(transcript, leaf=shown, start=max(0, len(view.path) - PAGE))
    inline = len(transcript.tree.nodes) <= INLINE_GRAPH_RECORDS
    graph = (
        graph_view(transcript, selected=() if view.on_active_path else view.path)
        if inline
        else None
    )
    # (the problems a read finds; the cycle search `doctor` makes is left to it)
    problems = [*transcript.scan.problems, *transcript.tree.build_problems]
    return {
        "view": view,
        "graph": graph,
        "cwd": transcript.cwd,
        "live": bool(live_holders(config, transcript.session_id)),
        # (a stored transcript's: the bytes synced of it)
        "size": transcript.scan.size if config.store else transcript.path.stat().st_size,
        "problems": len(problems),
    }


def build_tree_fragment(config: ViewerConfig, session_id: str, leaf: str | None) -> str:
    """The tree of a big session, drawn once its page shows (``/s/{id}/tree``)."""
    transcript = open_session(config, session_id)
    shown = branch_leaf(transcript, leaf)
    selected: list[str] = []
    if shown is not None and shown != transcript.leaf:
        selected = transcript.tree.branch_path(shown)
    graph = graph_view(transcript, selected=selected)
    return render("tree_fragment.html", graph=graph, href=_href(transcript.session_id))


async def tree_fragment(request: Request) -> Response:
    html = await run_in_threadpool(
        reading(request, build_tree_fragment),
        request.path_params["session_id"],
        request.query_params.get("leaf"),
    )
    return Response(html, media_type="text/html")


def _href(session_id: str) -> Callable[[GraphNode], str]:
    def href(node: GraphNode) -> str:
        return f"/s/{session_id}?leaf={node.tip}"

    return href


async def session_page(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    follow = request.query_params.get("follow") == "1"
    shown = await run_in_threadpool(
        reading(request, build_session),
        session_id,
        leaf=request.query_params.get("leaf"),
        at=request.query_params.get("at"),
        start=_start(request),
        follow=follow,
    )
    view = shown["view"]
    assert isinstance(view, BranchView)
    return page(
        request,
        "session.html",
        page_title=view.title,
        href=_href(view.session_id),
        follow=follow,
        switched=request.query_params.get("switched"),
        **shown,
    )


def build_fragment(config: ViewerConfig, session_id: str, leaf: str | None, start: int) -> str:
    transcript = open_session(config, session_id)
    view = branch_view(transcript, leaf=branch_leaf(transcript, leaf), start=start)
    return render("fragment.html", view=view)


async def page_fragment(request: Request) -> Response:
    """The next page of a branch, as the HTML the session page appends."""
    html = await run_in_threadpool(
        reading(request, build_fragment),
        request.path_params["session_id"],
        request.query_params.get("leaf"),
        _start(request),
    )
    return Response(html, media_type="text/html")


def _switch_target(transcript: Transcript, to: str) -> str:
    return transcript.resolve_prompt(to, any_record=True)


def build_switch_preview(config: ViewerConfig, session_id: str, to: str) -> dict[str, Any]:
    refuse_on_store(config)
    transcript = open_session(config, session_id)
    plan = plan_switch(transcript, _switch_target(transcript, to))
    resumed = transcript.record(plan.leaf_uuid)
    return {
        "plan": plan,
        "said": resumed.text() if resumed is not None else "",
        "line": json.dumps(plan.record, ensure_ascii=False) if plan.record else None,
        "title": session_title(transcript),
        "live": live_holders(config, session_id),
    }


async def switch_preview(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    shown = await run_in_threadpool(
        build_switch_preview, config_of(request), session_id, request.query_params.get("to", "")
    )
    return page(request, "switch.html", page_title="switch branch", session_id=session_id, **shown)


def apply_switch_to(config: ViewerConfig, session_id: str, to: str) -> str | None:
    """Switch as ``sessiontree switch`` does (refused while a process holds the
    session); the record to switch back to, when switching back undoes it."""
    holders = live_holders(config, session_id)
    if holders:
        raise Refused(
            f"session {session_id} is open in a running process (pid "
            f"{', '.join(map(str, holders))}); close it first"
        )
    transcript = open_session(config, session_id)
    plan = plan_switch(transcript, _switch_target(transcript, to))
    apply_switch(transcript.path, plan)
    previous = plan.previous_leaf
    if plan.record is None or previous is None:
        return None
    back = newest_leaves(transcript.tree).get(previous, previous)
    return back if message_at_or_above(transcript.tree, back) == previous else None


async def switch_apply(request: Request) -> Response:
    config = config_of(request)
    form = await check_write(request, config.token)
    session_id = request.path_params["session_id"]
    back = await run_in_threadpool(apply_switch_to, config, session_id, form.get("to", ""))
    where = f"/s/{session_id}?switched={back or ''}"
    return RedirectResponse(where, status_code=303)


def export_stored(config: ViewerConfig, session_id: str) -> tuple[str, list[bytes]]:
    """A stored session's export, whole (it is read through the request's connection,
    which a stream would hold while the browser takes its time)."""
    transcript = open_session(config, session_id)
    return transcript.session_id, [s.encode() for s in iter_html(transcript)]


async def export_html(request: Request) -> Response:
    """The session as ``export --format html`` writes it, to download."""
    config = config_of(request)
    session_id = request.path_params["session_id"]
    chunks: Iterable[bytes] | AsyncIterator[bytes]
    if config.store is not None:
        session_id, chunks = await run_in_threadpool(reading(request, export_stored), session_id)
    else:
        transcript = await run_in_threadpool(open_session, config, session_id)
        session_id = transcript.session_id
        chunks = iterate_in_threadpool(s.encode() for s in iter_html(transcript))
    return StreamingResponse(
        chunks,
        media_type="text/html; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{session_id}.html"'},
    )


routes = [
    Route("/s/{session_id}", session_page, name="session"),
    Route("/s/{session_id}/page", page_fragment, name="page"),
    Route("/s/{session_id}/tree", tree_fragment, name="tree"),
    Route("/s/{session_id}/switch", switch_preview, methods=["GET"], name="switch_preview"),
    Route("/s/{session_id}/switch", switch_apply, methods=["POST"], name="switch"),
    Route("/s/{session_id}/export.html", export_html, name="export"),
]
