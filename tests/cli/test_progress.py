"""The CLI's progress bar: drawn on a terminal; one that lets the work fork keeps the
process to one thread (a process with threads never forks: ``storage.forked``)."""

from __future__ import annotations

import io
import sys
import threading
from pathlib import Path

import pytest

from sessiontree.cli.main import build_env
from sessiontree.cli.output import progress
from sessiontree.storage.forked import may_fork


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("lets_fork", [False, True])
def test_a_bar_that_lets_the_work_fork_runs_no_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lets_fork: bool
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    env = build_env(tmp_path, {})
    before = threading.active_count()
    with progress(env, "reading usage", 40, lets_fork=lets_fork) as advance:
        for _ in range(40):
            advance()
        assert may_fork() is (lets_fork and before == 1)
    assert "reading usage" in terminal.getvalue()
