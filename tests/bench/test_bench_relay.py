"""The relay bench passes every byte both ways (it asserts it) and says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_relay_bench_runs_both_ways() -> None:
    # In a process of its own, as it is run: it forks, which a process with threads may
    # not (one an earlier test left winding down was enough to make it refuse).
    done = subprocess.run(
        [sys.executable, "-m", "bench.relay", "2", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "pieces  2 MB" in done.stdout and "send    2 MB" in done.stdout
