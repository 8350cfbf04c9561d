"""Config roots the CLI tests share: copies of the 2.1.328 fixtures, writable."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def basic(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    root: Path = fixture_root("01-basic")
    return root


@pytest.fixture
def rewind(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    root: Path = fixture_root("02-rewind-both")
    return root
