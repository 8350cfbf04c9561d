"""What keeps the viewer's pages from being turned against their reader.

- **Everything from a transcript is escaped**: Jinja2 autoescape on every template,
  Markdown with raw HTML off and only ``http``/``https``/``mailto`` links
  (:mod:`sessiontree.views.html.markdown`).
- **A strict Content-Security-Policy** on every response (:data:`CSP`): scripts and
  styles only from the viewer itself (no inline script, no inline style, no
  ``eval``), nothing loaded from elsewhere, no framing, forms post only here. An
  escaping bug would still run nothing.
- **Writes need the server's token and a POST**: each server makes a random token
  (:func:`new_token`); its pages carry it in their forms, and a mutating route refuses a
  request that does not send it back (:func:`check_write`), or that another site sent
  (``Origin``/``Sec-Fetch-Site``): a page elsewhere cannot read the token (the
  same-origin policy), so it cannot forge the write (CSRF). A GET never changes
  anything.
- **Only the expected Host** (:class:`SecurityMiddleware`): on loopback, a site whose
  name resolves to 127.0.0.1 (DNS rebinding) gets a 421, not the pages.
- **A password off loopback**: served on another address, every request must give the
  password (HTTP Basic); the CLI refuses such an address without one
  (:func:`needs_password`).
- **A store is read only** (``serve --store``): every request but a GET or HEAD is
  answered 403 (:data:`READ_ONLY`) before any route sees it, and the previews of writes
  are refused too (:class:`ReadOnly`); the store's connections refuse writes besides.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request

from sessiontree.errors import Refused

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The Content-Security-Policy of every response.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

#: Headers every response gets.
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    # (not no-referrer: under it a browser sends a form post's Origin as "null")
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}

#: The form field a write carries the token in.
TOKEN_FIELD = "token"

#: What a viewer of a store answers a write.
READ_ONLY = "this viewer shows a store: it is read-only"


class ReadOnly(Refused):
    """A write, or the preview of one, asked of a viewer that shows a store (403)."""

    def __init__(self) -> None:
        super().__init__(READ_ONLY)


def new_token() -> str:
    """A per-server secret: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def needs_password(host: str, password: str | None) -> None:
    """Refuse serving on an address other machines reach without a password."""
    if not is_loopback(host) and not password:
        raise Refused(
            f"--host {host} lets other machines in: give a password ($SESSIONTREE_SERVE_PASSWORD "
            "or --password) to serve there"
        )


def allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The ``Host`` headers a server bound to ``host``:``port`` answers: on loopback, its
    own names only (a rebinding site's name is refused); elsewhere (``0.0.0.0`` has as
    many names as the machine) any, the password standing guard (None)."""
    if not is_loopback(host):
        return None
    names = {host, "localhost", "127.0.0.1", "[::1]"}
    return frozenset(f"{name}:{port}" for name in names)


def same(given: str, expected: str) -> bool:
    """Compare secrets in constant time."""
    return hmac.compare_digest(given.encode(), expected.encode())


def password_given(header: str | None, password: str) -> bool:
    """Whether an ``Authorization: Basic`` header gives ``password`` (any user name)."""
    if header is None or not header.lower().startswith("basic "):
        return False
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    _user, colon, given = decoded.partition(":")
    return bool(colon) and same(given, password)


class SecurityMiddleware:
    """Host check, password, :data:`HEADERS` on every response, and (``read_only``)
    nothing but reads."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: frozenset[str] | None,
        password: str | None,
        read_only: bool = False,
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.password = password
        self.read_only = read_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.hosts is not None and headers.get("host", "") not in self.hosts:
            await _plain(send, 421, "this server answers only under its own address\n")
            return
        if self.password is not None and not password_given(
            headers.get("authorization"), self.password
        ):
            await _plain(
                send,
                401,
                "a password is needed\n",
                [(b"www-authenticate", b'Basic realm="sessiontree", charset="UTF-8"')],
            )
            return
        if self.read_only and scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 403, f"{READ_ONLY}\n")
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                present = {k.decode("latin-1").lower() for k, _ in raw}
                raw.extend((k.encode(), v.encode()) for k, v in HEADERS.items() if k not in present)
                message["headers"] = raw
            await send(message)

        await self.app(scope, receive, with_headers)


async def _plain(
    send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    headers += [(k.encode(), v.encode()) for k, v in HEADERS.items()]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": text.encode()})


#: The largest form a write may send (its fields are a token and an id or two).
MAX_FORM_BYTES = 64 * 1024


async def read_form(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body's fields (the first of each name);
    anything else, or a body past :data:`MAX_FORM_BYTES`, is refused."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise WriteRefused("a write is a form post")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise WriteRefused("the form is too large")
    try:
        pairs = parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=100)
    except (UnicodeDecodeError, ValueError) as exc:
        raise WriteRefused("the form cannot be read") from exc
    fields: dict[str, str] = {}
    for key, value in pairs:
        fields.setdefault(key, value)
    return fields


class WriteRefused(Exception):
    """A write without the token, not a POST, or sent by another site (403)."""


async def check_write(request: Request, token: str) -> dict[str, str]:
    """The form of a write, once it is known to come from the viewer's own page: a POST,
    not sent by another site, carrying the server's token. Raises :class:`WriteRefused`."""
    if request.method != "POST":
        raise WriteRefused("a write is a POST")
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise WriteRefused(f"sent by another site ({site})")
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        expected = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin != expected:
            raise WriteRefused(f"sent from {origin}")
    elif origin == "null":
        raise WriteRefused("sent from an opaque origin")
    fields = await read_form(request)
    if not same(fields.get(TOKEN_FIELD, ""), token):
        raise WriteRefused("the server's token is missing or wrong (reload the page)")
    return fields
