"""Usage by week, month and 5-hour billing block, in a time zone, with each row's models
(``catalog/usage_periods.py`` and :func:`~sessiontree.catalog.usage.build_usage_report`).

Generated responses for the edges (block boundaries to the second, a zone's midnight,
the day clocks go forward), the hand-built store of ``test_usage.py``, the real client's
fixtures and, when ``../shared`` is here, the wild archives (invariants only: whatever
the grouping, every response counts once and the totals agree)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from sessiontree.catalog.usage import (
    USAGE_BY,
    Response,
    Tokens,
    UsageReport,
    build_usage_report,
    default_prices,
    iter_usage_files,
)
from sessiontree.catalog.usage_files import read_responses, read_usage
from sessiontree.catalog.usage_periods import (
    BLOCK_LENGTH,
    cut_blocks,
    parse_timezone,
    week_start,
)
from sessiontree.errors import Refused
from sessiontree.storage.layout import Layout
from tests.catalog.test_usage import HAIKU, PROJECT_A, SONNET, store
from tests.conftest import FIXTURES, WILD, needs_wild

__all__ = ["store"]  # the fixture, used by name

BERLIN = ZoneInfo("Europe/Berlin")


def response(n: int, ts: str | None, model: str = SONNET, inp: int = 1) -> Response:
    return Response(
        key=f"message:msg_{n}",
        model=model,
        tokens=Tokens(input=inp, output=1),
        timestamp=ts,
        session_id="s",
        project="/p",
        path="s.jsonl",
    )


def report(responses: Iterable[Response], by: Any, **options: Any) -> UsageReport:
    return build_usage_report(responses, by=by, prices=default_prices(), **options)


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- weeks and months ---------------------------------------------------------------


def test_weeks_start_on_monday_unless_asked() -> None:
    sunday, monday = date(2026, 3, 1), date(2026, 3, 2)
    assert week_start(sunday) == date(2026, 2, 23)
    assert week_start(monday) == monday
    assert week_start(sunday, first_weekday=6) == sunday  # ccusage's default
    assert week_start(monday, first_weekday=6) == sunday


def test_by_week_and_month_on_the_store(store: Layout) -> None:
    # The store's responses: 5 on Sunday 2026-03-01, 2 on Monday 2026-03-02 (UTC noon).
    dirs = store.find_project_dirs(PROJECT_A)
    weeks = read_usage(store, by="week", tz=UTC, project_dirs=dirs)
    assert [(r.key, r.responses) for r in weeks.rows] == [("2026-02-23", 5), ("2026-03-02", 2)]
    sundays = read_usage(store, by="week", tz=UTC, project_dirs=dirs, first_weekday=6)
    assert [(r.key, r.responses) for r in sundays.rows] == [("2026-03-01", 7)]
    months = read_usage(store, by="month", tz=UTC, project_dirs=dirs)
    assert [(r.key, r.responses) for r in months.rows] == [("2026-03", 7)]
    days = read_usage(store, by="day", tz=UTC, project_dirs=dirs)
    assert weeks.total == months.total == sundays.total == days.total


def test_days_weeks_and_months_are_cut_in_the_zone_given() -> None:
    late = [response(1, "2026-03-01T23:30:00Z"), response(2, "2026-03-31T22:30:00Z")]
    assert [r.key for r in report(late, "day", tz=UTC).rows] == ["2026-03-01", "2026-03-31"]
    assert [r.key for r in report(late, "day", tz=BERLIN).rows] == ["2026-03-02", "2026-04-01"]
    assert [r.key for r in report(late, "week", tz=UTC).rows] == ["2026-02-23", "2026-03-30"]
    assert [r.key for r in report(late, "week", tz=BERLIN).rows] == ["2026-03-02", "2026-03-30"]
    assert [r.key for r in report(late, "month", tz=UTC).rows] == ["2026-03"]
    assert [r.key for r in report(late, "month", tz=BERLIN).rows] == ["2026-03", "2026-04"]
    # --since/--until are dates in the same zone.
    kept = report(late, "day", tz=BERLIN, since=date(2026, 3, 2), until=date(2026, 3, 2))
    assert [r.key for r in kept.rows] == ["2026-03-02"]


def test_the_day_clocks_go_forward_is_one_day() -> None:
    # Berlin, 2026-03-29: 02:00 CET is 03:00 CEST, a day of 23 hours: 00:30 CET
    # (23:30Z the day before) to 23:30 CEST (21:30Z) is that day; 22:30Z the next.
    dst = [
        response(1, "2026-03-28T22:59:59Z"),
        response(2, "2026-03-28T23:30:00Z"),
        response(3, "2026-03-29T01:30:00Z"),  # 03:30 CEST
        response(4, "2026-03-29T21:59:59Z"),
        response(5, "2026-03-29T22:00:00Z"),
    ]
    days = report(dst, "day", tz=BERLIN).rows
    assert [(r.key, r.responses) for r in days] == [
        ("2026-03-28", 1),
        ("2026-03-29", 3),
        ("2026-03-30", 1),
    ]


def test_a_bad_zone_is_refused() -> None:
    assert parse_timezone("UTC").utcoffset(None) == timedelta(0)  # type: ignore[union-attr]
    assert parse_timezone("Europe/Berlin") == BERLIN
    for bad in ("Mars/Olympus", "", "../etc", "/etc/localtime"):
        with pytest.raises(Refused):
            parse_timezone(bad)


# --- billing blocks ------------------------------------------------------------------

EDGES = [
    "2026-01-10T10:55:00Z",  # block A from 10:00 (floored to the hour)
    "2026-01-10T14:59:59Z",  # A
    "2026-01-10T15:00:00Z",  # A: 5 hours after its start, not more (ccusage's rule)
    "2026-01-10T15:00:01Z",  # B from 15:00
    "2026-01-10T19:30:00Z",  # B
    "2026-01-11T00:30:01Z",  # C from 00:00: more than 5 hours after B's last
]


def test_blocks_by_ccusages_rules() -> None:
    # Given in any order: cut in time order.
    items = [moment(t) for t in reversed(EDGES)]
    blocks = cut_blocks(items, lambda m: m, now=moment("2026-02-01T00:00:00Z"))
    assert [(b.start.isoformat(), len(m)) for b, m in blocks] == [
        ("2026-01-10T10:00:00+00:00", 3),
        ("2026-01-10T15:00:00+00:00", 2),
        ("2026-01-11T00:00:00+00:00", 1),
    ]
    for block, members in blocks:
        assert block.end - block.start == BLOCK_LENGTH
        assert block.last == max(members)
        assert all(block.start <= m <= block.end for m in members)
        assert not block.active


def test_a_gap_of_five_hours_starts_a_block_even_within_the_hour() -> None:
    # 01:00 and 06:00:01: the second is more than 5 hours after the first.
    blocks = cut_blocks(
        [moment("2026-01-10T01:00:00Z"), moment("2026-01-10T06:00:01Z")],
        lambda m: m,
        now=moment("2026-02-01T00:00:00Z"),
    )
    assert [b.start.hour for b, _ in blocks] == [1, 6]


def test_the_active_block_is_the_one_still_open() -> None:
    last = moment(EDGES[-1])  # C: 00:00 to 05:00
    for now, active in [
        (last + timedelta(hours=1), True),
        (moment("2026-01-11T04:59:59Z"), True),
        (moment("2026-01-11T05:00:00Z"), False),  # its end reached
        (moment("2026-01-11T05:30:01Z"), False),  # 5 hours after its last response
    ]:
        blocks = cut_blocks([moment(t) for t in EDGES], lambda m: m, now=now)
        assert [b.active for b, _ in blocks] == [False, False, active]


def test_block_rows_are_written_in_the_zone_and_kept_by_their_start_date() -> None:
    responses = [response(n, ts, inp=n) for n, ts in enumerate(EDGES, 1)]
    responses.append(response(99, None, inp=99))  # no time: its own row, last, as --by day's
    now = moment("2026-01-11T01:00:00Z")
    rows = report(responses, "block", tz=BERLIN, now=now).rows
    assert [r.key for r in rows] == [
        "2026-01-10T11:00:00+01:00",
        "2026-01-10T16:00:00+01:00",
        "2026-01-11T01:00:00+01:00",
        "unknown",
    ]
    assert [r.responses for r in rows] == [3, 2, 1, 1]
    assert [r.input_tokens for r in rows] == [1 + 2 + 3, 4 + 5, 6, 99]
    last = rows[2].block
    assert last is not None and last.active
    assert (last.start.isoformat(), last.end.isoformat()) == (
        "2026-01-11T01:00:00+01:00",
        "2026-01-11T06:00:00+01:00",
    )
    assert rows[3].block is None
    # The same blocks in any zone: only how their times are written changes.
    kolkata = report(responses, "block", tz=ZoneInfo("Asia/Kolkata"), now=now).rows
    assert kolkata[0].key == "2026-01-10T15:30:00+05:30"
    assert [r.responses for r in kolkata] == [3, 2, 1, 1]
    # --since/--until keep the blocks that start on those dates (in the zone), whole.
    since = report(responses, "block", tz=BERLIN, now=now, since=date(2026, 1, 11)).rows
    assert [(r.key, r.responses) for r in since] == [("2026-01-11T01:00:00+01:00", 1)]


def test_a_block_over_the_change_to_summer_time_lasts_five_hours() -> None:
    crossing = [response(1, "2026-03-29T00:10:00Z"), response(2, "2026-03-29T04:50:00Z")]
    [row] = report(crossing, "block", tz=BERLIN, now=moment("2026-04-01T00:00:00Z")).rows
    assert row.block is not None and row.responses == 2
    assert row.key == row.block.start.isoformat() == "2026-03-29T01:00:00+01:00"
    assert row.block.end.isoformat() == "2026-03-29T07:00:00+02:00"
    assert row.as_json()["end"] == "2026-03-29T07:00:00+02:00"


def test_block_json_keeps_the_keys_and_adds_its_span() -> None:
    [row] = report([response(1, EDGES[0])], "block", tz=UTC, now=moment(EDGES[0])).rows
    doc = row.as_json()
    assert list(doc)[:9] == list(report([response(1, EDGES[0])], "day", tz=UTC).rows[0].as_json())
    assert {k: doc[k] for k in ("key", "start", "end", "active")} == {
        "key": "2026-01-10T10:00:00+00:00",
        "start": "2026-01-10T10:00:00+00:00",
        "end": "2026-01-10T15:00:00+00:00",
        "active": True,
    }


# --- the models of a row ---------------------------------------------------------------


def test_each_row_has_its_models_summing_to_it(store: Layout) -> None:
    dirs = store.find_project_dirs(PROJECT_A)
    by_model = {r.key: r for r in read_usage(store, by="model", tz=UTC, project_dirs=dirs).rows}
    days = read_usage(store, by="day", tz=UTC, project_dirs=dirs).rows
    first = days[0].as_json(breakdown=True)["models"]
    # The dearest first; a model without a price (no cost) last.
    assert [m["model"] for m in first] == [SONNET, HAIKU]
    summed: dict[str, list[int]] = {}
    for row in days:
        assert sum(m.responses for m in row.models) == row.responses
        assert sum(m.input_tokens for m in row.models) == row.input_tokens
        assert sum(m.cache_read_tokens for m in row.models) == row.cache_read_tokens
        known = sum(m.cost_usd or 0 for m in row.models)
        assert known == pytest.approx(row.known_cost_usd)
        for m in row.models:
            count = summed.setdefault(m.model, [0, 0])
            count[0] += m.responses
            count[1] += m.output_tokens
    assert summed == {k: [r.responses, r.output_tokens] for k, r in by_model.items()}
    later = days[1].as_json(breakdown=True)["models"]
    assert later[-1]["model"] == "claude-future-9" and later[-1]["costUSD"] is None
    assert list(later[0]) == [
        "model",
        "inputTokens",
        "outputTokens",
        "cacheReadTokens",
        "cacheCreationTokens",
        "costUSD",
        "responses",
    ]
    assert "models" not in days[0].as_json()  # only when asked


# --- real transcripts ---------------------------------------------------------------------


def check_every_grouping(responses: dict[str, Response], now: datetime) -> None:
    """Whatever the grouping, the total is the same; each block holds the responses of
    its 5 hours and no two overlap."""
    reports = {by: report(responses.values(), by, tz=BERLIN, now=now) for by in USAGE_BY}
    totals = {by: r.total for by, r in reports.items()}
    assert len({(t.responses, t.input_tokens, t.output_tokens) for t in totals.values()}) == 1
    moments = sorted(
        m.astimezone(UTC)
        for r in responses.values()
        if r.timestamp and (m := datetime.fromisoformat(r.timestamp))
    )
    blocks = [row.block for row in reports["block"].rows if row.block is not None]
    assert blocks and blocks == sorted(blocks, key=lambda b: b.start)
    held = 0
    for block, row in zip(blocks, reports["block"].rows, strict=False):
        assert block.start.minute == block.start.second == 0
        assert block.end - block.start == BLOCK_LENGTH
        inside = [m for m in moments if block.start <= m <= block.end and m <= block.last]
        assert len(inside) == row.responses
        held += row.responses
    assert held == len(moments)
    for earlier, later in pairwise(blocks):
        assert later.start >= earlier.end
    for row in reports["week"].rows:
        assert date.fromisoformat(row.key).weekday() == 0
    for row in reports["day"].rows:
        model_rows = row.models
        assert sum(m.responses for m in model_rows) == row.responses


def test_real_client_fixtures_in_every_grouping() -> None:
    for scenario in ("14-subagent", "09-fork", "06-compact"):
        layout = Layout(FIXTURES / scenario / "claude-home")
        check_every_grouping(read_responses(iter_usage_files(layout)), datetime.now(UTC))


@needs_wild
@pytest.mark.parametrize("archive", ["dk-1-sample", "ccl-1-sample"])
def test_wild_archives_in_every_grouping(archive: str) -> None:
    layout = Layout(WILD / archive / "claude-home")
    responses = read_responses(iter_usage_files(layout))
    check_every_grouping(responses, datetime.now(UTC))
    # dk-1-sample spans 5 days, ccl-1-sample months: more than one block, week or month.
    blocks = report(responses.values(), "block", tz=UTC, now=datetime.now(UTC)).rows
    assert len(blocks) > 1
