"""The memory the client loads at start, loaded the same by ``load_memory``: the text it
sends and the record it keeps, against what the real client did on the same files
(tests/agent/memory_cases.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sessiontree.agent.memory import Memory, clean_memory_text, find_imports, load_memory
from sessiontree.model.builders import text_block
from sessiontree.session import Session
from sessiontree.storage.layout import Layout, encode_cwd
from tests.agent.memory_cases import GOLDEN, R, make_tree

REAL = json.loads(GOLDEN.read_text())


def _fill(text: str, root: Path, project: Path) -> str:
    text = re.sub(r"projects/[^/]+/memory", f"projects/{encode_cwd(str(project))}/memory", text)
    return text.replace(R, str(root))


def _load(tmp_path: Path) -> tuple[Memory, Path, Path]:
    root = tmp_path / "tree"
    home, project = make_tree(root)
    return load_memory(cwd=project, home=home, config_dir=home / ".claude"), root, project


def test_the_reminder_is_the_text_the_client_sends(tmp_path: Path) -> None:
    memory, root, project = _load(tmp_path)
    assert memory.reminder() == _fill(REAL["reminder"], root, project)


def test_the_attachment_is_the_record_the_client_keeps(tmp_path: Path) -> None:
    memory, root, project = _load(tmp_path)
    assert memory.attachment() == json.loads(_fill(json.dumps(REAL["attachment"]), root, project))
    assert REAL["renderedRole"] == "user"
    assert [{"content": memory.reminder()}] == json.loads(
        _fill(json.dumps(REAL["rendered"]), root, project)
    )


def test_what_is_left_out(tmp_path: Path) -> None:
    memory, root, _project = _load(tmp_path)
    read = {f.path.relative_to(root).as_posix() for f in memory.files}
    assert "home/.claude/a5.md" not in read  # four levels of imports, no more
    assert "proj/notes/inline.md" not in read and "proj/notes/incode.md" not in read  # code
    assert "home/home-note.md" not in read  # a project's import outside it: not approved
    assert "proj/notes/comma.md" not in read  # "@notes/comma.md," names a file with a comma
    assert "proj/notes/deeper.md" in read  # imported by an import
    assert "proj/sub/CLAUDE.md" not in read  # below the working directory: not at start
    assert sum(f.path.name == "c1.md" for f in memory.files) == 1  # a cycle ends
    assert not any(f.path.name == "note.md" for f in memory.files)  # only the index


def test_approved_external_imports_are_read(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    home, project = make_tree(root)
    memory = load_memory(
        cwd=project, home=home, config_dir=home / ".claude", allow_external_imports=True
    )
    assert any(f.path == home / "home-note.md" for f in memory.files)


def test_no_memory_no_reminder(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    memory = load_memory(cwd=tmp_path / "p", home=tmp_path, config_dir=tmp_path / ".claude")
    assert memory.files == [] and memory.reminder() is None
    assert (
        memory.index
        == tmp_path / ".claude" / "projects" / encode_cwd(str(tmp_path / "p")) / "memory"
    )


def test_the_text_rules() -> None:
    assert clean_memory_text("\n<!-- a\nb -->\n  x <!-- y --> z\n\n") == "x <!-- y --> z"
    assert find_imports("@a.md and `@b.md`\n```\n@c.md\n```\nx@d.md @e\\ f.md") == [
        "a.md",
        "e f.md",
    ]


def test_recorded_in_a_session_it_is_what_resume_sends(tmp_path: Path) -> None:
    """Appended as the client records it, the memory is in the context sessiontree
    computes for a resume, as the user text the client sent."""
    memory, _root, project = _load(tmp_path)
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, project)
    session.append_prompt("hi")
    session.append_attachment(
        memory.attachment(), rendered=[memory.reminder() or ""], rendered_role="user"
    )
    session.append_response([text_block("ok")])
    session.end_turn()
    sent = json.dumps(session.transcript().context())
    assert json.dumps(memory.reminder())[1:-1] in sent
