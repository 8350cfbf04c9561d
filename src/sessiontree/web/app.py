"""The viewer's Starlette app, made from a :class:`ViewerConfig` (nothing read from the
environment), every route module's routes, and :mod:`.security` around them; on a store,
its pool of read-only connections (:mod:`.store`), closed with the app."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from sessiontree.errors import SessionTreeError
from sessiontree.views.html import STATIC_FILES, static_bytes
from sessiontree.web import checkpoints, live, session, sessions, usage
from sessiontree.web.config import ViewerConfig
from sessiontree.web.responses import error_page
from sessiontree.web.security import SecurityMiddleware, WriteRefused


async def static_file(request: Request) -> Response:
    """The viewer's stylesheet and script, shipped in the package."""
    name = request.path_params["name"]
    if name not in STATIC_FILES:
        return PlainTextResponse("not found\n", status_code=404)
    return Response(static_bytes(name), media_type=STATIC_FILES[name])


async def no_icon(request: Request) -> Response:
    """The viewer has no icon: said plainly, so a browser's request of one is no 404."""
    return Response(status_code=204)


async def write_refused(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(f"refused: {exc}\n", status_code=403)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await run_in_threadpool(close, app)


def close(app: Starlette) -> None:
    """Let go of what the app holds: the store's connections (once the server stops)."""
    if app.state.store is not None:
        app.state.store.close()


def create_app(config: ViewerConfig) -> Starlette:
    """The viewer over ``config.root``, or over ``config.store`` (read only)."""
    routes = [
        *sessions.routes,
        *session.routes,
        *checkpoints.routes,
        *usage.routes,
        *live.routes,
        Route("/static/{name}", static_file, name="static"),
        Route("/favicon.ico", no_icon),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(
                SecurityMiddleware,
                hosts=config.allowed_hosts,
                password=config.password,
                read_only=config.store is not None,
            )
        ],
        exception_handlers={
            SessionTreeError: error_page,
            OSError: error_page,
            WriteRefused: write_refused,
        },
        lifespan=lifespan,
    )
    app.state.config = config
    app.state.store = app.state.store_name = app.state.store_dsn = None
    if config.store is not None:
        from sessiontree.storage.store.connect import describe_dsn, shareable_dsn
        from sessiontree.web.store import StorePool

        app.state.store = StorePool(config.store)
        app.state.store_name = describe_dsn(config.store)  # (never the DSN: its password)
        app.state.store_dsn = shareable_dsn(config.store)  # (for the pull line, no password)
    return app
