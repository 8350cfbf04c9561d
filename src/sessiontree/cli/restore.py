"""``sessiontree restore SESSION --to PROMPT``: restore code to a checkpoint, undoably."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from sessiontree.catalog.resolve import resolve_session
from sessiontree.checkpoints.drift import Conflict, find_drift
from sessiontree.checkpoints.read import read_conversation_checkpoints
from sessiontree.checkpoints.restore import (
    RestorePlan,
    apply_restore,
    format_diff,
    latest_undo,
    plan_restore,
    plan_subagent_edits,
    read_subagent_edits,
    undo_restore,
)
from sessiontree.cli.guard import force_option, refuse_if_live
from sessiontree.cli.output import console, emit_json, get_env, json_option
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused


def _print_plan(plan: RestorePlan, conflicts: list[Conflict], *, to_stderr: bool) -> None:
    out = console(get_env())
    if to_stderr:
        out.file = sys.stderr
    out.print(
        f"restore code of {plan.session_id[:8]} to prompt {plan.prompt_uuid[:8]} "
        f"in {escape(str(plan.project))}"
    )
    for step in plan.steps:
        label = {
            "restore": "[green]restore[/]",
            "delete": "[red]delete[/]",
            "unchanged": "[dim]unchanged[/]",
            "skip": "[yellow]skip[/]",
        }[step.action]
        reason = f" — {escape(step.reason)}" if step.reason else ""
        out.print(f"  {label} {escape(str(step.path))}{reason}")
        if step.action in ("restore", "delete"):
            diff = format_diff(step)
            if diff:
                out.print(escape(diff.rstrip("\n")), style="dim")
    for conflict in conflicts:
        out.print(f"[bold red]conflict[/] {escape(str(conflict.path))}: {escape(conflict.reason)}")


@click.command()
@click.argument("session", metavar="SESSION")
@click.option("--to", "prompt", metavar="PROMPT", help="Prompt uuid, unique prefix, or -N.")
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
    env = get_env()
    transcript = Transcript.open(resolve_session(env.layout, session, os.environ))
    if not dry_run:
        refuse_if_live(env.layout, transcript.session_id, force=force)
    if undo:
        folder = latest_undo(env.layout, transcript.session_id)
        if not yes and not dry_run:
            _confirm(f"undo the restore saved in {folder}?")
        touched = [] if dry_run else undo_restore(folder)
        if as_json:
            emit_json({"sessionId": transcript.session_id, "undone": touched})
        else:
            click.echo(f"put back {len(touched)} file(s) from {folder}")
        return
    if prompt is None:
        raise click.UsageError("--to PROMPT is required (or --undo)")
    code, conflicts = restore_code(
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


def restore_code(
    transcript: Transcript,
    prompt_uuid: str,
    *,
    dry_run: bool,
    yes: bool,
    allow_outside: bool,
    as_json: bool,
    include_subagent_edits: bool = False,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Plan, show (with conflicts), confirm and apply a code restore; shared by
    ``restore`` and ``rewind --code``. Returns the ``code`` and ``conflicts`` JSON."""
    env = get_env()
    project = Path(transcript.cwd or env.cwd)
    plan = plan_restore(
        env.layout,
        transcript.session_id,
        project,
        read_conversation_checkpoints(transcript, prompt_uuid),
        prompt_uuid,
        allow_outside=allow_outside,
    )
    if include_subagent_edits:
        prompt = transcript.record(prompt_uuid)
        edits = read_subagent_edits([(a.agent_id, a.path) for a in transcript.subagents()])
        if prompt is not None and prompt.timestamp:
            plan_subagent_edits(plan, edits, prompt.timestamp, allow_outside=allow_outside)
    changes = plan.by_action("restore") + plan.by_action("delete")
    conflicts = find_drift(transcript, plan, layout=env.layout)
    if not (as_json and (yes or dry_run)):
        _print_plan(plan, conflicts, to_stderr=as_json)
    if not dry_run and changes:
        if not yes:
            lost = f" ({len(conflicts)} changed outside the session: their edits are lost)"
            _confirm(f"apply {len(changes)} change(s){lost if conflicts else ''}?")
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        record = apply_restore(env.layout, plan, stamp=stamp)
        if not as_json:
            click.echo(
                f"done; undo with: sessiontree restore {transcript.session_id[:8]} --undo"
                f" (saved in {record.folder})"
            )
    return plan.as_json(), [c.as_json() for c in conflicts]


def _confirm(question: str) -> None:
    if not sys.stdin.isatty():
        raise Refused("not a terminal: pass --yes to apply, or --dry-run to only look")
    if not click.confirm(question, default=False):
        raise click.exceptions.Abort
