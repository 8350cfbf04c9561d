"""``sessiontree cleanup``: age-based retention, shown first, applied only when agreed."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from sessiontree.cleanup import CleanupPlan, CleanupResult, apply_cleanup, plan_cleanup
from sessiontree.cli.output import (
    console,
    emit_json,
    exclusive,
    format_size,
    get_env,
    json_option,
)
from sessiontree.errors import Refused

#: Kept items shown one by one before the rest are only counted.
_KEPT_SHOWN = 15


def _where(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _print_plan(plan: CleanupPlan, *, to_stderr: bool) -> None:
    out = console(get_env())
    if to_stderr:
        out.file = sys.stderr
    root = plan.layout.root
    out.print(
        f"cleanup of {escape(str(root))}: older than {plan.days} days (from {plan.days_source})"
    )
    if plan.delete:
        table = Table(box=None, pad_edge=False)
        table.add_column("what")
        table.add_column("path", overflow="fold")
        table.add_column("age", justify="right")
        table.add_column("size", justify="right")
        for item in plan.delete:
            age = (plan.now - item.mtime) / 86_400
            table.add_row(
                item.kind, escape(_where(item.path, root)), f"{age:.0f} d", format_size(item.bytes)
            )
        out.print(table)
        sessions = len(plan.sessions())
        out.print(
            f"to delete: {len(plan.delete)} item(s), {sessions} session(s), "
            f"{format_size(plan.bytes_planned)}"
        )
    else:
        out.print("nothing to delete")
    if plan.kept:
        out.print(f"kept although old: {len(plan.kept)}")
        for kept in plan.kept[:_KEPT_SHOWN]:
            out.print(f"  [dim]{escape(_where(kept.path, root))}[/] — {escape(kept.reason)}")
        rest = Counter(k.reason.split(":")[0] for k in plan.kept[_KEPT_SHOWN:])
        for reason, count in rest.most_common():
            out.print(f"  … and {count} more: {escape(reason)}")


def _print_result(result: CleanupResult, *, to_stderr: bool) -> None:
    out = console(get_env())
    if to_stderr:
        out.file = sys.stderr
    root = result.plan.layout.root
    planned = {i.path for i in result.plan.delete}
    for kept in result.kept:
        if kept.path in planned:
            out.print(f"[yellow]left[/] {escape(_where(kept.path, root))} — {escape(kept.reason)}")
    for path, reason in result.failed:
        out.print(f"[red]failed[/] {escape(_where(path, root))} — {escape(reason)}")
    out.print(f"deleted {len(result.deleted)} item(s), freed {format_size(result.bytes_freed)}")


def _interactive() -> bool:
    return sys.stdin.isatty()


@click.command()
@click.option(
    "--days",
    type=click.IntRange(min=1),
    metavar="N",
    help="Delete what is older than N days (default: cleanupPeriodDays, else 30).",
)
@click.option("--dry-run", is_flag=True, help="Show the plan; change nothing.")
@click.option("--yes", is_flag=True, help="Apply without asking.")
@json_option
def cleanup(days: int | None, dry_run: bool, yes: bool, as_json: bool) -> None:
    """Delete old sessions per cleanupPeriodDays (plans first).

    What Claude Code's retention deletes silently, shown first: sessions (transcript,
    tool results, subagents, file-history, session-env) whose newest file is older
    than N days, old pastes no recent prompt uses, and registry files of processes
    that are gone. A session goes as a whole or not at all.

    Never touched: a live session, a session a kept fork was made from, anything of a
    session with a recent file, history.jsonl, settings.json and every other file,
    names Claude Code does not write, and symlinks (never followed). Everything is
    checked again just before it is deleted.
    """
    exclusive({"--dry-run": dry_run, "--yes": yes})
    if not dry_run and not yes and not _interactive():
        raise Refused("not a terminal: pass --yes to delete, or --dry-run to only look")
    env = get_env()
    plan = plan_cleanup(env.layout, days=days)
    if not (as_json and (yes or dry_run)):
        _print_plan(plan, to_stderr=as_json)
    if dry_run or not plan.delete:
        if as_json:
            emit_json(plan.as_json() | {"dryRun": dry_run})
        return
    if not yes and not click.confirm(
        f"delete {len(plan.delete)} item(s) ({format_size(plan.bytes_planned)})?",
        default=False,
        err=as_json,
    ):
        raise click.exceptions.Abort
    result = apply_cleanup(plan)
    if as_json:
        emit_json(result.as_json())
    else:
        _print_result(result, to_stderr=False)
    if result.failed:
        raise click.exceptions.Exit(1)
