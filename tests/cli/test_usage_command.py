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
