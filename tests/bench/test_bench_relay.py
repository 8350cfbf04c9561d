"""The relay bench passes every byte both ways (it asserts it) and says so."""

from __future__ import annotations

import pytest
from bench.relay import main


def test_the_relay_bench_runs_both_ways(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["2", "1"]) == 0
    out = capsys.readouterr().out
    assert "pieces  2 MB" in out and "send    2 MB" in out
