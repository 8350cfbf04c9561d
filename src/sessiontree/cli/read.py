"""Read-only commands: sessions, show, tree, context, prompts, checkpoints, history,
search, doctor. Each takes ``--json`` and prints exactly the shapes in CLI.md."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sessiontree.catalog.index import info_as_json, list_sessions, transcript_no_conversation
from sessiontree.catalog.resolve import session_matches
from sessiontree.catalog.search import search_transcript
from sessiontree.checkpoints.read import checkpoint_as_json, outside_project, read_checkpoints
from sessiontree.cli.output import (
    console,
    emit_json,
    format_size,
    get_env,
    json_option,
    open_transcript,
    progress,
    progress_callback,
    resolve,
)
from sessiontree.conversation.transcript import Transcript
from sessiontree.doctor import StoreCheck, check_store, check_transcript
from sessiontree.errors import NotASession, Refused
from sessiontree.history.log import iter_history
from sessiontree.model.conversation import format_no_conversation
from sessiontree.views.shapes import iter_context_json, prompts_json, show_json, tree_json
from sessiontree.views.terminal import render_show, render_tree

session_argument = click.argument("session", metavar="SESSION")

#: Blocks printed per call by ``context`` (see there).
_PRINT_BATCH = 512


def _open(ref: str) -> Transcript:
    env = get_env()
    return open_transcript(env, resolve(env, ref))


def _open_conversation(ref: str) -> Transcript:
    """:func:`_open`, refusing a file that holds no conversation (nothing to resume)."""
    transcript = _open(ref)
    reason = transcript_no_conversation(transcript)
    if reason is not None:
        raise NotASession(str(transcript.path), reason, format_no_conversation(reason))
    return transcript


def _scope(all_projects: bool, project: Path | None) -> list[Path] | None:
    env = get_env()
    if all_projects:
        return None
    cwd = str(project.resolve()) if project else env.cwd
    return env.layout.find_project_dirs(cwd)


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
        project_dirs=_scope(all_projects, project),
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
@session_argument
@click.option("--all-branches", is_flag=True, help="Every branch, rewound ones included.")
@json_option
def show(session: str, all_branches: bool, as_json: bool) -> None:
    """Show the conversation along the active path (or every branch)."""
    transcript = _open_conversation(session)
    if as_json:
        emit_json(show_json(transcript, all_branches=all_branches))
        return
    render_show(console(get_env()), transcript, all_branches=all_branches)


@click.command()
@session_argument
@json_option
def tree(session: str, as_json: bool) -> None:
    """Show the session's tree: branches, fork points, the active path."""
    transcript = _open(session)
    if as_json:
        emit_json(tree_json(transcript))
        return
    render_tree(console(get_env()), transcript)


@click.command()
@session_argument
@json_option
def context(session: str, as_json: bool) -> None:
    """The Messages API `messages` that resuming this session sends."""
    transcript = _open_conversation(session)
    # Streamed: a long path is never held whole, nor its messages, nor their JSON.
    messages = transcript.iter_context()
    if as_json:
        out_bytes = sys.stdout.buffer
        for piece in iter_context_json(transcript.session_id, messages):
            out_bytes.write(piece)
        sys.stdout.flush()
        return
    out = console(get_env())
    for message in messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out.rule(f"[bold]{message['role']}[/]", align="left")
        # A print per few hundred blocks: rich takes ~40 us a call, and a damaged line can
        # hold a million small blocks (a 37 MB line printed block by block took a minute;
        # in one print, 1.5 GB).
        shown: list[str] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                shown.append(escape(str(block.get("text", ""))))
            elif kind == "tool_use":
                name, call = escape(str(block.get("name"))), escape(str(block.get("id")))
                shown.append(f"[cyan]tool_use[/] {name} {call}")
            elif kind == "tool_result":
                shown.append(f"[cyan]tool_result[/] {escape(str(block.get('tool_use_id')))}")
            else:
                shown.append(f"[{escape(str(kind))}]")
            if len(shown) >= _PRINT_BATCH:
                out.print("\n".join(shown))
                shown.clear()
        if shown:
            out.print("\n".join(shown))


@click.command()
@session_argument
@json_option
def prompts(session: str, as_json: bool) -> None:
    """The rewind list: every prompt typed in the session, oldest first."""
    transcript = _open(session)
    checkpoint_ids = {c.message_id for c in read_checkpoints(transcript)}
    rows = prompts_json(transcript, checkpoint_ids)
    if as_json:
        emit_json(rows)
        return
    out = console(get_env())
    table = Table(box=None, pad_edge=False)
    for name in ("", "prompt", "time", "code"):
        table.add_column(name, no_wrap=True)
    table.add_column("text", no_wrap=True, overflow="ellipsis", max_width=max(20, out.width - 34))
    for row in rows:
        table.add_row(
            "●" if row["onActivePath"] else ("·" if row["compacted"] else "○"),
            str(row["uuid"])[:8],
            (row["timestamp"] or "")[11:19],
            "yes" if row["checkpoint"] else "",
            escape(" ".join(str(row["text"]).split())[:100]),
        )
    out.print(table)
    out.print("● on the active path   ○ on a rewound branch   · summarized by a compaction")


@click.command()
@session_argument
@json_option
def checkpoints(session: str, as_json: bool) -> None:
    """File checkpoints per prompt (snapshots with deltas folded in), oldest first."""
    transcript = _open(session)
    rows = [checkpoint_as_json(c) for c in read_checkpoints(transcript)]
    if as_json:
        emit_json(rows)
        return
    out = console(get_env())
    if not rows:
        out.print("no file checkpoints in this session")
    for row in rows:
        out.print(f"[bold]{escape(row['messageId'][:8])}[/] {escape(str(row['timestamp'] or ''))}")
        for path, backup in row["files"].items():
            if "damage" in backup:  # shown quoted: a newline in it must not fake a row
                out.print(f"  [red]! damaged, never restored:[/] {escape(backup['damage'])}")
                continue
            name = backup["backupFileName"] or "(did not exist)"
            note = ""
            if outside_project(path, [transcript.cwd] if transcript.cwd else []):
                note = "  [yellow](outside the project: restore skips it unless --allow-outside)[/]"
            out.print(f"  {escape(path)}  v{backup['version']}  {escape(name)}{note}")


@click.command()
@click.option("--project", type=click.Path(path_type=Path), help="Only prompts typed in PATH.")
@click.option("--search", "text", help="Only prompts containing TEXT (case-insensitive).")
@json_option
def history(project: Path | None, text: str | None, as_json: bool) -> None:
    """What you typed, across projects, with pasted texts expanded."""
    env = get_env()
    where = str(project.resolve()) if project else None
    entries = list(iter_history(env.layout, project=where, search=text))
    if as_json:
        emit_json([e.as_json() for e in entries])
        return
    out = console(env)
    for entry in entries:
        when = (
            datetime.fromtimestamp(entry.timestamp / 1000, UTC).strftime("%Y-%m-%d %H:%M")
            if entry.timestamp
            else ""
        )
        out.print(f"[dim]{when}[/] {escape(entry.project or '')}")
        out.print(f"  {escape(entry.text)}")


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
        project_dirs=_scope(all_projects, project),
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


@click.command()
@click.argument("session", required=False, metavar="[SESSION]")
@json_option
def doctor(session: str | None, as_json: bool) -> None:
    """Check transcripts for torn lines, bad JSON, broken links, missing backups and
    files that hold no conversation (without SESSION, also stale sessions/<pid>.json
    entries and missing pastes)."""
    env = get_env()
    if session is None:
        with progress_callback(env, "checking") as report:
            found = check_store(env.layout, cache_file=env.cache_file, on_progress=report)
    else:
        path = resolve(env, session)
        found = StoreCheck((path,), tuple(check_transcript(path, layout=env.layout)))
    if as_json:
        emit_json(found.as_json())
    else:
        out = console(env)
        for p in found.problems:
            where = f"{p.path}:{p.line}" if p.line else p.path
            out.print(f"[yellow]{p.kind}[/] {escape(where)}: {escape(p.detail)}")
        out.print(
            f"{len(found.transcripts)} transcript(s) checked, {len(found.problems)} problem(s)"
        )
    if not found.ok:
        raise SystemExit(1)
