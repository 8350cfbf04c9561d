"""``sessiontree summarize SESSION --at PROMPT --from|--up-to --summary TEXT|-`` (or
``--summary-file PATH``)."""

from __future__ import annotations

import click

from sessiontree.cli.compact import read_summary, summary_options
from sessiontree.cli.guard import force_option, refuse_if_live
from sessiontree.cli.output import (
    emit_json,
    exclusive,
    get_env,
    json_option,
    resolve,
    resume_hint,
)
from sessiontree.cli.read import PROMPT_HELP
from sessiontree.conversation.summarize import Direction
from sessiontree.conversation.transcript import Transcript
from sessiontree.session.session import Session


@click.command()
@click.argument("session", metavar="SESSION")
@click.option(
    "--at",
    "prompt",
    required=True,
    metavar="PROMPT",
    help=PROMPT_HELP,
)
@click.option(
    "--from",
    "from_prompt",
    is_flag=True,
    help="Summarize PROMPT and everything after it; keep what came before.",
)
@click.option(
    "--up-to",
    is_flag=True,
    help="Summarize everything before PROMPT; keep PROMPT and what follows.",
)
@summary_options
@click.option("--dry-run", is_flag=True, help="Say what would be appended; write nothing.")
@force_option
@json_option
def summarize(
    session: str,
    prompt: str,
    from_prompt: bool,
    up_to: bool,
    summary: str | None,
    summary_file: str | None,
    dry_run: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Partial compaction around PROMPT, as /rewind's "Summarize from here" / "Summarize
    up to here" write it: a boundary and the summary; the kept messages are re-linked,
    not re-written, and nothing is removed from the file."""
    exclusive({"--from": from_prompt, "--up-to": up_to})
    if not (from_prompt or up_to):
        raise click.UsageError("say which part to summarize: --from or --up-to")
    side: Direction = "from" if from_prompt else "up_to"
    text = read_summary(summary, summary_file)
    env = get_env()
    path = resolve(env, session)
    transcript = Transcript.open(path)  # read once: prompt, writer and plan share it
    writer = Session.from_transcript(transcript)
    prompt_uuid = transcript.resolve_prompt(prompt)
    refuse_if_live(env.layout, writer.session_id, force=force, dry_run=dry_run)
    if dry_run:
        plan = writer.plan_summarize(prompt_uuid, text, direction=side, transcript=transcript)
    else:
        plan = writer.summarize(prompt_uuid, text, direction=side, transcript=transcript)
    if as_json:
        emit_json(
            {
                "sessionId": plan.session_id,
                "promptUuid": plan.prompt_uuid,
                "direction": plan.direction,
                "boundaryUuid": plan.boundary_uuid,
                "summaryUuid": plan.summary_uuid,
                "leafUuid": plan.leaf_uuid,
                "messagesSummarized": len(plan.summarized),
                "messagesKept": len(plan.preserved),
                "dryRun": dry_run,
            }
        )
    else:
        verb = "would summarize" if dry_run else "summarized"
        click.echo(
            f"{verb} {len(plan.summarized)} records "
            f"{'from' if from_prompt else 'up to'} {prompt_uuid[:8]}; "
            f"{len(plan.preserved)} kept verbatim. Nothing was removed from {path.name}."
        )
        if not dry_run:
            hint = resume_hint(env, plan.session_id, transcript.cwd)
            click.echo(f"continue in the client: {hint}")
