"""A session the Toolbox wrote, resumed by the real client: it sends what sessiontree
computes (every tool's result, the spilled output's reference, the memory text)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontree.agent.memory import load_memory
from tests.agent.live import start
from tests.interop.realclient import ClientUnavailable, install_client, normalize, resume

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def claude() -> Path:
    try:
        return install_client()
    except ClientUnavailable as exc:
        pytest.skip(f"REAL CLIENT UNAVAILABLE: {exc}")


def test_the_client_resumes_what_the_toolbox_wrote(
    claude: Path, tmp_path: Path, project: Path
) -> None:
    (project / "CLAUDE.md").write_text("Always answer in haiku.\n")
    (project / "notes.md").write_text("original line\nsecond\n")
    live = start(tmp_path, project)
    memory = load_memory(cwd=project, home=tmp_path / "home", config_dir=live.layout.root)
    live.prompt("p1: look around")
    live.session.append_attachment(
        memory.attachment(), rendered=[memory.reminder() or ""], rendered_role="user"
    )
    live.call("Read", {"file_path": str(project / "notes.md")})
    live.call("Glob", {"pattern": "*.md"})
    live.call("Grep", {"pattern": "second", "output_mode": "content"})
    live.call("Write", {"file_path": str(project / "a.txt"), "content": "alpha\n"})
    live.call(
        "Edit",
        {"file_path": str(project / "notes.md"), "old_string": "original", "new_string": "edited"},
    )
    live.call(
        "Edit", {"file_path": str(project / "notes.md"), "old_string": "zzz", "new_string": "y"}
    )
    live.session.append_response([{"type": "text", "text": "Looked."}])
    live.session.end_turn()
    live.prompt("p2: run things")
    live.call("Bash", {"command": "seq 1 9000"})
    live.call("Bash", {"command": "cd / && echo moved"})
    live.call("Bash", {"command": "echo bad; exit 4"})
    live.session.append_response([{"type": "text", "text": "Ran."}])
    live.session.end_turn()

    ours = live.session.transcript().context()
    theirs = resume(claude, live.layout.root, live.session.session_id, project)
    assert normalize(ours) == normalize(theirs)
    sent = json.dumps(theirs)
    assert "Always answer in haiku." in sent
    assert "<persisted-output>" in sent and "Exit code 4" in sent
    assert "String to replace not found in file." in sent
