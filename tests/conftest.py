"""Shared test setup: every test runs with HOME and CLAUDE_CONFIG_DIR in a temp folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code-2.1.328"

#: The fixtures beside the checkout (``../shared/fixtures``): CI has them, a fresh clone
#: does not, and a test that needs them skips with one line saying so.
SHARED_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
needs_shared = pytest.mark.skipif(
    not SHARED_FIXTURES.is_dir(), reason="../shared/fixtures is not here"
)
#: Sessions other people's clients wrote, used in place (their licences forbid copying
#: them into this repository); absent where ``../shared`` is not beside the checkout.
WILD = SHARED_FIXTURES / "wild"
needs_wild = pytest.mark.skipif(not WILD.is_dir(), reason="../shared/fixtures/wild is not here")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI (``SESSIONTREE_CI``, set by ``.ci/run``), a run that collected no test fails
    (exit 1, saying so) instead of pytest's exit 5, which a CI may take for a pass."""
    if os.environ.get("SESSIONTREE_CI") and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        print("\nsessiontree: no test was collected: CI fails (SESSIONTREE_CI is set)")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def all_scenarios() -> list[Path]:
    """Every scenario the real clients wrote for these tests: 2.1.328's own sets
    (``claude-code-2.1.328``, ``-extra``, ``-par``) and older clients'
    (``claude-code-<version>``, resumed by 2.1.328 for their truths)."""
    return sorted(
        scenario
        for folder in (Path(__file__).parent / "fixtures").glob("claude-code-*")
        for scenario in folder.iterdir()
        if (scenario / "claude-home").is_dir()
    )


def scenario_id(scenario: Path) -> str:
    return f"{scenario.parent.name.removeprefix('claude-code-')}/{scenario.name}"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("NO_COLOR", "1")
    return home


def count_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children ``os.fork`` makes from now on in this test (the parallel
    readers: a scan split in two, usage read on two cores)."""
    made: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            made.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return made


def copy_writable(source: Path, target: Path) -> Path:
    """Copy a fixture tree and make it writable (the shared fixtures are read-only, and
    copytree keeps modes: as a non-root user the copy could not be changed)."""
    shutil.copytree(source, target, symlinks=True)
    for folder, _dirs, files in os.walk(target):
        Path(folder).chmod(0o755)
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o600)
    return target


def lay_out(scenario: str | Path, tmp_path: Path) -> tuple[Path, Path]:
    """A private, writable copy of a scenario (a name in the 2.1.328 set, or a scenario
    folder): (config root, project folder), with the project moved under tmp_path and
    the transcripts rewritten to point at it."""
    folder = scenario if isinstance(scenario, Path) else FIXTURES / scenario
    original = json.loads((folder / "scenario.json").read_text())["project"]
    project = copy_writable(folder / "workdir-after", tmp_path / "work" / folder.name)
    root = copy_writable(folder / "claude-home", tmp_path / "root")
    for transcript in (root / "projects").rglob("*.jsonl"):
        transcript.write_text(transcript.read_text().replace(original, str(project)))
    return root, project


def scenario_names() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "claude-home").is_dir())


@pytest.fixture
def fixture_root(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Copy a scenario's config root into tmp (tests may write) and return its path."""

    def copy(scenario: str) -> Path:
        return copy_writable(FIXTURES / scenario / "claude-home", tmp_path / f"root-{scenario}")

    return copy
