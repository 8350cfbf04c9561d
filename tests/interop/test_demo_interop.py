"""The demo store (the README's first command) is real data: the real client resumes each
of its sessions with the context sessiontree computes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.demo import write_demo
from sessiontree.storage.layout import Layout
from tests.interop.realclient import normalize, resume

pytestmark = pytest.mark.interop


def test_the_client_resumes_every_demo_session_as_sessiontree_does(
    claude: Path, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    write_demo(Layout(root), now=datetime.now(UTC), projects_dir=tmp_path / "projects")
    checked = 0
    for path in sorted((root / "projects").glob("*/*.jsonl")):
        transcript = Transcript.open(path)
        if not transcript.active_path:
            continue
        cwd = Path(transcript.cwd or tmp_path)
        theirs = resume(claude, root, transcript.session_id, cwd)
        assert normalize(transcript.context()) == normalize(theirs), path.name
        checked += 1
    assert checked >= 6
