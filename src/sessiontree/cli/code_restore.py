"""Showing and confirming a code restore: what ``restore`` and ``rewind --code`` print and
ask. The restore itself is the library's (:mod:`sessiontree.checkpoints.code`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from sessiontree.checkpoints.code import CodeRestorePlan, plan_restore_code, restore_code
from sessiontree.checkpoints.restore import format_diff
from sessiontree.checkpoints.undo import UndoPlan
from sessiontree.cli.output import command_hint, console, get_env
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused


def print_plan(plan: CodeRestorePlan, *, to_stderr: bool) -> None:
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
        beyond = _BEYOND.get(step.source, "")
        out.print(f"  {label} {escape(str(step.path))}{reason}{beyond}")
        if step.action in ("restore", "delete"):
            diff = format_diff(step)
            if diff:
                out.print(escape(diff.rstrip("\n")), style="dim")
    for conflict in plan.conflicts:
        out.print(f"[bold red]conflict[/] {escape(str(conflict.path))}: {escape(conflict.reason)}")


#: How a step the client would not take is marked.
_BEYOND = {
    "bash": " [dim](changed by Bash: the client would not restore it)[/]",
    "subagent": " [dim](written by a subagent: the client would not restore it)[/]",
}


def print_undo(plan: UndoPlan, *, to_stderr: bool) -> None:
    """Which restore an undo undoes, what it puts back (each file with its diff), and the
    files changed since that restore (conflicts)."""
    out = console(get_env())
    if to_stderr:
        out.file = sys.stderr
    out.print(f"undo {escape(plan.restore.describe())}")
    if plan.later_undone:
        n = plan.later_undone
        out.print(
            f"  ({n} later restore{'' if n == 1 else 's'} of this session "
            f"{'is' if n == 1 else 'are'} undone already)"
        )
    out.print(f"  (saved in {escape(str(plan.restore.folder))}):")
    for step in plan.steps:
        label = "[green]put back[/]" if step.saved is not None else "[red]remove[/]"
        marked = " [bold red](conflict: see below)[/]" if step.conflict else ""
        out.print(f"  {label} {escape(str(step.path))}{marked}")
        diff = step.diff()
        if diff:
            out.print(escape(diff.rstrip("\n")), style="dim")
    for step in plan.conflicts:
        out.print(
            f"[bold red]conflict[/] {escape(str(step.path))}: {escape(step.conflict or '')}"
            " (undoing keeps a copy of it)"
        )


def confirm(question: str) -> None:
    if not sys.stdin.isatty():
        raise Refused("not a terminal: pass --yes to apply, or --dry-run to only look")
    if not click.confirm(question, default=False):
        raise click.exceptions.Abort


def run_code_restore(
    transcript: Transcript,
    prompt_uuid: str,
    *,
    dry_run: bool,
    yes: bool,
    allow_outside: bool,
    as_json: bool,
    include_subagent_edits: bool = False,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Plan, show (with conflicts), ask and apply a code restore; the ``code`` and
    ``conflicts`` JSON."""
    env = get_env()
    plan = plan_restore_code(
        env.layout,
        transcript,
        prompt_uuid,
        project=Path(transcript.cwd or env.cwd),
        allow_outside=allow_outside,
        include_subagent_edits=include_subagent_edits,
    )
    if not (as_json and (yes or dry_run)):
        print_plan(plan, to_stderr=as_json)
    if not dry_run and plan.changes:
        if not yes:
            lost = f" ({len(plan.conflicts)} changed outside the session: their edits are lost)"
            confirm(f"apply {len(plan.changes)} change(s){lost if plan.conflicts else ''}?")
        record = restore_code(plan)
        if record is not None and not as_json:
            undo = command_hint(env, "restore", transcript.session_id, "--undo")
            click.echo(f"done; undo with: {undo} (saved in {record.folder})")
    return plan.as_json(), plan.conflicts_as_json()
