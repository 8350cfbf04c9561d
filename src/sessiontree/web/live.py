"""``/s/{id}/events``: a session still being written, followed (server-sent events).

The page (``/s/{id}?follow=1``) says which branch it shows and its last record; every
:attr:`~sessiontree.web.config.ViewerConfig.poll_seconds` the transcript's size is
looked at, and when it grew, the records the branch gained since are sent as one
``records`` event (their HTML, rendered by the same templates); when the branch shown is
no longer the one resumed from that record (a rewind, a switch), a ``reload`` event.
A stream lasts :attr:`~sessiontree.web.config.ViewerConfig.follow_seconds`; the browser
then reconnects with the last record it got (``Last-Event-ID``), and the records
appended meanwhile come first.
The transcript is read again through the skeleton cache, so only what was appended is
scanned.

On a store, what is looked at is the bytes synced of the session's file (its current
generation's), each look on a connection of its own, none held while the stream waits:
the page follows what each sync pushes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from sessiontree.views.html import render
from sessiontree.views.html.conversation import build_items
from sessiontree.web.config import ViewerConfig
from sessiontree.web.responses import config_of, open_session, reading, transcript_path

if TYPE_CHECKING:
    from sessiontree.storage.store.reads import StoredSource

#: Sent every so many polls with nothing new, so a dead connection is found.
KEEPALIVE_POLLS = 30


def new_records(
    config: ViewerConfig, session_id: str, after: str, *, active: bool
) -> tuple[str | None, str | None]:
    """(the HTML of the records after ``after`` on the branch resumed, the new last
    record); (None, None) when ``after`` is no longer on that branch: reload."""
    transcript = open_session(config, session_id)
    path = transcript.active_path if active else transcript.tree.path_to(after)
    if after and after not in path:
        return None, None
    start = path.index(after) + 1 if after else 0
    gained = path[start:]
    if not gained:
        return "", after
    items = build_items(transcript.records(gained))
    return render("fragment_items.html", items=items), gained[-1]


def locate(config: ViewerConfig, session_id: str) -> Path | StoredSource:
    """Where the session is: its file, or its stored source."""
    if config.store is not None:
        from sessiontree.web.store import stored_source

        return stored_source(config.store_conn(), session_id)
    return transcript_path(config, session_id)


def size_of(config: ViewerConfig, where: Path | StoredSource) -> object:
    """How much of the transcript there is: its file's size, or the stored source's
    current generation and the bytes synced of it; None: it is gone."""
    if isinstance(where, Path):
        try:
            return where.stat().st_size
        except OSError:
            return None
    from sessiontree.storage.store.reads import current_size

    return current_size(config.store_conn(), where)


def event(name: str, data: object) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


async def follow(
    request: Request, config: ViewerConfig, session_id: str, after: str, *, active: bool
) -> AsyncIterator[str]:
    where = await run_in_threadpool(reading(request, locate), session_id)
    measure = reading(request, size_of)  # (on a store: a connection for each look only)
    size = await run_in_threadpool(measure, where)
    idle = 0
    ends = asyncio.get_running_loop().time() + config.follow_seconds
    yield "retry: 1000\n: following\n\n"
    if after:  # a reconnection: what came while it was away
        size = -1
    while not await request.is_disconnected():
        if asyncio.get_running_loop().time() >= ends:
            return
        await asyncio.sleep(config.poll_seconds)
        now = await run_in_threadpool(measure, where)
        if now is None:
            yield event("reload", {})
            return
        if now == size:
            idle += 1
            if idle >= KEEPALIVE_POLLS:
                idle = 0
                yield ": still here\n\n"
            continue
        size, idle = now, 0
        html, last = await run_in_threadpool(
            reading(request, new_records), session_id, after, active=active
        )
        if html is None or last is None:
            yield event("reload", {})
            return
        if html:
            after = last
            yield f"id: {last}\n" + event("records", {"html": html, "last": last})


async def events(request: Request) -> Response:
    config = config_of(request)
    session_id = request.path_params["session_id"]
    # A reconnection says the last record it got (the ``id`` of its last event).
    after = request.headers.get("last-event-id") or request.query_params.get("after", "")
    leaf = request.query_params.get("leaf", "")
    transcript = await run_in_threadpool(reading(request, open_session), session_id)
    active = not leaf or leaf == transcript.leaf
    return StreamingResponse(
        follow(request, config, session_id, after, active=active),
        media_type="text/event-stream",
        headers={"x-accel-buffering": "no"},
    )


routes = [Route("/s/{session_id}/events", events, name="events")]
