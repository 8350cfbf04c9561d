"""``sessiontree restore SESSION --to PROMPT``: restore code to a checkpoint, undoably."""

from __future__ import annotations

from pathlib import Path

import click

from sessiontree.checkpoints.code import plan_undo_code_restore
from sessiontree.checkpoints.undo import apply_undo
from sessiontree.cli.code_restore import confirm, print_undo, run_code_restore
from sessiontree.cli.guard import force_option, refuse_if_live
from sessiontree.cli.output import emit_json, exclusive, get_env, json_option, resolve
from sessiontree.cli.read import PROMPT_HELP
from sessiontree.conversation.transcript import Transcript


@click.command()
@click.argument("session", metavar="SESSION")
@click.option("--to", "prompt", metavar="PROMPT", help=PROMPT_HELP)
@click.option("--dry-run", is_flag=True, help="Show the plan; change nothing.")
@click.option("--yes", is_flag=True, help="Apply without asking.")
@click.option(
    "--allow-outside",
    is_flag=True,
    help="Also write files outside the project or behind symlinked folders.",
)
@click.option(
    "--include-subagent-edits",
    is_flag=True,
    help="Also put back files subagents wrote after PROMPT (the client leaves them).",
)
@click.option(
    "--undo",
    is_flag=True,
    help="Undo the latest restore of this session not undone yet (each undo walks back one).",
)
@force_option
@json_option
def restore(
    session: str,
    prompt: str | None,
    dry_run: bool,
    yes: bool,
    allow_outside: bool,
    include_subagent_edits: bool,
    undo: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Put tracked files back as they were before PROMPT ran (like "Restore code").

    Files the client does not track (made by Bash, subagents or you) are left alone.
    Beyond the client: files changed outside the session since its last edit are shown
    as conflicts first (with --yes they are reported, not blocking), and every restore
    saves the files it changes, so `--undo` can put them back (it says which restore it
    undoes; files changed since that restore are conflicts, and kept aside).
    """
    exclusive({"--to": prompt, "--undo": undo})
    exclusive({"--dry-run": dry_run, "--yes": yes})
    env = get_env()
    transcript = Transcript.open(resolve(env, session))
    refuse_if_live(env.layout, transcript.session_id, force=force, dry_run=dry_run)
    if undo:
        plan = plan_undo_code_restore(
            env.layout,
            transcript,
            project=Path(transcript.cwd or env.cwd),
            allow_outside=allow_outside,
        )
        if not (as_json and (yes or dry_run)):
            print_undo(plan, to_stderr=as_json)
        touched = [str(step.path) for step in plan.steps]
        conflicts = plan.conflicts_as_json()
        if not dry_run:
            if not yes:
                lost = f" ({len(plan.conflicts)} changed since the restore: kept aside)"
                confirm(f"put back {len(plan.steps)} file(s){lost if plan.conflicts else ''}?")
            done = apply_undo(plan)
            touched, conflicts = done.undone, done.conflicts_as_json()
            if not as_json:
                for kept in done.kept:
                    click.echo(f"kept {kept.path} as it was ({kept.reason}) in {kept.kept_as}")
        if as_json:
            emit_json(
                {
                    "sessionId": transcript.session_id,
                    "undone": touched,
                    "dryRun": dry_run,
                    "restore": plan.restore.as_json(),
                    "conflicts": conflicts,
                }
            )
        else:
            done_word = "would put back" if dry_run else "put back"
            click.echo(f"{done_word} {len(touched)} file(s) from {plan.restore.folder}")
        return
    if prompt is None:
        raise click.UsageError("--to PROMPT is required (or --undo)")
    code, conflicts = run_code_restore(
        transcript,
        transcript.resolve_prompt(prompt),
        dry_run=dry_run,
        yes=yes,
        allow_outside=allow_outside,
        as_json=as_json,
        include_subagent_edits=include_subagent_edits,
    )
    if as_json:
        emit_json(
            {
                "sessionId": transcript.session_id,
                "dryRun": dry_run,
                "code": code,
                "conflicts": conflicts,
            }
        )
