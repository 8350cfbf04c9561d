"""Switching branches: one explicit ``last-prompt`` naming a branch's newest leaf."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontree.conversation.rewind import (
    apply_rewind,
    apply_switch,
    newest_leaves,
    plan_rewind,
    plan_switch,
    switchable_leaves,
)
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from tests.conftest import FIXTURES

PAR = FIXTURES.parent / "claude-code-2.1.328-par"

# 02-rewind-both: p1, then p2 → p3 (rewound away), then p4 (the active branch).
P2 = "68cc9d25-76cb-4830-9aed-37d0a46978c6"
P3 = "aed0d84c-d06d-4978-af29-91fd7e9454b1"
P3_END = "960de76f-3382-45aa-a562-e2872eb76511"  # p3's turn end: the off-path leaf
P3_REPLY = "5140c1e6-358a-4298-b277-92fc2e7f14a3"
P4_END = "e22bcc9a-3a78-4c98-96e5-f9a656ba1e12"
P4_REPLY = "9905a8d3-a528-4b5d-bb36-7e4beb69967c"


@pytest.fixture
def rewound(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    root: Path = fixture_root("02-rewind-both")
    return next((root / "projects").glob("*/*.jsonl"))


def prompts_of(path: Path) -> list[str]:
    return [r.text()[:2] for r in Transcript.open(path).active_records() if r.is_prompt]


def test_switching_to_an_off_path_leaf_makes_the_client_resume_it(rewound: Path) -> None:
    transcript = Transcript.open(rewound)
    assert transcript.leaf == P4_REPLY
    plan = plan_switch(transcript, P3_END)
    assert (plan.branch_leaf, plan.leaf_uuid, plan.previous_leaf) == (P3_END, P3_REPLY, P4_REPLY)
    assert plan.record == {
        "type": "last-prompt",
        "lastPrompt": transcript.record(P3).text(),  # type: ignore[union-attr]
        "leafUuid": P3_END,  # the leaf itself, as the client names a turn's end
        "explicit": True,
        "sessionId": transcript.session_id,
    }
    before = rewound.read_bytes()
    apply_switch(rewound, plan)
    after = rewound.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    assert json.loads(after.splitlines()[-1]) == plan.record
    switched = Transcript.open(rewound)
    assert switched.leaf == P3_REPLY
    assert prompts_of(rewound) == ["p1", "p2", "p3"]
    assert switched.off_path_leaves() == [P4_END]


def test_a_prompt_or_any_record_stands_for_the_newest_leaf_below_it(rewound: Path) -> None:
    transcript = Transcript.open(rewound)
    for record in (P2, P3, P3_REPLY):
        assert plan_switch(transcript, record).branch_leaf == P3_END
    leaves = newest_leaves(transcript.tree)
    fork_point = transcript.tree.parent[P2]
    assert leaves[fork_point] == P4_END  # p4's branch is the newer of the two


def test_switching_back_undoes_a_switch_a_rewind_and_a_compaction(rewound: Path) -> None:
    from sessiontree.session.session import Session

    original = Transcript.open(rewound).context()
    apply_switch(rewound, plan_switch(Transcript.open(rewound), P3_END))
    apply_switch(rewound, plan_switch(Transcript.open(rewound), P4_END))
    assert Transcript.open(rewound).context() == original
    transcript = Transcript.open(rewound)
    apply_rewind(rewound, plan_rewind(transcript, transcript.resolve_prompt("-1")))
    assert prompts_of(rewound) == ["p1"]
    apply_switch(rewound, plan_switch(Transcript.open(rewound), P4_END))
    assert Transcript.open(rewound).context() == original
    Session.open(rewound).compact("SUMMARY")
    assert Transcript.open(rewound).leaf != P4_REPLY
    apply_switch(rewound, plan_switch(Transcript.open(rewound), P4_END))
    assert Transcript.open(rewound).context() == original


def test_the_active_branch_needs_no_line(rewound: Path) -> None:
    plan = plan_switch(Transcript.open(rewound), P4_END)
    assert plan.record is None and plan.leaf_uuid == P4_REPLY
    before = rewound.read_bytes()
    apply_switch(rewound, plan)
    assert rewound.read_bytes() == before


def test_what_a_compaction_summarized_away_is_refused(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("06-compact")
    transcript = Transcript.open(next((root / "projects").glob("*/*.jsonl")))
    (leaf,) = transcript.off_path_leaves()  # the client's /compact kept a segment
    with pytest.raises(Refused, match=r"summarized away by a compaction.*fork --at"):
        plan_switch(transcript, leaf)
    assert switchable_leaves(transcript) == []


def test_switchable_leaves_leave_out_parallel_results_their_branch_takes_along() -> None:
    path = next((PAR / "18-par-edits-rewind" / "claude-home" / "projects").glob("*/*.jsonl"))
    transcript = Transcript.open(path)
    off = transcript.off_path_leaves()
    assert len(off) == 3  # two results of p2's parallel calls, and p3's turn end
    (tip,) = switchable_leaves(transcript)
    assert tip == off[-1] and transcript.tree.skeleton(tip).subtype == "turn_duration"
    for leaf in off:  # each stands for its branch: the same conversation resumed
        assert newest_leaves(transcript.tree)[leaf] == leaf


def test_newest_leaves_end_on_a_parent_loop(tmp_path: Path) -> None:
    """A loop (and a record that is its own parent) is walked once, not forever."""
    sid = "1c9f0c3e-7a5b-4d2e-9f1a-2b3c4d5e6f70"

    def turn(uuid: str, parent: str | None, kind: str) -> dict[str, object]:
        role = "user" if kind == "user" else "assistant"
        return {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": sid,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": role, "content": [{"type": "text", "text": uuid[:4]}]},
        }

    a, b, c, d = (f"{x * 4}000{n}-0000-4000-8000-000000000000" for n, x in enumerate("abcd", 1))
    path = tmp_path / f"{sid}.jsonl"
    records = [
        turn(a, None, "user"),
        turn(b, c, "user"),
        turn(c, b, "assistant"),
        turn(d, d, "user"),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    leaves = newest_leaves(Transcript.open(path).tree)
    assert leaves[a] == a and leaves[b] in (b, c) and leaves[c] in (b, c) and leaves[d] == d
