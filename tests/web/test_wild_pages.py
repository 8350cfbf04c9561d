"""Other people's sessions (``../shared/fixtures/wild``, read in place, never copied)
through every page of the viewer: each answers, and each is inert (what those sessions
hold reaches the page only as text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontree.catalog.index import list_sessions
from sessiontree.storage.layout import Layout
from tests.conftest import WILD, needs_wild
from tests.web.conftest import make_client
from tests.web.test_security import assert_inert


def _roots() -> list[Path]:
    return sorted(p for p in WILD.glob("*/claude-home") if (p / "projects").is_dir())


@needs_wild
@pytest.mark.parametrize("root", _roots(), ids=lambda p: p.parent.name)
def test_every_page_of_every_wild_session_answers_and_is_inert(root: Path) -> None:
    rows = list_sessions(Layout(root))
    assert rows, root
    with make_client(root) as client:
        listing = client.get("/")
        assert listing.status_code == 200
        assert_inert(listing.text)
        for row in rows:
            for url in (
                f"/s/{row.sessionId}",
                f"/s/{row.sessionId}/tree",
                f"/s/{row.sessionId}/checkpoints",
            ):
                got = client.get(url)
                assert got.status_code == 200, (url, got.text[-400:])
                assert_inert(got.text)
        assert client.get("/usage?by=model").status_code == 200
