"""``sessiontree restore SESSION --to PROMPT``: restore code to a checkpoint, undoably."""

from __future__ import annotations

import click

from sessiontree.checkpoints.restore import latest_undo, plan_undo, undo_restore
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
@click.option("--undo", is_flag=True, help="Undo the latest restore of this session.")
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
    saves the files it changes, so `--undo` can put them back.
    """
    exclusive({"--to": prompt, "--undo": undo})
    exclusive({"--dry-run": dry_run, "--yes": yes})
    env = get_env()
    transcript = Transcript.open(resolve(env, session))
    if not dry_run:
        refuse_if_live(env.layout, transcript.session_id, force=force)
    if undo:
        folder = latest_undo(env.layout, transcript.session_id)
        steps = plan_undo(folder)
        if not (as_json and (yes or dry_run)):
            print_undo(folder, steps, to_stderr=as_json)
        if dry_run:
            touched = [str(step.path) for step in steps]
        else:
            if not yes:
                confirm(f"put back {len(steps)} file(s)?")
            touched = undo_restore(folder)
        if as_json:
            emit_json({"sessionId": transcript.session_id, "undone": touched, "dryRun": dry_run})
        else:
            done = "would put back" if dry_run else "put back"
            click.echo(f"{done} {len(touched)} file(s) from {folder}")
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
