"""What every route shares: opening the session a URL names, rendering a page, and
errors as pages (one line, the right status; never a traceback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from sessiontree.catalog.resolve import find_transcripts
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Ambiguous, NotFound, SessionTreeError
from sessiontree.lifecycle.live import session_holders
from sessiontree.model.records import is_session_id
from sessiontree.views.html import render
from sessiontree.web.config import ViewerConfig
from sessiontree.web.security import TOKEN_FIELD


def config_of(request: Request) -> ViewerConfig:
    config: ViewerConfig = request.app.state.config
    return config


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
    return Transcript.open(
        transcript_path(config, session_id), skeleton_cache=config.skeleton_cache()
    )


def live_holders(config: ViewerConfig, session_id: str) -> list[int]:
    """The pids of running processes that hold the session open."""
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
        **context,
    )
    return HTMLResponse(html, status_code=status)


def status_of(exc: SessionTreeError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Ambiguous):
        return 400
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
