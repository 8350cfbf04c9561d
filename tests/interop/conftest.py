"""Interop tests run the real client; they skip only when it cannot be installed, loudly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.interop.realclient import ClientUnavailable, install_client


@pytest.fixture(scope="session")
def claude() -> Path:
    try:
        return install_client()
    except ClientUnavailable as exc:
        message = f"REAL CLIENT UNAVAILABLE, interop tests skipped: {exc}"
        # Straight to the terminal: captured output and warnings-as-errors must not hide
        # (or turn into an error) the one line that says the interop tests did not run.
        banner = f"\n{'!' * 70}\n{message}\n{'!' * 70}\n"
        try:
            with open("/dev/tty", "w") as tty:
                tty.write(banner)
        except OSError:
            os.write(2, banner.encode())
        pytest.skip(message)


# The store's server and a fresh database a test (pull's interop test syncs and pulls).
from tests.store.conftest import store_dsn, store_server  # noqa: E402, F401
