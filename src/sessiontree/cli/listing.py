"""``sessions``: every session of a project, or of the root."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sessiontree.catalog.index import SessionInfo, info_as_json, list_sessions
from sessiontree.catalog.resolve import session_matches
from sessiontree.cli.main import Env, leave_quickly
from sessiontree.cli.output import (
    command_hint,
    console,
    emit_json,
    exclusive,
    format_size,
    get_env,
    json_option,
    skipped_files,
)
from sessiontree.cli.read import project_scope
from sessiontree.cli.stored import refuse_filters_without_store, store_filters
from sessiontree.lifecycle.live import live_session_ids
from sessiontree.views.text import printable
from sessiontree.views.times import local_time

if TYPE_CHECKING:
    from rich.console import Console

    from sessiontree.catalog.stored import StoredInfo


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
@store_filters
@json_option
def sessions(
    all_projects: bool,
    project: Path | None,
    search: str | None,
    include_empty: bool,
    machine: str | None,
    user: str | None,
    as_json: bool,
) -> None:
    """List sessions, newest first (default: the current directory's project).

    A file that holds no conversation is not a session (the client answers "No
    conversation found" to it): listed only with --include-empty; `doctor` reports it.
    """
    exclusive({"--all": all_projects, "--project": project})
    env = get_env(reads_store=True)
    refuse_filters_without_store(env, machine, user)
    origin: dict[int, tuple[str, str]] = {}  # id(row) -> (machine, user), from the store
    skipped = skipped_files()
    if env.store is not None:
        stored = stored_rows(env, all_projects, project, machine, user)
        rows = [s.info for s in stored]
        origin = {id(s.info): (s.machine, s.user) for s in stored}
    else:
        rows = list_sessions(
            env.layout,
            project_dirs=project_scope(all_projects, project),
            cache_file=env.cache_file,
            include_empty=True,
            problems=skipped,
        )
    if search is not None:
        rows = [r for r in rows if session_matches(r, search)]
    hidden = 0 if include_empty else sum(1 for r in rows if r.noConversation is not None)
    if hidden:
        rows = [r for r in rows if r.noConversation is None]
    live = live_session_ids(env.layout) if env.store is None else set()
    leave_quickly()  # (only prints from here: no teardown of what it loaded)
    if as_json:
        emit_json(
            [
                {
                    **info_as_json(r, with_reason=include_empty),
                    "live": r.sessionId in live,
                    **_origin(origin, r),
                }
                for r in rows
            ]
        )
        return
    _print_listing(env, rows, live, origin, hidden, all_projects, project)


def _print_listing(
    env: Env,
    rows: list[SessionInfo],
    live: set[str],
    origin: dict[int, tuple[str, str]],
    hidden: int,
    all_projects: bool,
    project: Path | None,
) -> None:
    """The listing for people (rich imported only here: ``--json`` runs without it)."""
    from rich.markup import escape

    out = console(env)
    if not rows:
        where = "any project" if all_projects else (str(project) if project else env.cwd)
        under = "the store" if env.store is not None else str(env.layout.root)
        out.print(f"no sessions for {escape(where)} under {escape(under)}")
        if hidden:
            _print_hidden(out, hidden)
        if not all_projects:
            out.print(f"try: {escape(command_hint(env, 'sessions', '--all'))}")
        return
    _print_table(out, rows, live, origin)
    if hidden:
        _print_hidden(out, hidden)
    if any(r.sessionId in live for r in rows):
        out.print(f"{LIVE_MARK} open in a running client: writes to it need --force")


def _origin(origin: dict[int, tuple[str, str]], row: SessionInfo) -> dict[str, str]:
    """``machine`` and ``user`` of a row read from the store (none for a local one)."""
    found = origin.get(id(row))
    return {} if found is None else {"machine": found[0], "user": found[1]}


def stored_rows(
    env: Env, all_projects: bool, project: Path | None, machine: str | None, user: str | None
) -> list[StoredInfo]:
    """The store's sessions in the scope a local listing has: every one (``--all``),
    else those of ``--project`` or the working folder, or of the nearest folder above
    it that has sessions."""
    from sessiontree.catalog.stored import list_stored_sessions
    from sessiontree.cli.stored import run_connection
    from sessiontree.storage.store.connect import failures_as_store_errors

    assert env.store is not None
    with failures_as_store_errors(env.store):
        rows = list_stored_sessions(run_connection(env), machine=machine, user=user)
    if all_projects:
        return rows
    cwd = Path(project.resolve() if project else env.cwd)
    for folder in (cwd, *cwd.parents):
        found = [r for r in rows if r.info.cwd == str(folder)]
        if found:
            return found
    return []


#: Marks a session a running client holds open (``sessions/<pid>.json``).
LIVE_MARK = "▶"

#: The characters of a session id shown at least (more where two ids share them).
SHORT_ID = 8
#: What rich puts between two columns of a table with no box and no edge padding.
_GAP = 2
#: Below these widths the title and the cwd are not cut but left out (cwd first).
_MIN_WIDTH = {"title": 12, "cwd": 10}


def build_short_ids(ids: Sequence[str], *, minimum: int = SHORT_ID) -> list[str]:
    """Each id cut to ``minimum`` characters, or to one past the longest prefix it shares
    with another of ``ids``: no two shown alike unless the ids are the same."""
    shared = [0] * len(ids)
    order = sorted(range(len(ids)), key=ids.__getitem__)
    # An id shares its longest prefix with one of its neighbours in sorted order.
    for a, b in itertools.pairwise(order):
        common = _shared_prefix(ids[a], ids[b])
        shared[a], shared[b] = max(shared[a], common), max(shared[b], common)
    return [sid[: max(minimum, n + 1)] for sid, n in zip(ids, shared, strict=True)]


def _shared_prefix(first: str, second: str) -> int:
    """How many leading characters ``first`` and ``second`` have in common."""
    pairs = enumerate(zip(first, second, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(first), len(second)))


def _fit_widths(width: int, natural: dict[str, int]) -> dict[str, int]:
    """The columns shown and their widths within ``width``: the title and the cwd are cut
    first (the cwd to at most a third of their room, the title takes the rest), then the
    cwd, msgs, updated and title are left out, in that order. The session id and the
    size are always shown whole."""
    shown = dict(natural)
    for dropped in (None, "cwd", "msgs", "updated", "title"):
        if dropped is not None:
            del shown[dropped]
        flexible = [name for name in ("title", "cwd") if name in shown]
        fixed = sum(w for name, w in shown.items() if name not in flexible)
        room = width - fixed - _GAP * (len(shown) - 1)
        if sum(shown[name] for name in flexible) <= room:
            return shown
        if room >= sum(min(_MIN_WIDTH[name], shown[name]) for name in flexible):
            break
    else:
        return shown  # the id and the size alone: whole even when wider than the screen
    if len(flexible) == 2:
        cwd = min(shown["cwd"], max(_MIN_WIDTH["cwd"], room // 3))
        shown["title"] = min(shown["title"], room - cwd)
        shown["cwd"] = room - shown["title"]
    else:
        shown[flexible[0]] = room
    return shown


def _one_line(text: str) -> str:
    """Transcript text for one table cell: controls escaped, whitespace runs one space."""
    return " ".join(printable(text).split())


def _print_table(
    out: Console,
    rows: list[SessionInfo],
    live: set[str],
    origin: dict[int, tuple[str, str]] | None = None,
) -> None:
    """The sessions as a table that fits the console (:func:`_fit_widths`); rows from
    the store with their machine."""
    from rich.cells import cell_len
    from rich.text import Text

    from sessiontree.views.cells import fit_left

    titles: list[tuple[str, str]] = []  # (plain, the part of it dimmed)
    for row in rows:
        title = _one_line(row.title or "")
        if len(title) > 80:
            title = title[:79] + "…"
        if row.noConversation is None:
            titles.append((title, ""))
        else:
            why = f"(not a session: {row.noConversation})"
            titles.append((f"{why} {title}".rstrip(), why))
    plain: dict[str, list[str]] = {
        "session": [
            printable(sid) + (f" {LIVE_MARK}" if row.sessionId in live else "")
            for sid, row in zip(build_short_ids([r.sessionId for r in rows]), rows, strict=True)
        ],
        "updated": [local_time(r.updatedAt) for r in rows],
        "msgs": [str(r.messageCount) for r in rows],
        "size": [format_size(r.sizeBytes) for r in rows],
        "title": [shown for shown, _ in titles],
        "cwd": [_one_line(r.cwd or "") for r in rows],
    }
    if origin:
        plain["machine"] = [printable(origin.get(id(r), ("", ""))[0]) for r in rows]
    natural = {name: max(map(cell_len, [name, *column])) for name, column in plain.items()}
    widths = _fit_widths(out.width, natural)
    if "cwd" in widths:  # a folder cut shows its end (``…/weather-cli``), maybe narrower
        plain["cwd"] = [fit_left(cwd, widths["cwd"]) for cwd in plain["cwd"]]
        spare = widths["cwd"] - max(map(cell_len, ["cwd", *plain["cwd"]]))
        if "title" in widths and spare > 0:  # the title takes what the cwd leaves
            widths["cwd"] -= spare
            widths["title"] = min(natural["title"], widths["title"] + spare)
    # Laid out here, not by rich's Table: its layout costs a millisecond a row (a
    # listing of a thousand sessions took a second); the lines are the ones it drew.
    lines = [Text(_row({name: name for name in widths}, widths), style="bold")]
    for i, row in enumerate(rows):
        line = Text(_row({name: plain[name][i] for name in widths}, widths))
        if row.noConversation is not None and "title" in widths:
            start = sum(widths[name] + _GAP for name in itertools.takewhile("title".__ne__, widths))
            line.stylize("dim", start, start + min(len(titles[i][1]), widths["title"]))
        lines.append(line)
    out.print(Text("\n").join(lines), no_wrap=True, overflow="ignore", crop=False)


def _row(cells: dict[str, str], widths: dict[str, int]) -> str:
    """One line of the table: each cell cut to its column (``…``) and padded, numbers
    to the right, columns :data:`_GAP` apart."""
    from rich.cells import cell_len

    from sessiontree.views.cells import fit

    shown = []
    for name, width in widths.items():
        text = fit(cells[name], width)
        pad = " " * (width - cell_len(text))
        shown.append(pad + text if name in ("msgs", "size") else text + pad)
    return (" " * _GAP).join(shown)


def _print_hidden(out: Console, hidden: int) -> None:
    out.print(
        f"[dim]{hidden} file(s) holding no conversation not shown "
        "(sessiontree sessions --include-empty; doctor)[/]"
    )
