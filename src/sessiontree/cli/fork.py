"""``sessiontree fork SESSION [--at UUID] [--title TEXT]``."""

from __future__ import annotations

import uuid

import click

from sessiontree.catalog.index import read_session_info
from sessiontree.cli.output import emit_json, get_env, json_option, resolve, resume_hint
from sessiontree.conversation.fork import apply_fork, plan_fork
from sessiontree.conversation.transcript import Transcript
from sessiontree.views.text import printable


@click.command()
@click.argument("session", metavar="SESSION")
@click.option(
    "--at",
    "at",
    metavar="UUID",
    help="Fork from this record, not the leaf: a uuid or unique prefix (4+ characters), "
    "or a prompt number on the active path (1 = the first, -1 = the last).",
)
@click.option("--title", help='Title of the fork (default: "<title> (Branch)").')
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@json_option
def fork(session: str, at: str | None, title: str | None, dry_run: bool, as_json: bool) -> None:
    """Copy the conversation into a new session (same uuids), leaving this one as it is."""
    env = get_env()
    path = resolve(env, session)
    transcript = Transcript.open(path)
    info = read_session_info(path)
    at_uuid = transcript.resolve_prompt(at, any_record=True) if at else None
    plan = plan_fork(
        transcript,
        new_session_id=str(uuid.uuid4()),
        at=at_uuid,
        title=title,
        original_title=info.title,
    )
    if not dry_run:
        apply_fork(plan)
    if as_json:
        emit_json(
            {
                "sessionId": plan.session_id,
                "path": str(plan.path),
                "forkedFrom": plan.forked_from,
                "title": plan.title,
                "dryRun": dry_run,
            }
        )
    else:
        verb = "would write" if dry_run else "wrote"
        click.echo(printable(f"{verb} {plan.path} ({len(plan.records)} records): {plan.title}"))
        if at_uuid is not None:
            ends = transcript.record(at_uuid)
            text = " ".join(printable(ends.text() if ends else "").split())
            shown = text if len(text) <= 60 else text[:59] + "…"
            click.echo(
                f"the fork holds the conversation up to and including {at_uuid[:8]}"
                f" ({shown}); resumed, the client goes on from there. This session is unchanged."
            )
        if dry_run:
            click.echo("its id is drawn when it is written: the fork gets another one")
        else:
            hint = resume_hint(env, plan.session_id, transcript.cwd)
            click.echo(f"continue in the client: {printable(hint)}")
