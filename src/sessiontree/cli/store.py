"""``store``: a local store to try things on (a private PostgreSQL in the state folder),
and the schema of any store brought up to date."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from sessiontree.storage.store.cluster import Cluster
from sessiontree.cli.output import current_env, emit_json, json_option


@click.group()
def store() -> None:
    """A local store to try: a private PostgreSQL under sessiontree's state folder.

    For a team's server, skip this: point --store (or $SESSIONTREE_STORE) at its DSN."""


@store.command()
@json_option
def init(as_json: bool) -> None:
    """Make and start the local store (once; again: start it), and print its DSN."""
    from sessiontree.storage.store.cluster import init_cluster
    from sessiontree.storage.store.connect import connect
    from sessiontree.storage.store.schema import migrate

    env = current_env()
    folder = env.state_dir / "store"
    cluster = init_cluster(folder)
    conn = connect(cluster.dsn)
    try:
        migrate(conn)
    finally:
        conn.close()
    if as_json:
        emit_json({"dsn": cluster.dsn, "folder": str(folder)})
        return
    click.echo(f"the local store runs in {folder}; use it with:")
    click.echo(f"  export SESSIONTREE_STORE='{cluster.dsn}'")


@store.command()
def start() -> None:
    """Start the local store made by `store init`."""
    cluster = _cluster()
    cluster.start()
    click.echo(f"started: {cluster.dsn}")


@store.command()
def stop() -> None:
    """Stop the local store."""
    cluster = _cluster()
    cluster.stop()
    click.echo("stopped")


@store.command()
@json_option
def status(as_json: bool) -> None:
    """Whether the local store runs, and its DSN."""
    from sessiontree.storage.store.cluster import open_cluster

    env = current_env()
    cluster = open_cluster(env.state_dir / "store")
    running = cluster is not None and cluster.running()
    if as_json:
        emit_json({"running": running, "dsn": cluster.dsn if cluster else None})
        return
    if cluster is None:
        click.echo("no local store: `sessiontree store init` makes one")
    else:
        click.echo(f"{'running' if running else 'stopped'}: {cluster.dsn}")


@store.command()
@json_option
def migrate(as_json: bool) -> None:
    """Bring the store's schema (--store) up to this program's."""
    from sessiontree.cli.stored import store_connection
    from sessiontree.storage.store.schema import known_version

    env = current_env()
    if env.store is None:
        raise click.UsageError("give the store: --store DSN or $SESSIONTREE_STORE")
    with store_connection(env, write=True):
        pass
    if as_json:
        emit_json({"version": known_version()})
    else:
        click.echo(f"the store's schema is version {known_version()}")


def _cluster() -> Cluster:
    from sessiontree.errors import Refused
    from sessiontree.storage.store.cluster import open_cluster

    cluster = open_cluster(current_env().state_dir / "store")
    if cluster is None:
        raise Refused("no local store: `sessiontree store init` makes one")
    return cluster
