"""What every route shares: reading the root or the store, opening the session a URL
names, rendering a page, and errors as pages (one line, the right status; never a
traceback)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from starlette.requests import Request
from starlette.responses import HTMLResponse

from sessiontree.catalog.resolve import find_transcripts
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Ambiguous, NotFound, SessionTreeError, StoreError
from sessiontree.lifecycle.live import session_holders
from sessiontree.model.records import is_session_id
from sessiontree.views.html import render
from sessiontree.web.config import ViewerConfig
from sessiontree.web.security import TOKEN_FIELD, ReadOnly

if TYPE_CHECKING:
    from sessiontree.web.store import StorePool

P = ParamSpec("P")
T = TypeVar("T")


def config_of(request: Request) -> ViewerConfig:
    config: ViewerConfig = request.app.state.config
    return config


def reading(request: Request, build: Callable[Concatenate[ViewerConfig, P], T]) -> Callable[P, T]:
    """``build`` given the viewer's config, to run in the threadpool: on a store, with
    one connection of the app's pool (``config.conn``) for the whole build, its
    snapshot ended as the build returns (so a build reads all it shows)."""
    config = config_of(request)
    pool: StorePool | None = request.app.state.store

    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        if pool is None:
            return build(config, *args, **kwargs)
        with pool.connection() as conn:
            return build(replace(config, conn=conn), *args, **kwargs)

    return run


def refuse_on_store(config: ViewerConfig) -> None:
    """A write, or its preview, on a viewer of a store: refused (403)."""
    if config.store is not None:
        raise ReadOnly()


def transcript_path(config: ViewerConfig, session_id: str) -> Path:
    """The transcript of a session named by its full id (a URL names nothing else: no
    path, prefix or title reaches the resolver from a request)."""
    if not is_session_id(session_id):
        raise NotFound("session", session_id)
    exact = [p for p in find_transcripts(config.layout, session_id) if p.stem == session_id.lower()]
    if not exact:
        raise NotFound("session", session_id)
    return exact[0]


def open_session(config: ViewerConfig, session_id: str) -> Transcript:
    """The session a URL names by its full id: the root's transcript, or the store's."""
    if config.store is not None:
        from sessiontree.web.store import open_stored_session

        return open_stored_session(config.store_conn(), session_id)
    return Transcript.open(
        transcript_path(config, session_id), skeleton_cache=config.skeleton_cache()
    )


def live_holders(config: ViewerConfig, session_id: str) -> list[int]:
    """The pids of running processes that hold the session open (none of a stored
    session: its processes ran on the machine that synced it)."""
    if config.store is not None:
        return []
    return [h.pid for h in session_holders(config.layout, session_id)]


def page(request: Request, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    """``template`` as a page: with the server's token for its forms."""
    config = config_of(request)
    html = render(
        template,
        standalone=False,
        token=config.token,
        token_field=TOKEN_FIELD,
        root=str(config.root),
        store=request.app.state.store_name,
        store_dsn=request.app.state.store_dsn,
        read_only=config.store is not None,
        **context,
    )
    return HTMLResponse(html, status_code=status)


def status_of(exc: SessionTreeError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Ambiguous):
        return 400
    if isinstance(exc, ReadOnly):
        return 403
    if isinstance(exc, StoreError):
        return 503
    return 409


async def error_page(request: Request, exc: Exception) -> HTMLResponse:
    """A :class:`SessionTreeError` as a page: its one line; an ``OSError`` (a file that
    could not be read or written) too, as the CLI says it."""
    if isinstance(exc, SessionTreeError):
        status, message = status_of(exc), str(exc)
    else:
        assert isinstance(exc, OSError)
        where = f"{exc.filename}: " if exc.filename else ""
        status, message = 500, f"{where}{exc.strerror or exc}"
    return page(request, "error.html", status=status, page_title="sessiontree: error",
                message=message)  # fmt: skip
