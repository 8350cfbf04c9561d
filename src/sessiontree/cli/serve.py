"""``sessiontree serve``: the local web viewer (:mod:`sessiontree.web`), on 127.0.0.1.

Starlette and uvicorn are imported only when the command runs: ``sessiontree --help``
and every other command load neither."""

from __future__ import annotations

import errno
import socket
import threading
import webbrowser

import click

from sessiontree.cli.output import get_env
from sessiontree.errors import Refused


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
    help="Port to listen on (0: any free one).",
)  # fmt: skip
@click.option(
    "--open/--no-open", "open_browser", default=True, show_default=True,
    help="Open the viewer in a browser.",
)  # fmt: skip
@click.option(
    "--password",
    envvar="SESSIONTREE_SERVE_PASSWORD",
    show_envvar=True,
    metavar="TEXT",
    help="Ask every request for this password (HTTP Basic); needed off loopback. "
    "Prefer the environment variable: an option shows in the process list.",
)
def serve(host: str, port: int, open_browser: bool, password: str | None) -> None:
    """The local web viewer: sessions, their trees and branches, checkpoints, usage.

    Bound to 127.0.0.1 unless --host names another address (which needs a password).
    Writes (switch, restore, undo) are previewed first and need the page's token.
    """
    env = get_env()
    import uvicorn  # only here: the CLI stays light

    from sessiontree.web.app import create_app
    from sessiontree.web.config import ViewerConfig
    from sessiontree.web.search import warm_index
    from sessiontree.web.security import allowed_hosts, needs_password, new_token

    needs_password(host, password)
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"
    config = ViewerConfig(
        root=env.layout.root,
        token=new_token(),
        password=password or None,
        allowed_hosts=allowed_hosts(shown, bound),
        cache_file=env.cache_file,
        cache_dir=env.cache_dir,
        search_index=env.search_index,
    )
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), log_level="warning", access_log=False, lifespan="off")
    )
    click.echo(f"sessiontree: serving {env.layout.root} on {url} (Ctrl+C stops)", err=True)
    # The search index brought up to date meanwhile: the first search need not build it.
    threading.Thread(target=warm_index, args=(config,), daemon=True).start()
    if open_browser:
        # The socket listens already: the browser's request waits for the server.
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise Refused(
                f"port {port} on {host} is in use: pass --port N (0: any free one)"
            ) from exc
        raise Refused(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
