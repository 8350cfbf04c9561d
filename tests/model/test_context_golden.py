"""Golden tests on the real-client fixtures: what resuming sends, and the tree facts behind it.

``truth/resume-<id>.json`` holds the exact ``messages`` Claude Code 2.1.328 sent when it
resumed a session with a probe prompt. Everything before the probe is the session's own
context, and :meth:`Transcript.context` must reproduce it block for block. The tree facts
are the ones FINDINGS.md reports for each scenario, with the uuids it names.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import NULL_UUID
from tests.conftest import FIXTURES, all_scenarios, scenario_id, scenario_names
from tests.interop.realclient import normalize as shape

Block = dict[str, Any]
Message = dict[str, Any]


def _truth_cases() -> list[tuple[Path, Path]]:
    return [
        (scenario, truth)
        for scenario in all_scenarios()
        for truth in sorted((scenario / "truth").glob("resume-*.json"))
    ]


TRUTHS = _truth_cases()


def _transcript_path(scenario: Path, truth: dict[str, Any]) -> Path:
    return (
        scenario / "claude-home" / "projects" / truth["projectDir"] / f"{truth['sessionId']}.jsonl"
    )


def _open(scenario: str, session_id: str) -> Transcript:
    found = list((FIXTURES / scenario / "claude-home" / "projects").glob(f"*/{session_id}.jsonl"))
    assert len(found) == 1, found
    return Transcript.open(found[0])


def _blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    assert isinstance(content, list), content
    return list(content)


def _block(block: Block) -> Block:
    """A block as compared: ``cache_control`` dropped, text stripped, nothing else touched."""
    out = {k: v for k, v in block.items() if k != "cache_control"}
    if out.get("type") == "text":
        out["text"] = str(out.get("text", "")).strip()
    return out


def normalize(messages: list[Message]) -> list[tuple[str, list[Block]]]:
    """Messages as the API reads them: string content as one text block, empty text blocks
    and empty messages dropped, consecutive messages of one role merged (the API merges
    them; the client sometimes sends them split)."""
    out: list[tuple[str, list[Block]]] = []
    for message in messages:
        role = message["role"]
        blocks = [_block(b) for b in _blocks(message["content"])]
        blocks = [b for b in blocks if not (b.get("type") == "text" and not b["text"])]
        if not blocks:
            continue
        if out and out[-1][0] == role:
            out[-1][1].extend(blocks)
        else:
            out.append((role, blocks))
    return out


def truth_before_probe(truth: dict[str, Any]) -> list[Message]:
    """The truth's messages up to the probe: the last user message holding the probe text,
    cut just before the probe's block (what the client added to that message before the
    probe, such as a pending task notification, is still the session's)."""
    messages: list[Message] = truth["messages"]
    probe: str = truth["probe"]
    at = max(
        i
        for i, m in enumerate(messages)
        if m["role"] == "user"
        and any(
            b.get("type") == "text" and probe in b.get("text", "") for b in _blocks(m["content"])
        )
    )
    blocks = _blocks(messages[at]["content"])
    cut = max(
        i for i, b in enumerate(blocks) if b.get("type") == "text" and probe in b.get("text", "")
    )
    before = messages[:at]
    if blocks[:cut]:
        before = [*before, {"role": "user", "content": blocks[:cut]}]
    return before


def test_every_scenario_has_a_truth() -> None:
    assert len(TRUTHS) >= len(scenario_names()) >= 9


@pytest.mark.parametrize(
    ("scenario", "truth_path"),
    TRUTHS,
    ids=[f"{scenario_id(s)}-{p.stem.removeprefix('resume-')[:8]}" for s, p in TRUTHS],
)
def test_context_equals_what_the_real_client_sent(scenario: Path, truth_path: Path) -> None:
    """Block for block on sessions client 2.1.328 wrote. On older clients' sessions, what
    ``check_fixtures.py`` holds (roles, visible texts, tool ids): resuming them, 2.1.328
    adds reminders of its own and renders some attachments from the disk as it is then
    (a ``file`` attachment re-reads the file, "changed on disk" notes), which no reading
    of the transcript can give."""
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    transcript = Transcript.open(_transcript_path(scenario, truth))
    assert transcript.problems == []
    exact = scenario.parent.name.startswith("claude-code-2.1.328")
    compare = normalize if exact else shape
    got = compare(transcript.context())
    want = compare(truth_before_probe(truth))
    assert [role for role, _ in got] == [role for role, _ in want]
    for index, (mine, theirs) in enumerate(zip(got, want, strict=True)):
        assert mine == theirs, f"message {index} ({mine[0]}) differs"
    # the probe comparison above is not vacuous: every session sends a real conversation
    assert sum(1 for role, _ in want if role == "assistant") >= 2


def test_older_clients_sessions_are_among_the_truths() -> None:
    versions = {s.parent.name for s, _ in TRUTHS}
    assert {"claude-code-1.0.128", "claude-code-2.0.76", "claude-code-2.1.200"} <= versions


def test_normalize_keeps_what_matters() -> None:
    """The comparison itself: tool ids, names, inputs and results must count."""
    use = {"type": "tool_use", "id": "t1", "name": "Write", "input": {"a": 1}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
    base = [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    assert normalize(base) != normalize(
        [
            {"role": "assistant", "content": [{**use, "id": "t2"}]},
            {"role": "user", "content": [result]},
        ]
    )
    assert normalize(base) != normalize(
        [
            {"role": "assistant", "content": [{**use, "input": {}}]},
            {"role": "user", "content": [result]},
        ]
    )
    assert normalize(base) != normalize(
        [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{**result, "content": "x"}]},
        ]
    )
    assert normalize([{"role": "user", "content": " hi\n"}]) == normalize(
        [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {}}]}]
    )


# -- tree facts (FINDINGS.md) -----------------------------------------------------------


def test_02_rewind_new_prompt_hangs_on_the_rewound_prompts_parent() -> None:
    t = _open("02-rewind-both", "b06189e0-a90e-451c-aa38-609447827575")
    p1, p2, p3, p4 = (
        "e42339f0-9cc9-4623-9efe-a2328d4a6cd4",
        "68cc9d25-76cb-4830-9aed-37d0a46978c6",
        "aed0d84c-d06d-4978-af29-91fd7e9454b1",
        "92d1c3f4-05c0-4d88-acb4-c66b8ab2f637",
    )
    turn1_end = "cd7d3add-c783-4038-a2ec-0e7e2285237e"
    assert t.tree.parent[p4] == turn1_end == t.tree.parent[p2]
    # the last-prompt names p4's turn end; the client resumes from the reply above it,
    # and the turn end still closes the path
    turn4_end = "e22bcc9a-3a78-4c98-96e5-f9a656ba1e12"
    assert t.tree.marks.last_row == turn4_end
    assert t.leaf == "9905a8d3-a528-4b5d-bb36-7e4beb69967c"
    assert t.tree.skeleton(t.leaf).type == "assistant"
    assert t.tree.parent[turn4_end] == t.leaf
    path = t.active_path
    assert path[-2:] == [t.leaf, turn4_end]
    assert path[0] == p1
    assert p4 in path and turn1_end in path
    assert p2 not in path and p3 not in path
    # the abandoned branch ends at p3's turn_duration, off the active path
    assert t.off_path_leaves() == ["960de76f-3382-45aa-a562-e2872eb76511"]
    assert [(f.uuid, f.children) for f in t.fork_points()] == [(turn1_end, (p2, p4))]
    # the rewind wrote the all-zero marker (it names nothing); a later last-prompt
    # names the live turn end
    named = [r.get("leafUuid") for r in t.metadata("last-prompt")]
    markers = [r for r in t.metadata("last-prompt") if r.get("leafUuid") == NULL_UUID]
    assert len(markers) == 1 and markers[0].get("explicit") is True
    assert named.index(NULL_UUID) < len(named) - 1
    assert named[-1] == t.tree.marks.named == turn4_end


def test_05_resent_prompt_makes_one_fork_point_with_four_children() -> None:
    t = _open("05-resend-siblings", "f4891e54-b486-472e-9be7-ae800754f739")
    parent = "9658805d-ea6e-4d70-b6ea-f7d9fa42c2fa"
    resends = (
        "b38e08fe-45ac-400f-85b9-43f70e706ae7",
        "94aef3fd-8157-48ae-85a6-275d1992be09",
        "6cfa26ce-d9d1-4bc0-816f-486d4e033fa5",
        "a2c2965f-17d8-411f-b04b-8c53446029af",
    )
    assert [(f.uuid, f.children) for f in t.fork_points()] == [(parent, resends)]
    assert t.tree.main_children(parent) == list(resends)
    path = t.active_path
    assert parent in path and resends[-1] in path
    assert not any(r in path for r in resends[:-1])
    turn_end = "21775b30-4dbb-4041-869a-e719ba51337c"  # what the last-prompt names
    assert t.tree.marks.named == turn_end
    assert t.leaf == "a49826ae-6782-4c14-8eb6-b57513cdc199"  # the reply above it
    assert path[-2:] == [t.leaf, turn_end]
    assert sorted(t.off_path_leaves()) == sorted(
        [
            "9f2ebe38-94a1-4f20-b7d8-f7db4ee3e902",
            "c6b36cc0-5ef9-4c4e-963c-7e711f725b31",
            "bcd5f07a-58e1-44a0-a23e-ed3d0eb7f2fc",
        ]
    )


def test_06_compact_path_starts_at_boundary_and_relinks_preserved_segment() -> None:
    t = _open("06-compact", "a5ca052c-392f-46b5-b4fb-f97672a6248e")
    boundary = "1914684b-c314-40a4-9e00-8e0681b173a7"
    summary = "ce1c8407-e14f-4818-863c-9986b7168b7f"  # the anchor
    head = "24564a4c-4726-4921-9b5f-e5afd1116dc7"
    tail = "c91e76e7-81c6-4a78-8827-998a453c7099"
    caveat = "2975468d-43b5-4b9f-879a-7010f8eb30e2"  # written on the anchor
    head_skeleton = t.tree.skeleton(head)
    assert head_skeleton.parentUuid not in (None, summary)  # on disk: the old chain
    assert t.tree.parent[head] == summary  # effective: hangs on the anchor
    assert t.tree.parent[tail] == head
    assert t.tree.parent[caveat] == tail  # what hung on the anchor now hangs on the tail
    assert t.active_path[:5] == [boundary, summary, head, tail, caveat]
    assert t.tree.skeleton(boundary).subtype == "compact_boundary"
    assert t.tree.skeleton(boundary).parentUuid is None
    # a compaction re-linked a segment: the leaf is the leaf message (the reply above
    # the last turn end), and the turn end still closes the path
    turn_end = "0ce5ae28-b135-454f-9b88-b8a0e6f8fb50"
    assert t.tree.compaction_tail == tail
    assert t.tree.marks.named == turn_end
    assert t.leaf == "ea281c02-0ce4-4998-8d34-54b07500344f"
    assert t.tree.skeleton(t.leaf).type == "assistant"
    assert t.active_path[-2:] == [t.leaf, turn_end]
    # the summarized history stays on disk, off the path
    p1 = "6c565c94-ce1f-48f3-99c5-26d475226c21"
    assert p1 in t.tree.nodes and p1 not in t.active_path
    assert [u for u in t.active_path if t.tree.skeleton(u).subtype == "compact_boundary"] == [
        boundary
    ]
    # summarized away: everything written before the boundary except head..tail
    assert p1 in t.tree.compacted
    assert head not in t.tree.compacted and tail not in t.tree.compacted


def test_07_summarize_from_here_relinks_summary_after_preserved_tail() -> None:
    t = _open("07-summarize-from-here", "5966e22d-9167-48de-80c2-0f95904ed98a")
    boundary = "4dc2dcd8-5fbb-47c4-b96a-95670e0df3d2"  # the anchor
    head = "b92c507b-addd-45e3-975f-b3dbf39633ef"  # p1
    tail = "92498126-57f0-4b33-b930-31517567c771"  # p1's turn_duration
    summary = "711f1ea9-0268-4760-b95b-3d711fc58255"
    p2 = "93baa664-3520-4c6c-819e-4030c57c9e26"
    assert t.tree.skeleton(summary).parentUuid == boundary  # on disk
    assert t.tree.parent[summary] == tail  # effective
    assert t.tree.skeleton(head).parentUuid is None
    assert t.tree.parent[head] == boundary
    path = t.active_path
    assert path[0] == boundary and path[1] == head
    assert path.index(tail) + 1 == path.index(summary)
    assert p2 not in path
    turn_end = "1532b063-701d-44f5-9298-3bbfa0d4b09f"
    assert t.tree.compaction_tail == tail
    assert t.leaf == "f108199c-465d-4560-8983-9efa143d41d4"  # the reply above the turn end
    assert path[-2:] == [t.leaf, turn_end]
    # p1 (head..tail, the 17 records the boundary lists) is kept, right after the
    # boundary; p2..p3 are summarized away
    record = t.record(boundary)
    assert record is not None
    preserved = record.get("compactMetadata")["preservedMessages"]["uuids"]
    assert len(preserved) == 17
    assert path[1 : 1 + len(preserved)] == preserved
    assert preserved[0] == head and preserved[-1] == tail
    assert not set(preserved) & t.tree.compacted
    assert p2 in t.tree.compacted
    for previous, current in itertools.pairwise(path):
        assert t.tree.parent[current] == previous


def test_09_fork_file_shares_uuids_with_its_parent() -> None:
    parent = _open("09-fork", "8300586d-2452-4d4c-a477-cf169e84ab41")
    fork = _open("09-fork", "8a25c45b-3a77-46d4-bdf9-cc009ad7c2f4")
    shared = set(parent.tree.nodes) & set(fork.tree.nodes)
    assert len(shared) == 23
    assert set(fork.tree.nodes) - shared == {"681e797f-8290-4322-8cc1-c8a3e7f0a617"}
    assert all(parent.tree.parent[u] == fork.tree.parent[u] for u in shared)
    # the fork's conversation is the parent's up to the fork, then its own notification
    assert fork.leaf == "681e797f-8290-4322-8cc1-c8a3e7f0a617"
    assert fork.active_path[:-1] == parent.active_path[: len(fork.active_path) - 1]
    assert fork.active_path[0] == parent.active_path[0] == "49a41b8a-10e9-4a4a-b488-c0d10b493993"
    records = fork.iter_all_records()
    assert {r.get("sessionId") for r in records} == {"8a25c45b-3a77-46d4-bdf9-cc009ad7c2f4"}
    # the parent session went on after /fork: p3 landed there
    assert "c1a9093d-e395-4bb3-aa91-877e32e7e61b" in parent.active_path


def test_14_subagent_transcript_records_are_sidechains() -> None:
    main = _open("14-subagent", "a771dff3-5078-4c59-bdb9-12a3844ac099")
    [agent] = main.subagents()
    assert agent.agent_id == "affb34be16ea94168"
    assert agent.tool_use_id is not None
    sub = Transcript.open(agent.path)
    records = list(sub.iter_all_records())
    assert len(records) == 19
    assert all(r.is_sidechain for r in records)
    assert all(r.get("agentId") == agent.agent_id for r in records)
    assert records[0].parent_uuid is None
    assert records[0].uuid == "a9b0e15d-3a6b-4100-b965-3fcc94e995ea"
    # the main transcript holds none of them, and no sidechain of its own
    assert not set(sub.tree.nodes) & set(main.tree.nodes)
    assert main.tree.sidechain_uuids() == []
    # the spawning tool_use is in the main conversation
    tool_uses = [
        b.get("id")
        for r in main.active_records()
        if r.type == "assistant"
        for b in r.content
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    assert agent.tool_use_id in tool_uses
    # a subagent's own file is a conversation of its own: it reads as one chain
    assert sub.problems == []
    assert sub.leaf is not None
    assert sub.active_path[0] == records[0].uuid
