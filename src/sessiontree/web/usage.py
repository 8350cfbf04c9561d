"""``/usage``: tokens and cost per day, session, project or model, as ``usage --all``
counts them (:func:`~sessiontree.catalog.usage_files.read_usage`; on a store, every stored
transcript and subagent: :func:`~sessiontree.catalog.stored.read_stored_responses`),
from ``since`` to ``until`` as ``--since``/``--until`` take them, with a chart."""

from __future__ import annotations

from datetime import date
from typing import get_args

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sessiontree.catalog.usage import (
    USAGE_BY,
    UsageBy,
    UsageReport,
    build_usage_report,
    default_prices,
    parse_since,
)
from sessiontree.catalog.usage_files import read_usage
from sessiontree.errors import Refused
from sessiontree.views.html.chart import Chart, bar_chart
from sessiontree.web.config import ViewerConfig
from sessiontree.web.responses import page, reading

METRICS = ("cost", "tokens")
#: The groupings the viewer offers (the command's weeks, months and billing blocks not yet).
VIEWER_BY: tuple[UsageBy, ...] = ("day", "session", "project", "model")


def build_usage(
    config: ViewerConfig,
    by: UsageBy,
    metric: str,
    since: date | None = None,
    until: date | None = None,
) -> tuple[UsageReport, Chart]:
    # tz None: the local dates of the server's time zone, as the CLI's.
    if config.store is not None:
        from sessiontree.catalog.stored import USAGE_KINDS, read_stored_responses
        from sessiontree.storage.store.reads import current_sources

        conn = config.store_conn()
        responses = read_stored_responses(conn, current_sources(conn, kinds=USAGE_KINDS))
        prices = default_prices() if config.prices is None else config.prices
        report = build_usage_report(
            responses.values(), by=by, prices=prices, tz=None, since=since, until=until
        )
    else:
        report = read_usage(
            config.layout,
            by=by,
            prices=config.prices,
            tz=None,
            since=since,
            until=until,
            cache=config.usage_cache(),
        )
    values = [
        (
            row.key,
            row.known_cost_usd
            if metric == "cost"
            else float(
                row.input_tokens
                + row.output_tokens
                + row.cache_read_tokens
                + row.cache_write_tokens
            ),
        )
        for row in report.rows
    ]
    return report, bar_chart(values)


async def usage_page(request: Request) -> Response:
    by = request.query_params.get("by", "day")
    metric = request.query_params.get("metric", "cost")
    if by not in VIEWER_BY:
        raise Refused(f"by: one of {', '.join(VIEWER_BY)}, not {by!r}")
    if metric not in METRICS:
        raise Refused(f"metric: one of {', '.join(METRICS)}, not {metric!r}")
    # ``--since``/``--until`` as the CLI takes them: YYYY-MM-DD or Nd (the last N days)
    today = date.today()
    since_text = request.query_params.get("since", "").strip()
    until_text = request.query_params.get("until", "").strip()
    since = parse_since(since_text, today=today) if since_text else None
    until = parse_since(until_text, today=today) if until_text else None
    report, chart = await run_in_threadpool(reading(request, build_usage), by, metric, since, until)
    return page(
        request,
        "usage.html",
        page_title="sessiontree: usage",
        report=report,
        chart=chart,
        by=by,
        metric=metric,
        choices=VIEWER_BY,
        metrics=METRICS,
        since=since_text,
        until=until_text,
    )


assert set(VIEWER_BY) <= set(get_args(UsageBy)) == set(USAGE_BY)

routes = [Route("/usage", usage_page, name="usage")]
