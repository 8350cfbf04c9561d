"""CI (``.ci/run``) runs the README's ``make test``; a run there that collects no test
(a selection that matches nothing, a tests folder gone) fails, never exits 5 (pytest's
"no tests ran", which a CI may take for a pass)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_pytest(*args: str, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIONTREE_CI", "PYTEST_ADDOPTS")}
    if ci:
        env["SESSIONTREE_CI"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_ci_runs_the_tests_with_its_flag_set() -> None:
    run = (REPO / ".ci" / "run").read_text()
    assert "export SESSIONTREE_CI=1" in run
    assert "unset PYTEST_ADDOPTS" in run  # (the environment's options select nothing away)
    assert run.rstrip().endswith("make test")


def test_no_test_collected_fails_in_ci_and_says_so() -> None:
    empty = ("tests/test_install_pins.py", "-k", "no_such_test_anywhere")
    assert run_pytest(*empty, ci=False).returncode == 5  # (pytest's own, elsewhere)
    ci = run_pytest(*empty, ci=True)
    assert ci.returncode == 1, ci.stdout + ci.stderr
    assert "no test was collected: CI fails" in ci.stdout + ci.stderr
    assert run_pytest("tests/test_install_pins.py", ci=True).returncode == 0
