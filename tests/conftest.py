"""Shared test setup: every test runs with HOME and CLAUDE_CONFIG_DIR in a temp folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code-2.1.328"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("NO_COLOR", "1")
    return home


def scenario_names() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "claude-home").is_dir())


@pytest.fixture
def fixture_root(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Copy a scenario's config root into tmp (tests may write) and return its path."""

    def copy(scenario: str) -> Path:
        target = tmp_path / f"root-{scenario}"
        shutil.copytree(FIXTURES / scenario / "claude-home", target)
        return target

    return copy
