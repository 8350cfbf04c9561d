"""The viewer's Starlette app, made from a :class:`ViewerConfig` (nothing read from the
environment), every route module's routes, and :mod:`.security` around them."""

from __future__ import annotations

from starlette.applications import Starlette
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


def create_app(config: ViewerConfig) -> Starlette:
    """The viewer over ``config.root``."""
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
            Middleware(SecurityMiddleware, hosts=config.allowed_hosts, password=config.password)
        ],
        exception_handlers={
            SessionTreeError: error_page,
            OSError: error_page,
            WriteRefused: write_refused,
        },
    )
    app.state.config = config
    return app
