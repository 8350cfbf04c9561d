"""``sessiontree compact SESSION --summary TEXT``: full compaction, originals kept."""

from __future__ import annotations

import click

from sessiontree.cli.guard import force_option, refuse_if_live
from sessiontree.cli.output import emit_json, get_env, json_option, resolve
from sessiontree.errors import Refused
from sessiontree.session.session import Session


@click.command()
@click.argument("session", metavar="SESSION")
@click.option("--summary", required=True, help="The summary that replaces the history.")
@click.option("--dry-run", is_flag=True, help="Say what would be appended; write nothing.")
@force_option
@json_option
def compact(session: str, summary: str, dry_run: bool, force: bool, as_json: bool) -> None:
    """Compact: a boundary and the summary; the next resume sends the summary and what
    follows it. Nothing is deleted: the history stays in the file."""
    env = get_env()
    path = resolve(env, session)
    writer = Session.open(path)
    if writer.tip is None:
        raise Refused(f"{path.name} holds no conversation to compact")
    if dry_run:
        writer.plan_compact(summary)  # what would be written; refuses what compact refuses
        summary_uuid = None
    else:
        refuse_if_live(env.layout, writer.session_id, force=force)
        summary_uuid = writer.compact(summary)
    if as_json:
        emit_json({"sessionId": writer.session_id, "summaryUuid": summary_uuid, "dryRun": dry_run})
    else:
        verb = "would append" if dry_run else "appended"
        click.echo(f"{verb} a compact boundary and the summary to {path.name}")
