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
@click.option(
    "--tls-cert", type=click.Path(dir_okay=False), metavar="FILE",
    help="Serve HTTPS with this certificate (PEM; with --tls-key): off loopback, the "
    "password then does not travel in the clear.",
)  # fmt: skip
@click.option(
    "--tls-key", type=click.Path(dir_okay=False), metavar="FILE",
    help="The private key of --tls-cert (PEM).",
)  # fmt: skip
def serve(
    host: str,
    port: int,
    open_browser: bool,
    password: str | None,
    tls_cert: str | None,
    tls_key: str | None,
) -> None:
    """The local web viewer: sessions, their trees and branches, checkpoints, usage.

    Bound to 127.0.0.1 unless --host names another address (which needs a password,
    and should have --tls-cert and --tls-key: plain HTTP carries it in the clear).
    Writes (switch, restore, undo) are previewed first and need the page's token.
    With --store, the viewer shows the store's sessions, read only (no local root
    needed).
    """
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    env = get_env(reads_store=True)
    shown_what = str(env.layout.root)
    if env.store is not None:
        from sessiontree.cli.stored import store_connection
        from sessiontree.storage.store.connect import describe_dsn

        with store_connection(env):  # (reachable, its schema one this program reads)
            pass
        shown_what = f"the store {describe_dsn(env.store)} (read-only)"
    import ssl

    import uvicorn  # only here: the CLI stays light

    from sessiontree.web.app import close, create_app
    from sessiontree.web.config import ViewerConfig
    from sessiontree.web.search import warm_index
    from sessiontree.web.security import allowed_hosts, is_loopback, needs_password, new_token

    needs_password(host, password)
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"{'https' if tls_cert else 'http'}://{shown}:{bound}/"
    config = ViewerConfig(
        root=env.layout.root,
        token=new_token(),
        password=password or None,
        allowed_hosts=allowed_hosts(shown, bound),
        cache_file=env.cache_file,
        cache_dir=env.cache_dir,
        usage_cache_file=env.usage_cache_file,
        search_index=None if env.store else env.search_index,
        store=env.store,
    )
    app = create_app(config)
    settings = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ssl_certfile=tls_cert,
        ssl_keyfile=tls_key,
    )
    try:
        settings.load()  # (the certificate is read here: a bad one is one line, not a trace)
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        close(app)
        raise Refused(f"cannot serve HTTPS with {tls_cert} and {tls_key}: {exc}") from exc
    server = uvicorn.Server(settings)
    click.echo(f"sessiontree: serving {shown_what} on {url} (Ctrl+C stops)", err=True)
    if not tls_cert and not is_loopback(host):
        click.echo(
            "sessiontree: warning: plain HTTP off loopback carries the password in the clear; "
            "serve with --tls-cert and --tls-key",
            err=True,
        )
    # The search index brought up to date meanwhile: the first search need not build it.
    threading.Thread(target=warm_index, args=(config,), daemon=True).start()
    if open_browser:
        # The socket listens already: the browser's request waits for the server.
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        close(app)


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
