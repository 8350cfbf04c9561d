"""The viewer's tests: a demo store (``sessiontree demo``'s) and the app over it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sessiontree.demo import DemoSummary, write_demo
from sessiontree.storage.layout import Layout
from sessiontree.web.app import create_app
from sessiontree.web.config import ViewerConfig

TOKEN = "test-token-0123456789"


@pytest.fixture
def demo(tmp_path: Path) -> DemoSummary:
    return write_demo(Layout(tmp_path / "root"), now=datetime.now(UTC))


def make_client(root: Path, **options: object) -> TestClient:
    config = ViewerConfig(root=root, token=TOKEN, poll_seconds=0.05, **options)  # type: ignore[arg-type]
    return TestClient(create_app(config), follow_redirects=False)


@pytest.fixture
def client(demo: DemoSummary) -> Iterator[TestClient]:
    with make_client(demo.root) as c:
        yield c
