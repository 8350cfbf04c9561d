"""``sessiontree usage``: each ``--by``, ``--since``/``--until``, ``--json`` rows with
docs/CLI.md's keys, ``--prices`` and ``$SESSIONTREE_PRICES``, the table and its total, on
the store ``tests/catalog/test_usage.py`` builds (its totals worked out there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.storage.layout import Layout
from tests.catalog.test_usage import (
    FUTURE,
    HAIKU,
    HAIKU_COST,
    ORIGINAL,
    PROJECT_A,
    PROJECT_B,
    RESUMED,
    SONNET,
    SONNET_COST,
    store,
)

__all__ = ["store"]  # the fixture, used by name


def run(layout: Layout, *args: str, code: int = 0, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(
        cli, ["--root", str(layout.root), "usage", *args], env=env, catch_exceptions=False
    )
    assert result.exit_code == code, result.output
    return result.output


def test_json_rows_keep_the_contract_keys(store: Layout) -> None:
    rows = json.loads(run(store, "--project", PROJECT_A, "--by", "model", "--json"))
    assert [row["key"] for row in rows] == [FUTURE, HAIKU, SONNET]
    for row in rows:
        # docs/CLI.md's keys first, then the ones added.
        assert list(row) == [
            "key",
            "inputTokens",
            "outputTokens",
            "cacheReadTokens",
            "cacheCreationTokens",
            "costUSD",
            "knownCostUSD",
            "responses",
            "unpricedModels",
        ]
    future, haiku, sonnet = rows
    assert future["costUSD"] is None and future["unpricedModels"] == [FUTURE]
    assert haiku["costUSD"] == pytest.approx(HAIKU_COST)
    assert sonnet == {
        "key": SONNET,
        "inputTokens": 39,
        "outputTokens": 92,
        "cacheReadTokens": 1000,
        "cacheCreationTokens": 300,
        "costUSD": pytest.approx(SONNET_COST),
        "knownCostUSD": pytest.approx(SONNET_COST),
        "responses": 5,
        "unpricedModels": [],
    }


def test_each_by_and_since_on_the_command(store: Layout) -> None:
    days = json.loads(run(store, "--project", PROJECT_A, "--json"))  # --by day by default
    assert [(r["key"], r["responses"]) for r in days] == [("2026-03-01", 5), ("2026-03-02", 2)]
    sessions = json.loads(run(store, "--project", PROJECT_A, "--by", "session", "--json"))
    assert [(r["key"], r["responses"]) for r in sessions] == [(ORIGINAL, 6), (RESUMED, 1)]
    projects = json.loads(run(store, "--all", "--by", "project", "--json"))
    assert [r["key"] for r in projects] == [PROJECT_A, PROJECT_B]
    later = json.loads(run(store, "--all", "--since", "2026-03-02", "--by", "model", "--json"))
    assert [(r["key"], r["responses"]) for r in later] == [(FUTURE, 1), (SONNET, 1)]
    assert json.loads(run(store, "--all", "--until", "2020-01-01", "--json")) == []
    run(store, "--since", "soon", code=2)
    run(store, "--all", "--project", PROJECT_A, code=2)


def test_prices_from_a_file_or_the_environment(store: Layout, tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "models": {
                    FUTURE: {"input": 1_000_000, "output": 0, "cacheWrite": 0, "cacheRead": 0},
                    "claude-sonnet-4-5": {"input": 0, "output": 0, "cacheWrite": 0, "cacheRead": 0},
                    "claude-haiku-4-5": {"input": 0, "output": 0, "cacheWrite": 0, "cacheRead": 0},
                }
            }
        )
    )
    for args, env in (
        (["--prices", str(prices)], None),
        ([], {"SESSIONTREE_PRICES": str(prices)}),
    ):
        rows = json.loads(
            run(store, "--project", PROJECT_A, "--by", "model", "--json", *args, env=env)
        )
        assert {r["key"]: r["costUSD"] for r in rows} == {FUTURE: 2.0, HAIKU: 0.0, SONNET: 0.0}
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert "broken.json" in run(store, "--prices", str(broken), code=1)


def test_the_table_has_a_total_and_says_what_has_no_price(store: Layout) -> None:
    out = run(store, "--project", PROJECT_A, "--by", "model")
    lines = out.splitlines()
    assert lines[0].split() == [
        "model",
        "input",
        "output",
        "cache",
        "write",
        "cache",
        "read",
        "cost",
    ]
    total = next(line for line in lines if line.startswith("total"))
    assert total.split()[1:5] == ["81", "154", "300", "1,000"]
    assert "≥ $0.0037" in total  # sonnet and haiku priced, claude-future-9 not
    assert f"no price for {FUTURE}" in out
    assert "7 API response(s)" in out
    nothing = run(store, "--project", "/nowhere")
    assert "no API usage" in nothing
    assert f"try: sessiontree --root {store.root} usage --all --by day" in nothing


def test_an_unpriced_model_is_named_with_how_to_price_it(store: Layout, tmp_path: Path) -> None:
    """The note names the model, says ``--prices FILE`` and shows the file's shape with
    that model in it; that shape, its N filled in, prices it and keeps the shipped prices
    of the others (the file is laid over the shipped table)."""
    out = run(store, "--project", PROJECT_A, "--by", "model")
    assert f"no price for {FUTURE}" in out
    assert "--prices FILE" in out and "$SESSIONTREE_PRICES" in out
    shape = next(line.strip() for line in out.splitlines() if line.strip().startswith('{"models"'))
    assert json.loads(shape.replace("N", "1"))["models"] == {
        FUTURE: {"input": 1, "output": 1, "cacheWrite": 1, "cacheRead": 1}
    }
    prices = tmp_path / "mine.json"
    prices.write_text(shape.replace("N", "1"))
    rows = json.loads(
        run(store, "--project", PROJECT_A, "--by", "model", "--json", "--prices", str(prices))
    )
    costs = {r["key"]: r["costUSD"] for r in rows}
    assert costs[HAIKU] == pytest.approx(HAIKU_COST) and costs[SONNET] == pytest.approx(SONNET_COST)
    assert costs[FUTURE] is not None and costs[FUTURE] > 0
    priced = run(store, "--project", PROJECT_A, "--by", "model", "--prices", str(prices))
    assert "no price for" not in priced and f"prices from {prices}" in priced
    # A model still unpriced with a file given: add it to that file.
    empty = tmp_path / "empty.json"
    empty.write_text('{"models": {}}')
    still = run(store, "--project", PROJECT_A, "--by", "model", "--prices", str(empty))
    assert f"no price for {FUTURE}" in still and f"add it to {empty}" in still


BASE_KEYS = [
    "key",
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "cacheCreationTokens",
    "costUSD",
    "knownCostUSD",
    "responses",
    "unpricedModels",
]


def test_by_week_month_and_block_in_a_time_zone(store: Layout) -> None:
    """The store's responses are at noon UTC on Sunday 2026-03-01 (5) and Monday
    2026-03-02 (2); at UTC+14 they are on the Monday and the Tuesday."""
    scope = ("--project", PROJECT_A, "--json")

    def keys(*args: str) -> list[tuple[str, int]]:
        return [(r["key"], r["responses"]) for r in json.loads(run(store, *scope, *args))]

    assert keys("--by", "week", "--timezone", "UTC") == [("2026-02-23", 5), ("2026-03-02", 2)]
    assert keys("--by", "week", "--timezone", "UTC", "--start-of-week", "sunday") == [
        ("2026-03-01", 7)
    ]
    assert keys("--by", "month", "--timezone", "UTC") == [("2026-03", 7)]
    assert keys("--timezone", "Pacific/Kiritimati") == [("2026-03-02", 5), ("2026-03-03", 2)]
    assert keys("--by", "week", "--timezone", "Pacific/Kiritimati") == [("2026-03-02", 7)]
    # --since/--until are dates in that zone too.
    assert keys("--timezone", "Pacific/Kiritimati", "--since", "2026-03-03") == [("2026-03-03", 2)]
    weeks = json.loads(run(store, *scope, "--by", "week"))
    assert all(list(row) == BASE_KEYS for row in weeks)  # the same keys as every --by
    blocks = json.loads(run(store, *scope, "--by", "block", "--timezone", "Europe/Berlin"))
    assert [list(row) for row in blocks] == [[*BASE_KEYS, "start", "end", "active"]] * 2
    assert [(b["key"], b["start"], b["end"], b["active"], b["responses"]) for b in blocks] == [
        ("2026-03-01T13:00:00+01:00", "2026-03-01T13:00:00+01:00",
         "2026-03-01T18:00:00+01:00", False, 5),
        ("2026-03-02T13:00:00+01:00", "2026-03-02T13:00:00+01:00",
         "2026-03-02T18:00:00+01:00", False, 2),
    ]  # fmt: skip
    table = run(store, "--project", PROJECT_A, "--by", "block", "--timezone", "Europe/Berlin")
    assert "2026-03-01 13:00–18:00" in table and "(Europe/Berlin)" in table


def test_a_bad_time_zone_is_one_usage_error(store: Layout) -> None:
    result = CliRunner().invoke(
        cli, ["--root", str(store.root), "usage", "--timezone", "Mars/Olympus"]
    )
    assert result.exit_code == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert "--timezone" in line and "Mars/Olympus" in line and "IANA" in line


def test_breakdown_gives_each_row_its_models(store: Layout) -> None:
    args = ("--project", PROJECT_A, "--timezone", "UTC")
    rows = json.loads(run(store, *args, "--breakdown", "--json"))
    plain = json.loads(run(store, *args, "--json"))
    assert [{k: v for k, v in r.items() if k != "models"} for r in rows] == plain
    first, second = rows
    assert list(first) == [*BASE_KEYS, "models"]
    assert [m["model"] for m in first["models"]] == [SONNET, HAIKU]  # the dearest first
    assert [m["model"] for m in second["models"]] == [SONNET, FUTURE]  # no price last
    assert sum(m["responses"] for m in first["models"]) == first["responses"]
    assert sum(m["costUSD"] for m in first["models"]) == pytest.approx(first["costUSD"])
    assert first["models"][1] == {
        "model": HAIKU,
        "inputTokens": 40,
        "outputTokens": 60,
        "cacheReadTokens": 0,
        "cacheCreationTokens": 0,
        "costUSD": pytest.approx(HAIKU_COST),
        "responses": 1,
    }
    text = run(store, *args, "--breakdown").splitlines()
    day = next(i for i, line in enumerate(text) if line.startswith("2026-03-01"))
    assert text[day + 1].split()[:2] == ["└", SONNET]
    assert text[day + 2].split()[:3] == ["└", HAIKU, "40"]
    assert text[day + 3].startswith("2026-03-02")


def test_the_active_block_is_said(tmp_path: Path) -> None:
    """A response an hour ago: its block is active, and the table says until when."""
    from datetime import UTC, datetime, timedelta

    from tests.catalog.test_usage import assistant, usage, user, write_transcript

    layout = Layout(tmp_path / "claude")
    now = datetime.now(UTC)
    stamps = [(now - timedelta(hours=h)).isoformat().replace("+00:00", "Z") for h in (30, 1)]
    records = [
        user("u1", None, "p", stamps[0]),
        assistant("a1", "u1", msg_id="m1", model=SONNET, use=usage(1, 1), ts=stamps[0]),
        user("u2", "a1", "p", stamps[1]),
        assistant("a2", "u2", msg_id="m2", model=SONNET, use=usage(2, 2), ts=stamps[1]),
    ]
    write_transcript(layout.transcript_path(PROJECT_A, ORIGINAL), records, ORIGINAL, PROJECT_A)
    blocks = json.loads(run(layout, "--all", "--by", "block", "--json"))
    assert [(b["active"], b["responses"]) for b in blocks] == [(False, 1), (True, 1)]
    end = datetime.fromisoformat(blocks[1]["end"])
    assert timedelta(0) < end - now <= timedelta(hours=4)
    table = run(layout, "--all", "--by", "block")
    assert "* active" in table and f"until {end.astimezone().strftime('%H:%M')}" in table
