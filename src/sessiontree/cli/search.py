"""``search``: every branch of every session, through the search index (or a scan)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from sessiontree.catalog.index import list_sessions
from sessiontree.catalog.search_index import (
    Filters,
    QuerySyntaxError,
    SearchHit,
    Source,
    date_bound,
    query,
    reset_index,
    update_index,
)
from sessiontree.cli.main import Env, describe_os_error, leave_quickly
from sessiontree.cli.output import (
    command_hint,
    console,
    emit_json,
    exclusive,
    format_size,
    get_env,
    json_option,
    progress,
    progress_bytes,
    resolve,
    skeleton_cache,
    skipped_files,
)
from sessiontree.cli.read import project_scope
from sessiontree.cli.stored import refuse_filters_without_store, store_filters
from sessiontree.errors import DataError, Refused
from sessiontree.model.search_parts import KINDS, ROLES, Kind, Role
from sessiontree.storage.layout import StrPath
from sessiontree.storage.unreadable import read_failed
from sessiontree.views.text import printable

#: Options that only the index answers (refused with --no-index).
_INDEX_ONLY = (
    "--session",
    "--since",
    "--until",
    "--role",
    "--kind",
    "--tool",
    "--active-path/--off-path",
    "--history",
    "--limit",
    "--fts",
    "--reindex",
)


def parse_date(text: str, *, end: bool) -> datetime:
    """A ``--since``/``--until`` value (:func:`date_bound`), a usage error if it is none."""
    try:
        return date_bound(text, end=end)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a date (give 2026-11-30, 2026-11-30T14:00 or ISO 8601)"
        ) from None


@click.command()
@click.argument("query_text", metavar="QUERY")
@click.option("--all", "all_projects", is_flag=True, help="Every project, not just this one.")
@click.option("--project", type=click.Path(path_type=Path), help="The project at PATH.")
@click.option("--session", "session_ref", metavar="SESSION", help="Only this session.")
@click.option("--since", metavar="DATE", help="Only records from DATE on (local time).")
@click.option("--until", metavar="DATE", help="Only records before DATE (a date: its end).")
@click.option(
    "--role",
    "roles",
    type=click.Choice(ROLES),
    multiple=True,
    help="Only text of this role (repeatable): user, assistant (replies, thoughts), "
    "tool (calls' inputs, tools' outputs), system (system lines, summaries, attachments).",
)
@click.option(
    "--kind",
    "kinds",
    type=click.Choice(KINDS),
    multiple=True,
    help="Only parts of this kind (repeatable): prompt, thinking, tool_use, tool_result, …",
)
@click.option(
    "--tool", "tools", metavar="NAME", multiple=True, help="Only this tool's calls and results."
)
@click.option(
    "--active-path/--off-path",
    "active",
    default=None,
    help="Only hits on the active path (what resuming sends), or only off it (rewound, "
    "compacted away).",
)
@click.option(
    "--history", "with_history", is_flag=True, help="Also history.jsonl (what you typed)."
)
@click.option("--limit", type=click.IntRange(min=1), help="At most N hits, the best first.")
@click.option("--fts", is_flag=True, help="QUERY is FTS5 syntax (AND, OR, NOT, NEAR, prefix*).")
@click.option("--reindex", is_flag=True, help="Rebuild the search index first.")
@click.option("--no-index", is_flag=True, help="Scan the transcripts instead (no index).")
@store_filters
@json_option
def search(
    query_text: str,
    all_projects: bool,
    project: Path | None,
    session_ref: str | None,
    since: str | None,
    until: str | None,
    roles: tuple[Role, ...],
    kinds: tuple[Kind, ...],
    tools: tuple[str, ...],
    active: bool | None,
    with_history: bool,
    limit: int | None,
    fts: bool,
    reindex: bool,
    no_index: bool,
    machine: str | None,
    user: str | None,
    as_json: bool,
) -> None:
    """Search every branch of every session (rewound ones, compacted history, subagents).

    Plain words must all appear (each one as a phrase: foo-bar finds "foo bar"); with
    --fts, QUERY is FTS5 syntax. Hits come best first, each marked on (●) or off (○)
    the active path."""
    exclusive({"--all": all_projects, "--project": project})
    env = get_env(reads_store=True)
    refuse_filters_without_store(env, machine, user)
    if not query_text.strip():
        raise Refused("an empty query matches everything; give some text")
    given = {
        "--session": session_ref,
        "--since": since,
        "--until": until,
        "--role": roles or None,
        "--kind": kinds or None,
        "--tool": tools or None,
        "--active-path/--off-path": active,
        "--history": with_history,
        "--limit": limit,
        "--fts": fts,
        "--reindex": reindex,
    }
    used = [name for name in _INDEX_ONLY if given[name] not in (None, False)]
    if env.store is not None:
        if no_index or reindex:
            raise click.UsageError(
                "the store searches with PostgreSQL: no local index to skip or rebuild"
            )
        _store_search(
            env, query_text, all_projects=all_projects, project=project,
            session_ref=session_ref, since=since, until=until, roles=roles, kinds=kinds,
            tools=tools, active=active, with_history=with_history, limit=limit, fts=fts,
            machine=machine, user=user, as_json=as_json,
        )  # fmt: skip
        return
    if no_index:
        if used:
            raise click.UsageError(f"--no-index does not go with {', '.join(used)}")
        _scan(env, query_text, all_projects, project, as_json)
        return
    db = env.search_index
    if db is None:
        if used:
            raise Refused(
                f"the cache folder is inside the config root: no search index, so no "
                f"{', '.join(used)} (set $SESSIONTREE_CACHE_DIR elsewhere)"
            )
        _scan(env, query_text, all_projects, project, as_json)
        return
    project_dirs = project_scope(all_projects, project)
    session_ids = None
    if session_ref is not None:
        transcript = resolve(env, session_ref)
        session_ids, project_dirs = [transcript.stem], [transcript.parent]
    filters = _filters(
        project_dirs, session_ids, since, until, roles, kinds, tools, with_history=with_history
    )
    try:
        if reindex:
            reset_index(db)
        with progress_bytes(env, "indexing") as report:
            stats = update_index(
                db, env.layout, project_dirs=project_dirs, history=with_history, progress=report
            )
        skipped_files().extend(stats.unreadable)
        hits = query(
            db,
            query_text,
            fts=fts,
            filters=filters,
            on_active_path=active,
            limit=limit,
            skeleton_cache=skeleton_cache(env),
        )
    except QuerySyntaxError as exc:
        raise click.UsageError(str(exc)) from None
    except (sqlite3.Error, OSError) as exc:
        # The index is a cache: one that cannot be used makes a search slower, not fail,
        # unless it asked for what only the index answers.
        why = str(exc) if isinstance(exc, sqlite3.Error) else describe_os_error(exc)
        if used:
            raise DataError(str(db), f"the search index: {why} (try --reindex)") from exc
        click.echo(f"sessiontree: warning: the search index {db}: {why}; scanning", err=True)
        _scan(env, query_text, all_projects, project, as_json)
        return
    leave_quickly()  # (only read and printed from here: no teardown of what it loaded)
    if as_json:
        emit_json([hit.as_json() for hit in hits])
        return
    _print_hits(env, hits)
    if hits or all_projects or session_ref is not None:
        more = " (--limit: there may be more)" if limit is not None and len(hits) == limit else ""
        console(env).print(f"{len(hits)} hit(s){more}")
        return
    _print_none(env, query_text, project)


def _filters(
    project_dirs: Sequence[StrPath] | None,
    session_ids: list[str] | None,
    since: str | None,
    until: str | None,
    roles: tuple[Role, ...],
    kinds: tuple[Kind, ...],
    tools: tuple[str, ...],
    *,
    with_history: bool,
) -> Filters:
    """What the options narrow a search to, locally or in the store."""
    sources: list[Source] = ["transcript", "subagent"]
    if with_history:
        sources.append("history")
    return Filters(
        project_dirs=project_dirs,
        session_ids=session_ids,
        since=parse_date(since, end=False) if since is not None else None,
        until=parse_date(until, end=True) if until is not None else None,
        roles=roles or None,
        kinds=kinds or None,
        tools=tools or None,
        sources=sources,
    )


def _store_search(
    env: Env,
    query_text: str,
    *,
    all_projects: bool,
    project: Path | None,
    session_ref: str | None,
    since: str | None,
    until: str | None,
    roles: tuple[Role, ...],
    kinds: tuple[Kind, ...],
    tools: tuple[str, ...],
    active: bool | None,
    with_history: bool,
    limit: int | None,
    fts: bool,
    machine: str | None,
    user: str | None,
    as_json: bool,
) -> None:
    """``search`` in the store: PostgreSQL's full-text search, every machine and user
    (``--fts``: PostgreSQL's web search syntax)."""
    from sessiontree.catalog.store_search import search_store
    from sessiontree.cli.stored import resolve_in_store, run_connection
    from sessiontree.storage.layout import encode_cwd
    from sessiontree.storage.store.connect import failures_as_store_errors
    from sessiontree.storage.store.search import unindexed_totals

    assert env.store is not None
    project_dirs: list[str] | None = None
    session_ids = None
    if session_ref is not None:
        session_ids = [
            resolve_in_store(env, session_ref, machine=machine, user=user).info.sessionId
        ]
    elif not all_projects:
        cwd = Path(project.resolve() if project else env.cwd)
        project_dirs = [encode_cwd(str(folder)) for folder in (cwd, *cwd.parents)]
    filters = _filters(
        project_dirs, session_ids, since, until, roles, kinds, tools, with_history=with_history
    )
    with failures_as_store_errors(env.store):
        found = search_store(
            run_connection(env), query_text, filters=filters, on_active_path=active,
            limit=limit, machine=machine, user=user, fts=fts,
        )  # fmt: skip
        files, pending = unindexed_totals(run_connection(env))
    if files:
        click.echo(
            f"note: {files} file(s), {format_size(pending)}, stored but not indexed for search "
            "yet: an indexer a sync left is at work (the next sync goes on if it stopped)",
            err=True,
        )
    if as_json:
        emit_json([hit.as_json() for hit in found])
        return
    _print_hits(env, [hit.hit for hit in found])
    more = " (--limit: there may be more)" if limit is not None and len(found) == limit else ""
    console(env).print(f"{len(found)} hit(s) in the store{more}")


def _print_hits(env: Env, hits: list[SearchHit]) -> None:
    from rich.markup import escape

    out = console(env)
    for hit in hits:
        mark = "●" if hit.on_active_path else "○"
        # Each part from the transcript, its controls shown escaped (views.text).
        where = f"{(hit.session_id or '-')[:8]} {(hit.uuid or '-')[:8]} {hit.label}"
        out.print(f"{mark} {escape(printable(where))}: {_highlighted(hit)}")


def _highlighted(hit: SearchHit) -> str:
    """The snippet as rich markup, its matches highlighted, its controls escaped."""
    from rich.markup import escape

    parts: list[str] = []
    at = 0
    for start, end in hit.highlights:
        parts.append(escape(printable(hit.snippet[at:start])))
        parts.append(f"[bold yellow]{escape(printable(hit.snippet[start:end]))}[/]")
        at = end
    parts.append(escape(printable(hit.snippet[at:])))
    return "".join(parts)


def _print_none(env: Env, query_text: str, project: Path | None) -> None:
    from rich.markup import escape

    out = console(env)
    rows = list_sessions(
        env.layout, project_dirs=project_scope(False, project), cache_file=env.cache_file
    )
    where = str(project) if project else env.cwd
    scope = f"{len(rows)} session(s) of this project" if rows else "no session of this project"
    out.print(f"0 hits in {escape(where)} ({scope})")
    out.print(f"try: {escape(command_hint(env, 'search', query_text, '--all'))}")


def _scan(
    env: Env, query_text: str, all_projects: bool, project: Path | None, as_json: bool
) -> None:
    """The search without an index: every transcript of the scope scanned."""
    from rich.markup import escape

    from sessiontree.catalog.search import search_transcript

    skipped = skipped_files()
    rows = list_sessions(
        env.layout,
        project_dirs=project_scope(all_projects, project),
        cache_file=env.cache_file,
        problems=skipped,
    )
    hits: list[dict[str, Any]] = []
    with progress(env, "searching", len(rows)) as advance:
        for row in rows:
            try:
                hits.extend(search_transcript(Path(row.path), query_text))
            except (OSError, DataError) as exc:  # gone or unreadable since it was listed
                skipped.append(read_failed(row.path, exc))
            advance()
    if as_json:
        emit_json(hits)
        return
    out = console(env)
    for hit in hits:
        mark = "●" if hit["onActivePath"] else "○"
        where = f"{hit['sessionId'][:8]} {str(hit['uuid'])[:8]} {hit['type']}"
        out.print(f"{mark} {escape(printable(where))}: {escape(printable(hit['snippet']))}")
    if hits or all_projects:
        out.print(f"{len(hits)} hit(s)")
        return
    _print_none(env, query_text, project)
