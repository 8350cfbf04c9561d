"""``sessiontree demo``: build a realistic sample config root and say what to try next."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from pathlib import Path

import click

from sessiontree.cli.output import emit_json, get_env, json_option
from sessiontree.errors import Refused
from sessiontree.storage.layout import Layout

_WHAT = {
    "rewinds": "rewinds: 2 fork points, a prompt re-sent 3 times, file checkpoints",
    "compacted": "/compact: boundary + summary + preserved segment",
    "subagent-and-fork": "background subagent (sidechain file), then /branch",
    "fork": "the /branch copy: same uuids, forkedFrom, continues on its own",
    "paste": "a large paste (paste-cache/), then /rewind → Summarize up to here",
    "old": "45 days old: what `cleanup --dry-run` lists",
}


def foreign_transcripts(layout: Layout, demo_ids: tuple[str, ...]) -> list[Path]:
    """Transcripts under ``projects/`` that the demo did not write."""
    return [
        transcript
        for project_dir in layout.iter_project_dirs()
        for transcript in layout.iter_transcripts(project_dir)
        if transcript.stem not in demo_ids
    ]


@click.command()
@click.option(
    "--root",
    "demo_root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to build it (default: the global --root, else the default config root).",
)
@click.option("--force", is_flag=True, help="Write even into a root that holds real sessions.")
@json_option
def demo(demo_root: Path | None, force: bool, as_json: bool) -> None:
    """Build a realistic sample store and print what to run next.

    Sessions with rewinds and re-sent prompts, file checkpoints with real backups, a
    compacted session, a background subagent, a /branch fork and a large paste, in
    several projects whose working folders are created beside the root
    (ROOT/../demo-projects). Re-running rebuilds the demo's own files only.

    The demo refuses to write into a root whose projects/ already holds sessions (your
    real ~/.claude, say) unless --force is given.
    """
    from sessiontree.demo import demo_session_ids, write_demo

    layout = (
        Layout(demo_root.expanduser()) if demo_root is not None else get_env(new_root=True).layout
    )
    existing = foreign_transcripts(layout, demo_session_ids())
    if existing and not force:
        raise Refused(
            f"{layout.root} already holds {len(existing)} Claude Code session(s) in projects/; "
            "the demo will not write into a real config root. Use --root DIR for a new "
            "folder, or --force to add the demo anyway"
        )
    summary = write_demo(layout, now=datetime.now(UTC))
    if as_json:
        emit_json(
            {
                "root": str(summary.root),
                "sessions": [
                    {"sessionId": s.session_id, "title": s.title, "path": str(s.path)}
                    for s in summary.sessions
                ],
            }
        )
        return
    root = shlex.quote(str(summary.root))
    projects = len({s.cwd for s in summary.sessions})
    echo = click.echo
    echo(f"Built a demo config root in {summary.root}")
    echo(
        f"  {projects} projects, {len(summary.sessions)} sessions, {summary.backups} "
        f"checkpoint backups; working folders in {summary.projects_dir}"
    )
    echo("")
    for s in summary.sessions:
        echo(f"  {s.session_id}  {Path(s.cwd).name:<12} {s.title}")
        echo(f"  {'':36}  {'':<12} {_WHAT.get(s.role, s.role)}")
    rewinds = summary.session("rewinds").session_id
    compacted = summary.session("compacted").session_id
    fork = summary.session("fork").session_id
    paste = summary.session("paste").session_id
    echo("")
    echo("Try:")
    for command in (
        "sessions --all",
        f"tree {rewinds}",
        f"show {rewinds} --all-branches",
        f"prompts {rewinds}",
        f"checkpoints {rewinds}",
        f"context {compacted}",
        f"tree {fork}",
        f"context {paste}",
        "history",
        "cleanup --dry-run",
    ):
        echo(f"  sessiontree --root {root} {command}")
