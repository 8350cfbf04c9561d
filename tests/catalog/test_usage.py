"""Usage and cost (``catalog/usage.py`` and ``sessiontree usage``): each API response once.

One built store holds every way a response is written more than once or not at all: a
response split over three records (its output count growing, as the client streams it),
a resumed copy of the session in another transcript, rewound branches, a subagent
transcript, two records known only by their ``requestId``, a model with no price and a
``<synthetic>`` record. The totals below are worked out by hand from those records.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.catalog.usage import (
    LocalDays,
    PriceTable,
    build_usage_report,
    default_prices,
    iter_usage_files,
    local_date,
    merge_prices,
    normalize_model,
    parse_prices,
    parse_response,
    parse_since,
)
from sessiontree.catalog.usage_files import read_responses, read_usage
from sessiontree.conversation.fork import apply_fork, plan_fork
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import DataError, Refused
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout
from tests.conftest import FIXTURES, WILD, lay_out, needs_wild

SONNET = "claude-sonnet-4-5-20250929"
HAIKU = "claude-haiku-4-5-20251001"
FUTURE = "claude-future-9"  # no price anywhere
ORIGINAL = "aaaaaaaa-0000-4000-8000-000000000001"
RESUMED = "bbbbbbbb-0000-4000-8000-000000000002"
OTHER = "cccccccc-0000-4000-8000-000000000003"
PROJECT_A = "/home/u/proj-a"
PROJECT_B = "/home/u/proj-b"
DAY1 = "2026-03-01T12:00:00.000Z"  # noon UTC: the same date in the tests' local zone
DAY2 = "2026-03-02T12:00:00.000Z"


def usage(inp: int, out: int, write: int = 0, read: int = 0, *, hour: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": write - hour,
            "ephemeral_1h_input_tokens": hour,
        },
        "service_tier": "standard",
    }


def user(uuid: str, parent: str | None, text: str, ts: str = DAY1) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "timestamp": ts,
        "message": {"role": "user", "content": text},
    }


def assistant(
    uuid: str,
    parent: str,
    *,
    msg_id: str | None,
    model: str,
    use: dict[str, Any],
    ts: str = DAY1,
    request: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": f"answer {uuid}"}],
        "usage": use,
    }
    if msg_id is not None:
        message["id"] = msg_id
    record: dict[str, Any] = {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "timestamp": ts,
        "message": message,
    }
    if request is not None:
        record["requestId"] = request
    return record


def original_records() -> list[dict[str, Any]]:
    """The first session: a response split over 3 records, two rewound branches, a
    response known by its requestId only (2 records), a later one of an unpriced model,
    and a ``<synthetic>`` record."""
    split = usage(10, 1, 100, 1000)
    return [
        user("u1", None, "p1"),
        # One response, three content blocks: streamed, the output count grows.
        assistant("a1", "u1", msg_id="msg_1", model=SONNET, use=split, request="req_1"),
        assistant("a2", "a1", msg_id="msg_1", model=SONNET, use=split, request="req_1"),
        assistant(
            "a3", "a2", msg_id="msg_1", model=SONNET, use=usage(10, 50, 100, 1000), request="req_1"
        ),
        # Two branches from a3: the first was rewound away; both ran, both cost.
        user("u2", "a3", "rewound"),
        assistant("a4", "u2", msg_id="msg_2", model=SONNET, use=usage(5, 7)),
        user("u3", "a3", "kept"),
        assistant("a5", "u3", msg_id="msg_3", model=SONNET, use=usage(3, 4)),
        # No message id: known by the requestId its two records share.
        assistant("a6", "a5", msg_id=None, model=SONNET, use=usage(1, 1), request="req_x"),
        assistant("a7", "a6", msg_id=None, model=SONNET, use=usage(1, 1), request="req_x"),
        # Written by the client itself: no API call.
        assistant("a8", "a7", msg_id="msg_syn", model="<synthetic>", use=usage(999, 999)),
        user("u4", "a8", "later", DAY2),
        assistant("a9", "u4", msg_id="msg_4", model=FUTURE, use=usage(2, 2), ts=DAY2),
    ]


def write_transcript(path: Path, records: list[dict[str, Any]], session: str, cwd: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for record in records:
            handle.write(json.dumps({**record, "sessionId": session, "cwd": cwd}) + "\n")


@pytest.fixture
def store(tmp_path: Path) -> Layout:
    layout = Layout(tmp_path / "claude")
    records = original_records()
    first = layout.transcript_path(PROJECT_A, ORIGINAL)
    write_transcript(first, records, ORIGINAL, PROJECT_A)
    # Resumed: every record copied (same uuids, same message ids), then one new response.
    resumed = [
        *records,
        user("u5", "a9", "resumed", DAY2),
        assistant(
            "a10", "u5", msg_id="msg_5", model=SONNET, use=usage(20, 30, 200, hour=200), ts=DAY2
        ),
    ]
    write_transcript(layout.transcript_path(PROJECT_A, RESUMED), resumed, RESUMED, PROJECT_A)
    # A subagent of the first session: an API call of its own.
    subagent = first.with_suffix("") / "subagents" / "agent-a1b2c3.jsonl"
    sub = [
        {**user("s1", None, "task"), "isSidechain": True},
        {
            **assistant("s2", "s1", msg_id="msg_6", model=HAIKU, use=usage(40, 60)),
            "isSidechain": True,
        },
    ]
    write_transcript(subagent, sub, ORIGINAL, PROJECT_A)
    # Another project, counted only with --all.
    other = [
        user("o1", None, "elsewhere"),
        assistant("o2", "o1", msg_id="msg_7", model="claude-opus-4-1-20250805", use=usage(1, 1)),
    ]
    write_transcript(layout.transcript_path(PROJECT_B, OTHER), other, OTHER, PROJECT_B)
    return layout


# By hand: sonnet 4.5 has msg_1 (10 in, 50 out, 100 written, 1000 read), msg_2 (5, 7),
# msg_3 (3, 4), req_x (1, 1), msg_5 (20, 30, 200 written for the 1-hour cache); haiku 4.5
# msg_6 (40, 60); claude-future-9 msg_4 (2, 2).
SONNET_COST = (39 * 3 + 92 * 15 + 100 * 3.75 + 200 * 6 + 1000 * 0.3) / 1e6
HAIKU_COST = (40 * 1 + 60 * 5) / 1e6


def report_of(layout: Layout, **options: Any) -> Any:
    return read_usage(layout, tz=UTC, project_dirs=layout.find_project_dirs(PROJECT_A), **options)


def test_each_response_is_counted_once_over_the_whole_scope(store: Layout) -> None:
    report = report_of(store, by="model")
    total = report.total
    assert total.responses == 7  # msg_1..msg_6 and req_x; not the synthetic one
    assert (total.input_tokens, total.output_tokens) == (81, 154)
    assert (total.cache_write_tokens, total.cache_read_tokens) == (300, 1000)
    assert total.cost_usd is None  # claude-future-9 has no price
    assert total.known_cost_usd == pytest.approx(SONNET_COST + HAIKU_COST)
    assert report.unpriced == (FUTURE,)
    rows = {row.key: row for row in report.rows}
    assert list(rows) == [FUTURE, HAIKU, SONNET]
    assert rows[SONNET].responses == 5
    assert rows[SONNET].cost_usd == pytest.approx(SONNET_COST)
    assert rows[HAIKU].cost_usd == pytest.approx(HAIKU_COST)
    assert (rows[FUTURE].input_tokens, rows[FUTURE].cost_usd) == (2, None)
    assert "<synthetic>" not in rows


def test_the_files_read_include_subagents(store: Layout) -> None:
    files = list(iter_usage_files(store, store.find_project_dirs(PROJECT_A)))
    assert [f.name for f in files] == [
        f"{ORIGINAL}.jsonl",
        "agent-a1b2c3.jsonl",
        f"{RESUMED}.jsonl",
    ]
    assert len(list(iter_usage_files(store))) == 4  # every project


def test_by_day_session_and_project(store: Layout) -> None:
    by_day = {row.key: row for row in report_of(store, by="day").rows}
    assert list(by_day) == ["2026-03-01", "2026-03-02"]
    assert by_day["2026-03-01"].responses == 5  # msg_1..3, req_x, msg_6
    assert (by_day["2026-03-02"].input_tokens, by_day["2026-03-02"].responses) == (22, 2)
    by_session = {row.key: row for row in report_of(store, by="session").rows}
    # The copies in the resumed transcript stay with the session they came from; the
    # subagent's response is its session's.
    assert by_session[ORIGINAL].responses == 6
    assert by_session[RESUMED].responses == 1
    assert by_session[RESUMED].input_tokens == 20
    by_project = report_of(store, by="project").rows
    assert [row.key for row in by_project] == [PROJECT_A]
    everywhere = read_usage(store, by="project", tz=UTC)
    assert [row.key for row in everywhere.rows] == [PROJECT_A, PROJECT_B]
    assert everywhere.total.responses == 8


def test_since_and_until_keep_the_local_dates_asked_for(store: Layout) -> None:
    later = report_of(store, by="model", since=date(2026, 3, 2))
    assert later.total.responses == 2
    assert later.total.input_tokens == 22
    earlier = report_of(store, by="day", until=date(2026, 3, 1))
    assert [row.key for row in earlier.rows] == ["2026-03-01"]


def test_the_local_date_is_the_zone_given() -> None:
    late = "2026-03-01T23:30:00Z"
    assert local_date(late, UTC) == date(2026, 3, 1)
    assert local_date(late, timezone(timedelta(hours=2))) == date(2026, 3, 2)
    assert local_date("not a time", UTC) is None
    assert local_date(None, UTC) is None


def test_parse_since() -> None:
    today = date(2026, 3, 10)
    assert parse_since("2026-03-01", today=today) == date(2026, 3, 1)
    assert parse_since("1d", today=today) == today
    assert parse_since("7d", today=today) == date(2026, 3, 4)
    for bad in ("0d", "7", "yesterday", "2026-13-01"):
        with pytest.raises(Refused):
            parse_since(bad, today=today)


def test_model_families_and_the_shipped_table() -> None:
    assert normalize_model("claude-sonnet-4-20250514") == "claude-sonnet-4"
    assert normalize_model("claude-opus-4-1-20250805") == "claude-opus-4-1"
    assert normalize_model("us.anthropic.claude-3-7-sonnet-20250219-v1:0") == "claude-3-7-sonnet"
    assert normalize_model("claude-3-5-sonnet-v2@20241022") == "claude-3-5-sonnet"
    prices = default_prices()
    assert prices.as_of
    sonnet = prices.price_for("claude-sonnet-4-5-20250929")
    assert sonnet is not None and (sonnet.input, sonnet.output) == (3, 15)
    opus = prices.price_for("claude-opus-4-1-20250805")
    assert opus is not None and opus.output == 75
    # A newer model is not priced as an older one of its line: unknown, never guessed.
    assert prices.price_for("claude-opus-4-7") is None
    assert prices.price_for("claude-opus-5-5") is None


def test_a_price_file_replaces_the_table() -> None:
    table = parse_prices(
        json.dumps(
            {
                "models": {
                    "claude-future-9": {"input": 1, "output": 2, "cacheWrite": 0, "cacheRead": 0}
                }
            }
        )
    )
    future = table.price_for(FUTURE)
    assert future is not None and future.cache_write_1h == 2  # twice input when not given
    assert table.price_for(SONNET) is None
    for bad in ("[]", "{", '{"models": {"m": {"input": 1}}}', '{"models": {"m": "x"}}'):
        with pytest.raises(DataError):
            parse_prices(bad)


def test_a_price_file_is_laid_over_the_shipped_table() -> None:
    entry = {"input": 1, "output": 2, "cacheWrite": 0, "cacheRead": 0}
    top = parse_prices(
        json.dumps({"models": {FUTURE: entry, "claude-opus-4-0": entry}, "aliases": {"f": FUTURE}})
    )
    table = merge_prices(default_prices(), top)
    assert table.price_for(FUTURE) == table.price_for("f") == top.price_for(FUTURE)
    assert table.price_for(SONNET) == default_prices().price_for(SONNET)
    # a name the file prices is its price, no longer the shipped alias's family
    assert table.price_for("claude-opus-4-0") == top.price_for(FUTURE)
    assert table.as_of == default_prices().as_of


def test_report_of_nothing() -> None:
    report = build_usage_report([], by="day", prices=PriceTable({}), tz=UTC)
    assert report.rows == ()
    assert (report.total.responses, report.total.cost_usd) == (0, 0.0)


def test_real_client_fixtures() -> None:
    # 2.1.328: a subagent's responses count; a fork's copies (same message ids) do not.
    subagent = read_usage(Layout(FIXTURES / "14-subagent" / "claude-home"), tz=UTC)
    assert (subagent.total.responses, subagent.total.input_tokens) == (10, 1200)
    fork = read_usage(Layout(FIXTURES / "09-fork" / "claude-home"), by="session", tz=UTC)
    assert fork.total.responses == 7
    # /fork in 8300586d made 8a25c45b, whose copies say so (requestSessionId): all 7
    # responses were sent by the original.
    assert [(row.key[:8], row.responses) for row in fork.rows] == [("8300586d", 7)]


@needs_wild
def test_a_streamed_response_counts_its_final_output() -> None:
    # The client wrote msg_0175yHhPUPFGbabUiDkdjvaD as 3 records saying 3, 172, 172.
    root = WILD / "dk-1-sample" / "claude-home"
    responses = read_responses(iter_usage_files(Layout(root)))
    tokens = responses["message:msg_0175yHhPUPFGbabUiDkdjvaD"].tokens
    assert (tokens.input, tokens.output, tokens.cache_write) == (3, 172, 1331)
    # hook-05's <synthetic> record is left out: 186 message ids, 185 API responses.
    hook = read_usage(Layout(WILD / "hook-05-attio" / "claude-home"), by="model", tz=UTC)
    assert hook.total.responses == 185
    assert "<synthetic>" not in [row.key for row in hook.rows]


def test_a_copy_is_counted_for_the_session_that_sent_it() -> None:
    record = assistant("a1", "u1", msg_id="msg_1", model=SONNET, use=usage(1, 1))
    where = {"session_id": "file-stem", "project": "folder", "path": "x.jsonl"}
    assert parse_response(record, **where) is not None
    assert parse_response(record, **where).session_id == "file-stem"  # type: ignore[union-attr]
    copied = {**record, "sessionId": "fork", "requestSessionId": "original", "cwd": "/p"}
    response = parse_response(copied, **where)
    assert response is not None
    assert (response.session_id, response.project) == ("original", "/p")
    synthetic = assistant("a2", "a1", msg_id="m", model="<synthetic>", use=usage(1, 1))
    assert parse_response(synthetic, **where) is None
    assert (
        parse_response({**record, "message": {**record["message"], "usage": None}}, **where) is None
    )


def test_a_forks_copies_stay_with_the_session_that_wrote_them(tmp_path: Path) -> None:
    """A fork (and a fork of it) whose id sorts before its parent's: the responses it
    copied are still the parent's (the copies keep their timestamps and say forkedFrom);
    only what the fork itself sent is the fork's."""
    root, _ = lay_out("09-fork", tmp_path)
    layout = Layout(root)
    before = {row.key: row for row in read_usage(layout, by="session", tz=UTC).rows}
    parent = Transcript.open(next((root / "projects").glob("*/8300586d*.jsonl")))
    fork_id, fork_of_fork_id = (f"00000000-0000-4000-8000-00000000000{n}" for n in (1, 0))
    apply_fork(plan_fork(parent, new_session_id=fork_id))
    fork = Session.open(parent.path.with_name(f"{fork_id}.jsonl"))
    fork.append_prompt("go on in the fork")
    fork.append_response(
        [{"type": "text", "text": "Going on."}], usage={"input_tokens": 5, "output_tokens": 7}
    )
    apply_fork(plan_fork(Transcript.open(fork.path), new_session_id=fork_of_fork_id))
    after = {row.key: row for row in read_usage(layout, by="session", tz=UTC).rows}
    assert sorted(after) == sorted([*before, fork_id])  # the fork of the fork sent nothing
    assert after[parent.session_id] == before[parent.session_id]
    assert (after[fork_id].responses, after[fork_id].input_tokens) == (1, 5)


#: Zones whose midnights fall within an hour (UTC), or whose offset changes by half an
#: hour, at odd times, or across midnight; fixed offsets; UTC.
AWKWARD_ZONES = [
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "America/St_Johns",
    "Pacific/Chatham",
    "America/Havana",
    "America/Santiago",
    "America/Asuncion",
    "Europe/Paris",
    "Antarctica/Troll",
    "Africa/Monrovia",
]


@st.composite
def timestamps(draw: st.DrawFn) -> str | None:
    """A timestamp as transcripts hold them (UTC, ``Z``), or with an offset, or none, or
    local, or no time at all."""
    moment = draw(
        st.datetimes(
            min_value=datetime(1900, 1, 1),
            max_value=datetime(2040, 1, 1),
            timezones=st.just(UTC),
        )
    )
    shape = draw(st.sampled_from(["z", "z", "z", "offset", "naive", "odd"]))
    if shape == "z":
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if shape == "offset":
        minutes = draw(st.integers(-14 * 60, 14 * 60))
        return moment.astimezone(timezone(timedelta(minutes=minutes))).isoformat()
    if shape == "naive":
        return moment.replace(tzinfo=None).isoformat()
    return draw(st.sampled_from([None, "", "not a time", "2026-03-01T25:00:00Z"]))


@contextlib.contextmanager
def local_zone(name: str) -> Iterator[None]:
    """The process's local zone is ``name`` meanwhile ($TZ, :func:`time.tzset`)."""
    was = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if was is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = was
        time.tzset()


@given(
    zone=st.sampled_from(
        [
            *AWKWARD_ZONES,
            "UTC",
            "+05:45",
            "-09:30",
            "local:Australia/Lord_Howe",
            "local:Asia/Kathmandu",
        ]
    ),
    stamps=st.lists(timestamps(), max_size=40),
    near=st.lists(st.integers(-90, 90), max_size=20),
)
@settings(max_examples=300, deadline=None)
def test_local_days_are_the_local_dates(
    zone: str, stamps: list[str | None], near: list[int]
) -> None:
    """Many timestamps' local dates, worked out once an hour where the hour allows it,
    are each one's own, in any zone; ``near``: minutes around the zone's midnights and
    changes of offset in 2026."""
    tz: tzinfo | None
    if zone.startswith("local:"):  # the process's own zone (what --timezone left out reads)
        with local_zone(zone.removeprefix("local:")):
            days = LocalDays(None)
            for stamp in [*stamps, *stamps]:
                assert days.of(stamp) == local_date(stamp, None), stamp
        return
    if zone.startswith(("+", "-")):
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    else:
        tz = ZoneInfo(zone)
    if tz is not None:
        base = datetime(2026, 3, 29, 0, 0, tzinfo=tz)  # (spring changes about then)
        stamps = [*stamps, *((base + timedelta(minutes=m)).isoformat() for m in near)]
    days = LocalDays(tz)
    for stamp in stamps:
        assert days.of(stamp) == local_date(stamp, tz), stamp
    for stamp in stamps:  # (again: from what was worked out)
        assert days.of(stamp) == local_date(stamp, tz), stamp
