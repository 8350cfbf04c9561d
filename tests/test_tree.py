"""The tree rules, one at a time, on hand-built skeletons (no files, no codec).

Leaf resolution (the rules in model/tree.py's docstring, found with the real client),
active path, compaction re-links, fork points and the problems a corrupt tree reports.
The real-client facts behind these rules are in test_context_golden.py; here each rule
is pinned on the smallest input that shows it.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from sessiontree.model.records import (
    NULL_UUID,
    CompactMetadataSkeleton,
    Line,
    MessageSkeleton,
    PreservedSegment,
    Skeleton,
)
from sessiontree.model.tree import Tree, build_tree


def skeleton(fields: dict[str, Any]) -> Skeleton:
    """A skeleton built field by field, as the decoder would fill it."""
    fields = dict(fields)
    segment = fields.pop("preservedSegment", None)
    if segment is not None:
        fields["compactMetadata"] = CompactMetadataSkeleton(
            preservedSegment=PreservedSegment(*segment)
        )
    message_id = fields.pop("messageId", None)
    if message_id is not None:
        fields["message"] = MessageSkeleton(id=message_id)
    result = fields.pop("toolUseResult", None)
    if result is not None:
        fields["toolUseResult"] = msgspec.Raw(msgspec.json.encode(result))
    known = set(Skeleton.__struct_fields__)
    return Skeleton(**{k: v for k, v in fields.items() if k in known})  # others stay on disk


def tree_of(*records: dict[str, Any]) -> Tree:
    lines = [
        Line(number, number * 1000, 10, skeleton(fields))
        for number, fields in enumerate(records, start=1)
    ]
    return build_tree("t.jsonl", lines)


_clock = itertools.count()


def rec(uuid: str, parent: str | None, kind: str = "user", **extra: Any) -> dict[str, Any]:
    """A chain record; timestamps increase in the order records are made."""
    tick = next(_clock)
    fields: dict[str, Any] = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "timestamp": f"2026-01-01T00:{tick // 60 % 60:02d}:{tick % 60:02d}.000Z",
    }
    fields.update(extra)
    return fields


def last_prompt(leaf: str, **extra: Any) -> dict[str, Any]:
    return {"type": "last-prompt", "leafUuid": leaf, **extra}


def boundary(uuid: str, logical: str | None, segment: tuple[str, str, str] | None = None):  # type: ignore[no-untyped-def]
    return rec(
        uuid,
        None,
        "system",
        subtype="compact_boundary",
        logicalParentUuid=logical,
        preservedSegment=segment,
    )


def kinds(tree: Tree) -> list[tuple[str, int | None]]:
    return [(p.kind, p.line) for p in tree.problems]


# -- the active leaf ----------------------------------------------------------------------


def test_single_chain() -> None:
    tree = tree_of(rec("a", None), rec("b", "a", "assistant"), rec("c", "b", "system"))
    assert tree.resolve_leaf() == "c"
    assert tree.active_path() == ["a", "b", "c"]
    assert tree.problems == []
    assert tree.fork_points() == []


def test_empty_and_metadata_only() -> None:
    assert tree_of().resolve_leaf() is None
    assert tree_of().active_path() == []
    only_meta = tree_of({"type": "mode", "mode": "x"}, last_prompt("zzz"))
    assert only_meta.resolve_leaf() is None
    assert only_meta.nodes == {}


def test_default_leaf_is_the_newest_leaf_below_the_record_written_last() -> None:
    # the children of "late" were written before it (out-of-order writes do happen: 06,
    # line 102): the search starts at the record written last and goes down
    tree = tree_of(
        {"type": "user", "uuid": "z", "parentUuid": None, "timestamp": "2026-09-09T00:00:00Z"},
        {"type": "user", "uuid": "c1", "parentUuid": "late", "timestamp": "2026-01-02T00:00:00Z"},
        {"type": "user", "uuid": "c2", "parentUuid": "late", "timestamp": "2026-01-04T00:00:00Z"},
        {"type": "user", "uuid": "c3", "parentUuid": "late", "timestamp": "2026-01-03T00:00:00Z"},
        {"type": "user", "uuid": "late", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z"},
    )
    # not z (the newest leaf overall), not c3 (the last leaf in the file)
    assert tree.default_leaf() == tree.resolve_leaf() == "c2"


def test_default_leaf_ties_and_missing_timestamps() -> None:
    same = "2026-01-01T00:00:00.000Z"
    tied = tree_of(
        {"type": "user", "uuid": "b", "parentUuid": "a", "timestamp": same},
        {"type": "user", "uuid": "c", "parentUuid": "a", "timestamp": same},
        {"type": "user", "uuid": "a", "parentUuid": None, "timestamp": same},
    )
    assert tied.resolve_leaf() == "c"  # the later line
    untimed = tree_of(
        {"type": "user", "uuid": "b", "parentUuid": "a", "timestamp": same},
        {"type": "user", "uuid": "c", "parentUuid": "a"},
        {"type": "user", "uuid": "a", "parentUuid": None},
    )
    assert untimed.resolve_leaf() == "b"


def test_default_leaf_is_the_last_written_record_when_it_is_a_leaf() -> None:
    tree = tree_of(
        rec("a", None),
        {"type": "user", "uuid": "new", "parentUuid": "a", "timestamp": "2099-01-01T00:00:00Z"},
        {"type": "user", "uuid": "old", "parentUuid": "a", "timestamp": "2000-01-01T00:00:00Z"},
    )
    assert tree.resolve_leaf() == "old"


def test_last_prompt_names_a_leaf_off_the_default_path() -> None:
    tree = tree_of(
        rec("a", None),
        rec("old", "a", "assistant"),
        rec("new", "a", "assistant"),
        last_prompt("old"),
    )
    assert tree.default_leaf() == "new"
    assert tree.resolve_leaf() == "old"
    assert tree.active_path() == ["a", "old"]


def test_last_prompt_on_the_default_path_is_stale() -> None:
    tree = tree_of(rec("a", None), last_prompt("a"), rec("b", "a"), rec("c", "a"))
    assert tree.named_leaf() == "a"
    assert tree.resolve_leaf() == "c"


def test_only_the_newest_existing_last_prompt_counts() -> None:
    tree = tree_of(
        rec("a", None),
        rec("x", "a"),
        rec("y", "a"),
        last_prompt("x"),
        last_prompt("a"),  # newest: on the default path, so stale; x does not come back
        last_prompt("missing"),  # names nothing: skipped
    )
    assert tree.named_leaf() == "a"
    assert tree.resolve_leaf() == "y"


def test_named_record_with_children_is_completed() -> None:
    # a last-prompt written mid-turn names the first block of a response: the client
    # resumes after the rest of that response and the tool result answering it
    tree = tree_of(
        rec("p", None),
        rec("a1", "p", "assistant", messageId="m1"),
        rec("a2", "a1", "assistant", messageId="m1"),
        rec("r", "a2", toolUseResult={"ok": 1}, sourceToolAssistantUUID="a2"),
        rec("q", "r"),  # the next prompt: a turn, not part of the response
        rec("other", "p", "assistant", messageId="m9"),  # written last: the default
        last_prompt("a1"),
    )
    assert tree.default_leaf() == "other"
    assert tree.resolve_leaf() == "r"
    assert tree.active_path() == ["p", "a1", "a2", "r"]


def test_reset_marker_discards_earlier_last_prompts() -> None:
    tree = tree_of(
        rec("a", None),
        rec("old", "a"),
        last_prompt("old"),
        rec("new", "a"),
        last_prompt(NULL_UUID, explicit=True),
    )
    assert tree.last_prompt_leaves == []
    assert tree.named_leaf() is None
    assert tree.resolve_leaf() == "new"
    rewound = tree_of(
        rec("a", None),
        rec("new", "a"),
        rec("old", "a"),  # written last, but named before the marker
        last_prompt("new"),
        last_prompt(NULL_UUID, explicit=True),
    )
    assert rewound.resolve_leaf() == "old"


def test_last_prompt_after_reset_marker_counts() -> None:
    tree = tree_of(
        rec("a", None),
        rec("x", "a"),
        rec("y", "a"),
        last_prompt(NULL_UUID, explicit=True),
        last_prompt("x"),
    )
    assert tree.last_prompt_leaves == ["x"]
    assert tree.resolve_leaf() == "x"


def test_sidechain_records_are_never_the_leaf_of_a_main_transcript() -> None:
    tree = tree_of(
        rec("a", None),
        rec("b", "a", "assistant"),
        rec("s1", "b", isSidechain=True),
        rec("s2", "s1", "assistant", isSidechain=True),
        last_prompt("s2"),
    )
    assert tree.main_children("b") == []
    assert tree.resolve_leaf() == "b"
    assert tree.sidechain_uuids() == ["s1", "s2"]
    assert tree.leaves() == ["b"]


def test_sidechain_only_transcript_is_its_own_main_chain() -> None:
    tree = tree_of(
        rec("a", None, isSidechain=True),
        rec("b", "a", "assistant", isSidechain=True),
    )
    assert tree.resolve_leaf() == "b"
    assert tree.active_path() == ["a", "b"]


def test_chain_types_only() -> None:
    tree = tree_of(
        rec("a", None),
        rec("p", "a", "progress"),
        {"type": "future-thing", "uuid": "f", "parentUuid": "p"},
        {"type": "summary", "summary": "s", "leafUuid": "p"},
    )
    assert set(tree.nodes) == {"a", "p"}
    assert tree.resolve_leaf() == "p"


# -- the active path and compaction ------------------------------------------------------


def test_path_stops_at_the_nearest_compact_boundary() -> None:
    tree = tree_of(
        rec("a", None),
        rec("b", "a", "assistant"),
        boundary("B1", "b"),
        rec("s1", "B1", isCompactSummary=True),
        rec("c", "s1"),
        boundary("B2", "c"),
        rec("s2", "B2", isCompactSummary=True),
        rec("d", "s2", "assistant"),
    )
    assert tree.resolve_leaf() == "d"
    assert tree.active_path() == ["B2", "s2", "d"]
    assert tree.path_to("c") == ["B1", "s1", "c"]
    assert tree.path_to("b") == ["a", "b"]


def test_boundary_with_a_parent_still_starts_the_path() -> None:
    tree = tree_of(
        rec("a", None),
        rec("B", "a", "system", subtype="compact_boundary"),
        rec("s", "B"),
    )
    assert tree.active_path() == ["B", "s"]


def test_preserved_segment_head_hangs_on_the_anchor_and_anchor_children_on_the_tail() -> None:
    # like 06 /compact: keep the last answer (h..t); the summary is the anchor
    tree = tree_of(
        rec("p1", None),
        rec("x", "p1", "assistant"),
        rec("h", "x", "assistant"),
        rec("t", "h", "system", subtype="turn_duration"),
        boundary("B", "t", ("h", "s", "t")),
        rec("s", "B", isCompactSummary=True),
        rec("cmd", "s", "system", subtype="local_command"),
        rec("p2", "cmd"),
    )
    assert tree.parent["h"] == "s"
    assert tree.parent["cmd"] == "t"
    assert tree.children["s"] == ["h"]
    assert tree.children["t"] == ["cmd"]
    assert "h" not in tree.children["x"]
    assert tree.active_path() == ["B", "s", "h", "t", "cmd", "p2"]
    assert tree.problems == []
    assert tree.off_path_leaves(tree.active_path()) == ["x"]


def test_preserved_segment_with_boundary_as_anchor() -> None:
    # like 07 summarize from here: keep p1 (h..t) right after the boundary
    tree = tree_of(
        rec("h", None),
        rec("t", "h", "system", subtype="turn_duration"),
        rec("p2", "t"),
        rec("p2end", "p2", "system", subtype="turn_duration"),
        boundary("B", "t", ("h", "B", "t")),
        rec("s", "B", isCompactSummary=True),
        rec("p3", "s"),
    )
    assert tree.parent["h"] == "B"
    assert tree.parent["s"] == "t"
    assert tree.active_path() == ["B", "h", "t", "s", "p3"]
    assert tree.children["t"] == ["p2", "s"]


def test_preserved_segment_naming_a_missing_record_is_not_applied() -> None:
    tree = tree_of(
        rec("h", None),
        rec("t", "h"),
        boundary("B", "t", ("h", "s", "gone")),
        rec("s", "B", isCompactSummary=True),
    )
    assert tree.parent["h"] is None
    assert tree.active_path() == ["B", "s"]


def test_summarized_records_are_never_the_leaf() -> None:
    # a last-prompt written before /compact names the old leaf; after the compaction it
    # is summarized away, so the conversation after the boundary wins
    tree = tree_of(
        rec("a", None),
        rec("b", "a", "assistant"),
        last_prompt("b"),
        boundary("B", "b"),
        rec("s", "B", isCompactSummary=True),
        rec("c", "s"),
        rec("d", "c", "assistant"),
    )
    assert tree.compacted == {"a", "b"}
    assert tree.named_leaf() is None
    assert tree.resolve_leaf() == "d"
    assert tree.active_path() == ["B", "s", "c", "d"]


def test_preserved_segment_is_not_summarized_away() -> None:
    tree = tree_of(
        rec("p1", None),
        rec("h", "p1", "assistant"),
        rec("t", "h", "system", subtype="turn_duration"),
        boundary("B", "t", ("h", "s", "t")),
        rec("s", "B", isCompactSummary=True),
        last_prompt("t"),
    )
    assert tree.compacted == {"p1"}
    assert tree.resolve_leaf() == "t"  # re-linked under the summary: the path goes on
    assert tree.active_path() == ["B", "s", "h", "t"]


# -- corrupt trees -------------------------------------------------------------------------


def test_dangling_parent_is_reported_and_the_path_starts_there() -> None:
    tree = tree_of(rec("a", None), rec("b", "lost"), rec("c", "b"))
    assert kinds(tree) == [("dangling-parent", 2)]
    assert tree.active_path() == ["b", "c"]


def test_duplicate_uuid_is_reported_and_the_later_line_wins() -> None:
    tree = tree_of(rec("a", None), rec("b", None), rec("x", "a"), rec("x", "b"))
    assert kinds(tree) == [("duplicate-uuid", 4)]
    assert tree.nodes["x"].number == 4
    assert tree.parent["x"] == "b"
    assert tree.children.get("a", []) == []
    assert tree.active_path() == ["b", "x"]


def test_cycle_is_reported_and_walks_end() -> None:
    tree = tree_of(rec("a", "c"), rec("b", "a"), rec("c", "b"), rec("d", "b"))
    assert [k for k, _ in kinds(tree)] == ["cycle"]
    path = tree.active_path()
    assert path[-1] == "d"
    assert len(path) == len(set(path)) == 4
    assert tree.parent[path[0]] in path  # cut where the loop closed


def test_self_parent_is_a_cycle() -> None:
    tree = tree_of(rec("a", None), rec("b", "b"))
    assert kinds(tree) == [("cycle", 2)]
    assert tree.resolve_leaf() == "b"  # written last; nothing below it but itself
    assert tree.path_to("b") == ["b"]
    assert tree.path_to("a") == ["a"]


def test_relink_that_closes_a_loop_is_reported() -> None:
    # a preserved segment whose head is an ancestor of the anchor
    tree = tree_of(
        rec("h", None),
        rec("s", "h"),
        rec("t", "s"),
        boundary("B", None, ("h", "t", "t")),
    )
    assert "cycle" in [k for k, _ in kinds(tree)]
    for uuid in tree.nodes:
        path = tree.path_to(uuid)
        assert len(path) == len(set(path))


def test_pure_cycle_still_resolves() -> None:
    # every record has a child: no childless leaf exists; the last written one is taken
    tree = tree_of(rec("a", "b"), rec("b", "a"))
    assert [k for k, _ in kinds(tree)] == ["cycle"]
    assert tree.resolve_leaf() == "b"
    assert tree.active_path() == ["a", "b"]


# -- fork points -----------------------------------------------------------------------------


def test_two_prompts_on_one_parent_are_a_fork_point() -> None:
    tree = tree_of(
        rec("a", None),
        rec("end", "a", "system", subtype="turn_duration"),
        rec("p2", "end"),
        rec("p2b", "end"),
    )
    [point] = tree.fork_points()
    assert point.uuid == "end"
    assert point.children == ("p2", "p2b")


def test_structural_branching_is_not_a_fork_point() -> None:
    tree = tree_of(
        rec("p", None),
        rec("u1", "p", "assistant", messageId="m1"),
        rec("u2", "p", "assistant", messageId="m1"),  # a second block of one response
        rec("r1", "u1", toolUseResult={"x": 1}, sourceToolAssistantUUID="u1"),
        rec("r2", "u1", toolUseResult={"y": 2}, sourceToolAssistantUUID="u1"),
        rec("at1", "r2", "attachment"),
        rec("at2", "r2", "attachment"),
        rec("sys", "r2", "system", subtype="turn_duration"),
    )
    assert tree.fork_points() == []


def test_two_responses_on_one_prompt_are_a_fork_point() -> None:
    tree = tree_of(
        rec("p", None),
        rec("a1", "p", "assistant", messageId="m1"),
        rec("a2", "p", "assistant", messageId="m2"),
        rec("side", "p", isSidechain=True),
    )
    [point] = tree.fork_points()
    assert point.children == ("a1", "a2")


def test_off_path_leaves_are_the_other_branches() -> None:
    tree = tree_of(
        rec("a", None),
        rec("b1", "a"),
        rec("b2", "a"),
        rec("c2", "b2"),
        last_prompt("b1"),
    )
    path = tree.active_path()
    assert path == ["a", "b1"]
    assert tree.off_path_leaves(path) == ["c2"]
