"""``sessions`` and ``search``: every session of a project, or of the root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sessiontree.catalog.index import info_as_json, list_sessions
from sessiontree.catalog.resolve import session_matches
from sessiontree.catalog.search import search_transcript
from sessiontree.cli.output import console, emit_json, format_size, get_env, json_option, progress
from sessiontree.cli.read import project_scope
from sessiontree.errors import Refused


@click.command()
@click.option("--all", "all_projects", is_flag=True, help="Every project, not just this one.")
@click.option("--project", type=click.Path(path_type=Path), help="The project at PATH.")
@click.option(
    "--search",
    metavar="TEXT",
    help="Only sessions whose title, first prompt or cwd contains TEXT (what -r finds).",
)
@click.option(
    "--include-empty",
    is_flag=True,
    help="Also files that hold no conversation (empty, only summaries, snapshots, metadata "
    "or sidechain records), which the client will not resume; each marked with why.",
)
@json_option
def sessions(
    all_projects: bool,
    project: Path | None,
    search: str | None,
    include_empty: bool,
    as_json: bool,
) -> None:
    """List sessions, newest first (default: the current directory's project).

    A file that holds no conversation is not a session (the client answers "No
    conversation found" to it): listed only with --include-empty; `doctor` reports it.
    """
    env = get_env()
    if all_projects and project:
        raise click.UsageError("--all and --project exclude each other")
    rows = list_sessions(
        env.layout,
        project_dirs=project_scope(all_projects, project),
        cache_file=env.cache_file,
        include_empty=True,
    )
    if search is not None:
        rows = [r for r in rows if session_matches(r, search)]
    hidden = 0 if include_empty else sum(1 for r in rows if r.noConversation is not None)
    if hidden:
        rows = [r for r in rows if r.noConversation is None]
    if as_json:
        emit_json([info_as_json(r, with_reason=include_empty) for r in rows])
        return
    out = console(env)
    if not rows:
        where = "any project" if all_projects else (str(project) if project else env.cwd)
        out.print(f"no sessions for {escape(where)} under {escape(str(env.layout.root))}")
        if hidden:
            _print_hidden(out, hidden)
        if not all_projects:
            out.print("try: sessiontree sessions --all")
        return
    table = Table(box=None, pad_edge=False)
    table.add_column("session", no_wrap=True, min_width=8)
    table.add_column("updated", no_wrap=True, min_width=16)
    table.add_column("msgs", no_wrap=True, justify="right", min_width=4)
    table.add_column("size", no_wrap=True, justify="right", min_width=6)
    table.add_column("title", no_wrap=True, overflow="ellipsis", ratio=3)
    table.add_column("cwd", no_wrap=True, overflow="ellipsis", ratio=2)
    for row in rows:
        title = escape((row.title or "")[:80])
        if row.noConversation is not None:
            title = f"[dim](not a session: {row.noConversation})[/] {title}".rstrip()
        table.add_row(
            row.sessionId[:8],
            (row.updatedAt or "")[:16].replace("T", " "),
            str(row.messageCount),
            format_size(row.sizeBytes),
            title,
            escape(row.cwd or ""),
        )
    out.print(table)
    if hidden:
        _print_hidden(out, hidden)


def _print_hidden(out: Console, hidden: int) -> None:
    out.print(
        f"[dim]{hidden} file(s) holding no conversation not shown "
        "(sessiontree sessions --include-empty; doctor)[/]"
    )


@click.command()
@click.argument("query")
@click.option("--all", "all_projects", is_flag=True, help="Every project, not just this one.")
@click.option("--project", type=click.Path(path_type=Path), help="The project at PATH.")
@json_option
def search(query: str, all_projects: bool, project: Path | None, as_json: bool) -> None:
    """Search every branch of every session (rewound ones included)."""
    env = get_env()
    if not query.strip():
        raise Refused("an empty query matches everything; give some text")
    rows = list_sessions(
        env.layout,
        project_dirs=project_scope(all_projects, project),
        cache_file=env.cache_file,
    )
    hits: list[dict[str, Any]] = []
    with progress(env, "searching", len(rows)) as advance:
        for row in rows:
            hits.extend(search_transcript(Path(row.path), query))
            advance()
    if as_json:
        emit_json(hits)
        return
    out = console(env)
    for hit in hits:
        mark = "●" if hit["onActivePath"] else "○"
        out.print(
            f"{mark} {hit['sessionId'][:8]} {str(hit['uuid'])[:8]} {hit['type']}: "
            f"{escape(hit['snippet'])}"
        )
    out.print(f"{len(hits)} hit(s)")
