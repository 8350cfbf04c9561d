"""Interop tests run the real client; they skip only when it cannot be installed, loudly."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.interop.realclient import ClientUnavailable, install_client


@pytest.fixture(scope="session")
def claude() -> Path:
    try:
        return install_client()
    except ClientUnavailable as exc:
        message = f"REAL CLIENT UNAVAILABLE, interop tests skipped: {exc}"
        warnings.warn(message, stacklevel=1)
        print(f"\n\n{'!' * 70}\n{message}\n{'!' * 70}\n")
        pytest.skip(message)
