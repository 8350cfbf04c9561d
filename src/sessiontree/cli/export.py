"""``sessiontree export SESSION --format md|html|json [-o FILE]``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sessiontree.cli.output import get_env, open_transcript, resolve
from sessiontree.errors import Refused
from sessiontree.storage.atomic import write_atomically
from sessiontree.views.export import iter_html, iter_json, iter_markdown


@click.command()
@click.argument("session", metavar="SESSION")
@click.option(
    "--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md", show_default=True
)
@click.option("-o", "--output", help="File to write, or - for stdout (default: <id>.<format>).")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
def export(session: str, fmt: str, output: str | None, force: bool) -> None:
    """Export a session: md/html of the active path, json of every record as stored."""
    env = get_env()
    transcript = open_transcript(env, resolve(env, session))
    chunks = (
        iter_json(transcript)
        if fmt == "json"
        else (
            s.encode()
            for s in (iter_markdown(transcript) if fmt == "md" else iter_html(transcript))
        )
    )
    if output == "-":
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        return
    target = Path(output) if output else Path(f"{transcript.session_id}.{fmt}")
    if target.exists() and not force:
        raise Refused(f"{target} exists; pass --force to overwrite it")
    write_atomically(target, chunks)
    click.echo(f"wrote {target}", err=True)
