"""``usage``: tokens and cost of the API responses in a project's sessions, or the root's."""

from __future__ import annotations

from datetime import UTC, date, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sessiontree.catalog.usage import (
    USAGE_BY,
    ModelUsage,
    PriceTable,
    Response,
    UsageBy,
    UsageReport,
    UsageRow,
    build_usage_report,
    default_prices,
    iter_usage_files,
    merge_prices,
    parse_since,
    read_prices,
)
from sessiontree.catalog.usage_files import UsageCache, read_responses
from sessiontree.catalog.usage_periods import WEEKDAYS, parse_timezone
from sessiontree.cli.main import Env, leave_quickly
from sessiontree.cli.output import (
    command_hint,
    console,
    emit_json,
    exclusive,
    get_env,
    json_option,
    no_cycle_collection,
    progress,
    skipped_files,
    usable_cores,
)
from sessiontree.cli.read import project_scope
from sessiontree.cli.stored import refuse_filters_without_store, store_filters
from sessiontree.errors import Refused
from sessiontree.views.text import printable

if TYPE_CHECKING:
    from rich.console import Console


@click.command()
@click.option(
    "--by",
    type=click.Choice(USAGE_BY),
    default="day",
    show_default=True,
    help="Group by date, week (its first day), month, 5-hour billing block, session,"
    " project (its cwd) or model.",
)
@click.option("--since", metavar="DATE", help="From DATE (YYYY-MM-DD, or 7d: the last 7 days).")
@click.option("--until", metavar="DATE", help="Up to DATE, included (YYYY-MM-DD or Nd).")
@click.option(
    "--timezone",
    "zone",
    metavar="TZ",
    callback=lambda _ctx, _param, value: _zone_option(value),
    help="Cut days, weeks, months and write block times in TZ (an IANA name: Europe/Paris,"
    " UTC); default the local zone.",
)
@click.option(
    "--start-of-week",
    type=click.Choice(WEEKDAYS),
    default="monday",
    show_default=True,
    help="The day weeks start on (--by week).",
)
@click.option(
    "--breakdown", is_flag=True, help="Each row's models: lines under it, or models in --json."
)
@click.option("--all", "all_projects", is_flag=True, help="Every project, not just this one.")
@click.option("--project", type=click.Path(path_type=Path), help="The project at PATH.")
@click.option(
    "--prices",
    "prices_file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="SESSIONTREE_PRICES",
    show_envvar=True,
    help="A JSON price table laid over the one shipped (its shape in docs/CLI.md).",
)
@store_filters
@json_option
def usage(
    by: UsageBy,
    since: str | None,
    until: str | None,
    zone: tuple[str, tzinfo] | None,
    start_of_week: str,
    breakdown: bool,
    all_projects: bool,
    project: Path | None,
    prices_file: Path | None,
    machine: str | None,
    user: str | None,
    as_json: bool,
) -> None:
    """Tokens and cost, each API response counted once.

    Every branch (rewound ones too), sidechains and subagents count; a response the
    client wrote as several records, or that a resume or fork copied, counts once. Cost
    from Anthropic's list prices shipped with sessiontree (their date in docs/CLI.md;
    they may be out of date): a model without a price has its cost shown as unknown, and
    a note says how to give it one with --prices.
    """
    exclusive({"--all": all_projects, "--project": project})
    env = get_env(reads_store=True)
    refuse_filters_without_store(env, machine, user)
    tz = zone[1] if zone else None  # None: the local zone of this process
    today = datetime.now(tz).date()
    first = _date_option("--since", since, today)
    last = _date_option("--until", until, today)
    prices: PriceTable = default_prices()
    if prices_file:  # laid over the shipped table: a file need price only what it adds
        prices = merge_prices(prices, read_prices(prices_file))
    with no_cycle_collection():  # (responses hold no cycles: the collector's passes only cost)
        if env.store is not None:
            responses = stored_responses(env, all_projects, project, machine, user)
        else:
            responses = local_responses(env, all_projects, project)
        report = build_usage_report(
            responses.values(),
            by=by,
            prices=prices,
            tz=tz,
            since=first,
            until=last,
            first_weekday=WEEKDAYS.index(start_of_week),
            now=datetime.now(UTC),
        )
    leave_quickly()  # (only prints from here: no teardown of what it loaded)
    if as_json:
        emit_json([row.as_json(breakdown=breakdown) for row in report.rows])
        return
    out = console(env)
    if not report.rows:
        where = "any project" if all_projects else (str(project) if project else env.cwd)
        out.print(f"no API usage for {printable(where)} under {env.layout.root}", markup=False)
        if not all_projects:
            # Runnable as printed: with this run's --root and --by.
            out.print(f"try: {command_hint(env, 'usage', '--all', '--by', by)}", markup=False)
        return
    _print_table(out, report, zone[0] if zone else None, breakdown=breakdown)
    _print_notes(out, report, prices, prices_file)


def local_responses(env: Env, all_projects: bool, project: Path | None) -> dict[str, Response]:
    """:func:`read_responses` of the root's transcripts in the scope (every project with
    ``--all``, else that of ``--project`` or the working folder), through usage's cache,
    on every core this process may use; a file that cannot be read is said on stderr."""
    skipped = skipped_files()
    files = list(iter_usage_files(env.layout, project_scope(all_projects, project), skipped))
    with progress(env, "reading usage", len(files), lets_fork=True) as advance:
        return read_responses(
            files,
            cache=usage_cache(env),
            advance=advance,
            problems=skipped,
            cores=usable_cores(),
        )


def usage_cache(env: Env) -> UsageCache | None:
    """usage's cache of ``env``'s root (None without a cache folder outside it)."""
    file = env.usage_cache_file
    return None if file is None else UsageCache(file)


def stored_responses(
    env: Env, all_projects: bool, project: Path | None, machine: str | None, user: str | None
) -> dict[str, Response]:
    """:func:`read_responses` of the store's transcripts and subagents in the scope a
    local run has (every project with ``--all``, else that of ``--project`` or the
    working folder, or the nearest folder above it that has sessions)."""
    from sessiontree.catalog.stored import USAGE_KINDS, read_stored_responses
    from sessiontree.cli.stored import run_connection
    from sessiontree.storage.layout import encode_cwd
    from sessiontree.storage.store.connect import failures_as_store_errors
    from sessiontree.storage.store.reads import current_sources

    assert env.store is not None
    conn = run_connection(env)
    with failures_as_store_errors(env.store):
        sources = current_sources(conn, kinds=USAGE_KINDS, machine=machine, user=user)
        if not all_projects:
            cwd = Path(project.resolve() if project else env.cwd)
            folders = [encode_cwd(str(folder)) for folder in (cwd, *cwd.parents)]
            named = {s.project_dir for s in sources}
            chosen = next((f for f in folders if f in named), None)
            sources = [s for s in sources if chosen is not None and s.project_dir == chosen]
        with progress(env, "reading usage", len(sources)) as advance:
            return read_stored_responses(conn, sources, advance=advance)


def _zone_option(name: str | None) -> tuple[str, tzinfo] | None:
    """``--timezone``: the name given and its zone; a usage error if there is none."""
    if name is None:
        return None
    try:
        return name, parse_timezone(name)
    except Refused as exc:
        raise click.BadParameter(str(exc)) from exc


def _date_option(name: str, value: str | None, today: date) -> date | None:
    """A ``--since``/``--until`` value as a date (``Nd`` counted back from ``today``, the
    date in the report's zone)."""
    if value is None:
        return None
    try:
        return parse_since(value, today=today)
    except Refused as exc:
        raise click.BadParameter(str(exc), param_hint=name) from exc


def _tokens(n: int) -> str:
    return f"{n:,}"


def _cost(usage: UsageRow | ModelUsage) -> str:
    """``$1.23``; ``≥ $1.23`` when a model of the row has no price; ``unknown`` when none has."""
    if usage.cost_usd is not None:
        return _dollars(usage.cost_usd)
    if isinstance(usage, UsageRow) and usage.known_cost_usd > 0:
        return f"≥ {_dollars(usage.known_cost_usd)}"
    return "unknown"


def _dollars(usd: float) -> str:
    """``$1,234.56``; under a cent, to four places (``$0.0037``), not ``$0.00``."""
    return f"${usd:,.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"


def _print_table(
    out: Console, report: UsageReport, zone: str | None, *, breakdown: bool = False
) -> None:
    """The rows as a table that fits the console: the numbers whole, the key in the room
    left, never wrapped: a session by its short id (as ``sessions`` shows it), a project
    by its folder's end (``…/weather-cli``), a block by its start and end
    (``2026-03-01 13:00–18:00``, ``*`` when active), other keys cut with an ellipsis;
    with ``breakdown``, each row's models on lines of their own under it. The key's
    heading names the zone ``--timezone`` gave, for the groupings it cuts."""
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    from sessiontree.cli.listing import build_short_ids
    from sessiontree.views.cells import fit, fit_left

    lines: list[tuple[UsageRow | ModelUsage, str, str]] = []  # (usage, key, style)
    keys = [printable(row.key) for row in report.rows]
    if report.by == "session":
        keys = build_short_ids(keys)
    for row, key in zip(report.rows, keys, strict=True):
        lines.append((row, _block_key(row) if row.block else key, ""))
        if breakdown:
            lines.extend((m, f" └ {printable(m.model)}", "dim") for m in row.models)
    lines.append((report.total, report.total.key, "bold"))
    numbers = [
        (
            _tokens(usage.input_tokens),
            _tokens(usage.output_tokens),
            _tokens(usage.cache_write_tokens),
            _tokens(usage.cache_read_tokens),
            _cost(usage),
        )
        for usage, _, _ in lines
    ]
    names = ("input", "output", "cache write", "cache read", "cost")
    widths = [max([cell_len(n), *(cell_len(r[i]) for r in numbers)]) for i, n in enumerate(names)]
    heading: str = report.by
    if zone is not None and report.by in ("day", "week", "month", "block"):
        heading = f"{report.by} ({printable(zone)})"
    room = max(out.width - sum(widths) - 2 * len(widths), 8)
    cut = fit_left if report.by == "project" else fit
    cells = [cut(key, room) if style != "dim" else fit(key, room) for _, key, style in lines]
    table = Table(box=None, pad_edge=False, show_footer=False)
    table.add_column(heading, no_wrap=True, width=max(map(cell_len, [heading, *cells])))
    for name, width in zip(names, widths, strict=True):
        table.add_column(name, justify="right", no_wrap=True, width=width)
    for (usage, _, style), key, row_numbers in zip(lines, cells, numbers, strict=True):
        if usage is report.total:
            table.add_section()
        # Text, not markup: a session id or a cwd is shown as it is.
        table.add_row(Text(key, style=style), *(Text(cell, style=style) for cell in row_numbers))
    out.print(table)
    active = next((row.block for row in report.rows if row.block and row.block.active), None)
    if active is not None:
        left = int((active.end - datetime.now(UTC)).total_seconds()) // 60
        out.print(
            f"* active: until {active.end:%H:%M} ({left // 60}h {left % 60:02d}m left)",
            markup=False,
        )


def _block_key(row: UsageRow) -> str:
    """A block as ``2026-03-01 13:00–18:00`` (its times in the report's zone), ``*`` after
    the active one."""
    assert row.block is not None
    start, end = row.block.start, row.block.end
    return f"{start:%Y-%m-%d %H:%M}–{end:%H:%M}" + (" *" if row.block.active else "")


def _print_notes(
    out: Console, report: UsageReport, prices: PriceTable, prices_file: Path | None
) -> None:
    from rich.markup import escape

    responses = f"{report.total.responses:,} API response(s), each counted once"
    if report.unpriced:
        _print_unpriced(out, report.unpriced, prices_file)
    if prices_file is not None:
        source = f"prices from {escape(str(prices_file))} over the shipped ones"
    else:
        source = f"Anthropic list prices as of {prices.as_of or '?'} (may be out of date)"
    # Two lines, not one wrapped: each within 80 columns but for a long prices path,
    # which stays whole (to be copied).
    out.print(f"[dim]{responses};[/]", markup=True, highlight=False)
    out.print(f"[dim]{source}[/]", markup=True, highlight=False)


def _print_unpriced(out: Console, models: tuple[str, ...], prices_file: Path | None) -> None:
    """Which models have no price, and how to give them one: the file's shape, with
    those models in it (N: a price to fill in, so that the shape pasted as it is is
    refused rather than taken as free)."""
    import json

    names = printable(", ".join(models))
    entry = {"input": "N", "output": "N", "cacheWrite": "N", "cacheRead": "N"}
    shape = json.dumps({"models": dict.fromkeys(models, entry)}).replace('"N"', "N")
    if prices_file is None:
        how = "price it with --prices FILE (or $SESSIONTREE_PRICES), laid over the shipped prices:"
    else:
        how = f"add {'them' if len(models) > 1 else 'it'} to {printable(str(prices_file))}:"
    out.print(f"no price for {names}: tokens counted, cost unknown", markup=False)
    out.print(how, markup=False, soft_wrap=prices_file is not None)  # (a path stays whole)
    out.print(f"  {printable(shape)}", markup=False, soft_wrap=True)
    out.print(
        "  (N: USD per million tokens; optional cacheWrite1h, the 1-hour cache, else twice"
        " input; docs/CLI.md, usage)",
        markup=False,
        soft_wrap=False,
    )
