"""`fork`: a new session continuing the conversation; the original stays as it was."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from tests.conftest import lay_out

REWIND = "b06189e0-a90e-451c-aa38-609447827575"


def fork(root: Path, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["--root", str(root), "fork", *args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def test_fork_copies_the_active_path_with_the_same_uuids(tmp_path: Path) -> None:
    root, _ = lay_out("02-rewind-both", tmp_path)
    original = next((root / "projects").glob("*/*.jsonl"))
    before = original.read_bytes()
    doc = fork(root, REWIND[:8])
    assert original.read_bytes() == before  # the original is untouched
    new = Path(str(doc["path"]))
    assert doc["forkedFrom"] == REWIND and doc["sessionId"] == new.stem
    assert str(doc["title"]).startswith("p1 create a")
    assert str(doc["title"]).endswith("(Branch)")
    parent, child = Transcript.open(original), Transcript.open(new)
    assert child.problems == []
    assert child.active_path == parent.active_path  # same uuids, same conversation
    assert child.context() == parent.context()
    for record in child.active_records():
        assert record.get("sessionId") == new.stem
        assert record.get("forkedFrom") == {"sessionId": REWIND, "messageUuid": record.uuid}
    assert "68cc9d25" not in new.read_text()  # the rewound branch is not copied


def test_fork_at_a_record_and_dry_run(tmp_path: Path) -> None:
    root, _ = lay_out("02-rewind-both", tmp_path)
    doc = fork(root, REWIND[:8], "--at", "cd7d3add", "--title", "Just p1")
    child = Transcript.open(Path(str(doc["path"])))
    assert [r.text()[:2] for r in child.active_records() if r.is_prompt] == ["p1"]
    assert doc["title"] == "Just p1"
    dry = fork(root, REWIND[:8], "--dry-run")
    assert not Path(str(dry["path"])).exists()


def test_fork_at_a_prompt_number(tmp_path: Path) -> None:
    root, _ = lay_out("02-rewind-both", tmp_path)
    parent = Transcript.open(next((root / "projects").glob("*/*.jsonl")))
    first, last = parent.resolve_prompt("1"), parent.resolve_prompt("-1")
    doc = fork(root, REWIND[:8], "--at", "1")
    child = Transcript.open(Path(str(doc["path"])))
    assert child.active_path == parent.tree.path_to(first)  # up to the 1st prompt
    doc = fork(root, REWIND[:8], "--at", "2")  # the active path's 2nd: p4, not p2
    assert Transcript.open(Path(str(doc["path"]))).active_path[-1] == last
    result = CliRunner().invoke(cli, ["--root", str(root), "fork", REWIND, "--at", "cd7"])
    assert result.exit_code == 1 and "4+ characters" in result.stderr
