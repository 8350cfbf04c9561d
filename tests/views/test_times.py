"""Moments: local time with its zone in text, ISO 8601 with an offset in JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.views.times import iso_time, local_time, parse_moment
from tests.conftest import FIXTURES


@pytest.fixture
def kolkata(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30, no summer time
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_text_is_local_with_the_zone_and_json_is_utc_iso(kolkata: None) -> None:
    assert local_time("2026-11-29T19:16:27.351Z") == "2026-11-30 00:46 IST"
    assert local_time(1795979787351, seconds=True) == "2026-11-30 00:46:27 IST"
    assert iso_time(1795979787351) == "2026-11-29T19:16:27.351Z"
    assert iso_time("2026-11-30T00:46:27.351+05:30") == "2026-11-29T19:16:27.351Z"


def test_no_moment_or_a_damaged_one_shows_nothing() -> None:
    for bad in (None, "", "yesterday", True, 10**30):
        assert parse_moment(bad) is None
        assert local_time(bad) == ""
        assert iso_time(bad) is None


def test_commands_show_local_times_and_history_json_gains_an_iso_time(kolkata: None) -> None:
    root = FIXTURES / "01-basic" / "claude-home"
    run = CliRunner().invoke
    history = run(cli, ["--root", str(root), "history"]).output
    assert "2026-11-30 00:46 IST" in history
    rows = json.loads(run(cli, ["--root", str(root), "history", "--json"]).output)
    assert rows[0]["timestamp"] == 1795979787351  # kept as it was
    assert rows[0]["time"] == "2026-11-29T19:16:27.351Z"
    listing = run(cli, ["--root", str(root), "sessions", "--all"], terminal_width=200).output
    assert " IST " in listing
    prompts = run(cli, ["--root", str(root), "prompts", "0f31836f"], terminal_width=200).output
    assert "00:46:27 IST" in prompts
