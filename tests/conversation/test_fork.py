"""`fork`: a new session continuing the conversation; the original stays as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.model.context import NO_RESPONSE
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
    # up to the 1st prompt, with what hangs on it (its attachments: resumed there, they go too)
    assert child.active_path == parent.tree.branch_path(first)
    assert child.active_path[: len(parent.tree.path_to(first))] == parent.tree.path_to(first)
    doc = fork(root, REWIND[:8], "--at", "2")  # the active path's 2nd: p4, not p2
    assert Transcript.open(Path(str(doc["path"]))).active_path[-1] == last
    result = CliRunner().invoke(cli, ["--root", str(root), "fork", REWIND, "--at", "cd7"])
    assert result.exit_code == 1 and "4+ characters" in result.stderr


# -- parallel tool calls: the fork keeps what `context` sends -----------------------------

PAR = Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.328-par"


def answered_by_their_own_results(messages: list[dict[str, Any]]) -> set[str]:
    """The ids of the calls ``messages`` make; asserts each has a real result (not one the
    client makes up for a call it finds unanswered)."""
    calls, answers = set(), set()
    for message in messages:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                calls.add(block["id"])
            elif block.get("type") == "tool_result" and not block.get("is_error"):
                answers.add(block["tool_use_id"])
    assert calls <= answers, f"calls without their own result: {sorted(calls - answers)}"
    return calls


def turn_ends(transcript: Transcript) -> list[str]:
    """The responses of the active path that end a turn (a turn end hangs on them)."""
    path = transcript.active_path
    return [
        transcript.tree.parent[u]  # type: ignore[misc]
        for u in path
        if transcript.tree.skeleton(u).subtype == "turn_duration"
        and transcript.tree.parent.get(u) in path
    ]


@pytest.mark.parametrize("scenario", ["17-par-plain", "18-par-edits-rewind"])
def test_a_fork_at_a_turn_end_sends_what_the_parent_sends_up_to_there(
    tmp_path: Path, scenario: str
) -> None:
    """Forked at the end of any turn, the fork resumes with the parent's context up to
    there: every parallel call with its own result (the parent's context is the real
    client's: tests/model/test_context_golden.py)."""
    root, _ = lay_out(PAR / scenario, tmp_path)
    original = next((root / "projects").glob("*/*.jsonl"))
    parent = Transcript.open(original)
    sent = parent.context()
    ends = turn_ends(parent)
    assert len(ends) >= 3
    for end in ends:
        child = Transcript.open(Path(str(fork(root, original.stem, "--at", end)["path"])))
        forked = child.context()
        assert forked == sent[: len(forked)], end
        assert (forked[-1]["role"] == "assistant" and len(forked) < len(sent)) or end == ends[-1]
        answered_by_their_own_results(forked)
    assert forked == sent  # (the last turn end: the whole conversation)


def test_a_fork_at_one_of_several_calls_keeps_them_all(tmp_path: Path) -> None:
    """At a record of a response with several calls: all its calls and their results, as
    resuming at that record sends them."""
    root, _ = lay_out(PAR / "17-par-plain", tmp_path)
    original = next((root / "projects").glob("*/*.jsonl"))
    parent = Transcript.open(original)
    first_call = next(
        r.uuid
        for r in parent.active_records()
        if r.type == "assistant" and '"tool_use"' in json.dumps(r.get("message"))
    )
    child = Transcript.open(Path(str(fork(root, original.stem, "--at", str(first_call))["path"])))
    forked = child.context()
    calls = answered_by_their_own_results(forked)
    assert len(calls) == 3  # the first response's three calls
    # it ends with their results: resuming adds the client's placeholder reply
    assert forked[-1] == {"role": "assistant", "content": [{"type": "text", "text": NO_RESPONSE}]}
    assert forked[:-1] == parent.context()[: len(forked) - 1]


def test_a_fork_at_a_record_a_compaction_summarized_keeps_its_parallel_calls(
    tmp_path: Path,
) -> None:
    """Before the compaction the conversation sent p1's and p2's calls with their results;
    a fork at p2's answer (summarized away in the parent) sends them all again."""
    root, _ = lay_out(PAR / "19-par-compact", tmp_path)
    original = next((root / "projects").glob("*/*.jsonl"))
    parent = Transcript.open(original)
    boundary = next(
        u for u in parent.tree.nodes if parent.tree.skeleton(u).subtype == "compact_boundary"
    )
    summarized = [u for u in parent.tree.compacted if parent.tree.skeleton(u).type == "assistant"]
    last = max(summarized, key=lambda u: parent.tree.nodes[u].number)
    assert parent.tree.nodes[last].number < parent.tree.nodes[boundary].number
    child = Transcript.open(Path(str(fork(root, original.stem, "--at", last)["path"])))
    forked = child.context()
    calls = answered_by_their_own_results(forked)
    made = {
        b["id"]
        for r in parent.records(summarized)
        for b in r.get("message")["content"]
        if b.get("type") == "tool_use"
    }
    assert len(made) == 5 and calls == made  # p1's three, p2's two
