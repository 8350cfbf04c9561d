"""`rewind`: the conversation continues from just before a prompt; code goes back too."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from tests.checkpoints.test_restore import tree_of
from tests.conftest import lay_out

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"


def invoke(root: Path, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["--root", str(root), "rewind", *args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def prompts_in(transcript: Transcript) -> list[str]:
    return [r.text()[:2] for r in transcript.active_records() if r.is_prompt]


def test_conversation_rewind_appends_one_line_and_moves_the_leaf(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    before = path.read_bytes()
    files = tree_of(project)
    doc = invoke(root, BASIC[:8], "--to", "8d6b6ac3")  # p3
    after = path.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    line = json.loads(after.splitlines()[-1])
    assert line["type"] == "last-prompt" and line["explicit"] is True
    assert line["leafUuid"].startswith("586deaa7")  # p2's turn end, p3's parent
    assert line["lastPrompt"].startswith("p2")
    transcript = Transcript.open(path)
    assert prompts_in(transcript) == ["p1", "p2"]
    assert doc["leafUuid"] == transcript.leaf
    assert doc["code"] is None
    assert tree_of(project) == files  # the conversation only: files untouched


def test_rewind_to_the_first_prompt_resumes_empty(tmp_path: Path) -> None:
    root, _ = lay_out("01-basic", tmp_path)
    invoke(root, BASIC[:8], "--to", "-3")
    transcript = Transcript.open(next((root / "projects").glob("*/*.jsonl")))
    assert transcript.leaf is None and transcript.context() == []


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    root, _ = lay_out("01-basic", tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    before = path.read_bytes()
    doc = invoke(root, BASIC[:8], "--to", "8d6b6ac3", "--both", "--dry-run")
    assert path.read_bytes() == before
    record = doc["record"]
    assert isinstance(record, dict) and record["explicit"] is True
    assert isinstance(doc["code"], dict)


def test_both_restores_code_and_conversation(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    doc = invoke(root, BASIC[:8], "--to", "5fcb784a", "--both", "--yes")  # p2
    assert (project / "notes.md").read_text() == "# Notes\noriginal line\n"
    assert (project / "a.txt").read_text() == "alpha\n"
    assert (project / "b.txt").exists()  # made by Bash: untracked, left alone
    code = doc["code"]
    assert isinstance(code, dict) and code["restored"]
    transcript = Transcript.open(next((root / "projects").glob("*/*.jsonl")))
    assert prompts_in(transcript) == ["p1"]


def test_a_later_prompt_continues_the_rewound_branch(tmp_path: Path) -> None:
    """After the rewind, the client hangs its next prompt on the last record it loaded
    (the turn end below the leaf): that prompt is then the new conversation."""
    root, _ = lay_out("02-rewind-both", tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    invoke(root, "b06189e0", "--to", "92d1c3f4")  # p4, on the newest branch
    transcript = Transcript.open(path)
    last = transcript.active_path[-1]
    assert last.startswith("cd7d3add")  # p1's turn end, below the leaf reply
    assert prompts_in(transcript) == ["p1"]
    record = dict(transcript.records(transcript.prompt_uuids()[:1])[0].raw)
    record.update(
        {
            "uuid": "99999999-2222-4333-8444-555555555555",
            "parentUuid": last,
            "timestamp": "2099-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "p5 after a sessiontree rewind"},
        }
    )
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
    assert prompts_in(Transcript.open(path)) == ["p1", "p5"]
