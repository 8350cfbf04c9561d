"""The tree rules, one at a time, on hand-built skeletons (no files, no codec).

Leaf resolution and the active path (the numbered rules in model/resume.py's docstring,
the client's own procedure), what the client notes while reading (model/tree.py's
Marks), compaction re-links, fork points and the problems a corrupt tree reports. The
real-client facts behind these rules are in test_context_golden.py and tests/interop;
here each rule is pinned on the smallest input that shows it.
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


def at(seconds: float) -> str:
    """A timestamp ``seconds`` after a fixed moment (for rules that measure time)."""
    whole, ms = divmod(round(seconds * 1000), 1000)
    return f"2026-02-01T00:{whole // 60:02d}:{whole % 60:02d}.{ms:03d}Z"


def timed(uuid: str, parent: str | None, seconds: float, kind: str = "user", **extra: Any):  # type: ignore[no-untyped-def]
    return {"type": kind, "uuid": uuid, "parentUuid": parent, "timestamp": at(seconds), **extra}


# -- what the client notes while reading (Marks) -------------------------------------------


def test_marks_last_row_newest_row_and_the_named_leaf() -> None:
    tree = tree_of(
        timed("a", None, 5),
        timed("side", "a", 9, isSidechain=True),  # a sidechain is not a row
        timed("b", "a", 7, "assistant"),
        timed("snap", "b", 8, "system", subtype="file_snapshot"),  # nor a file snapshot
        last_prompt("b", explicit=True),
        timed("c", "b", 6, "system", subtype="turn_duration"),
        last_prompt("gone"),
        {"type": "mode", "mode": "x"},
    )
    marks = tree.marks
    assert marks.last_row == "c"  # written last
    assert marks.newest_row == "b" and marks.newest_timestamp == at(7)
    assert marks.saw_last_prompt
    assert marks.named == "gone"  # the newest last-prompt, even naming nothing
    assert not marks.named_explicit


def test_a_later_copy_of_a_uuid_is_the_last_row_but_keeps_its_first_position() -> None:
    tree = tree_of(rec("a", None), rec("b", "a"), rec("a", None))
    assert list(tree.nodes) == ["a", "b"]
    assert tree.order == {"a": 0, "b": 1}
    assert tree.marks.last_row == "a"
    assert kinds(tree) == [("duplicate-uuid", 3)]


def test_explicit_flag_lasts_until_any_later_record() -> None:
    chain = [rec("a", None), rec("b", "a", "assistant")]
    assert tree_of(*chain, last_prompt("b", explicit=True)).marks.named_explicit
    # the same leaf named again keeps the flag; any record written after clears it
    again = tree_of(*chain, last_prompt("b", explicit=True), last_prompt("b"))
    assert again.marks.named_explicit
    other = tree_of(*chain, last_prompt("b", explicit=True), last_prompt("a"))
    assert not other.marks.named_explicit
    later = tree_of(*chain, last_prompt("b", explicit=True), rec("c", "b", "system"))
    assert not later.marks.named_explicit
    assert later.marks.named == "b"


def test_compact_boundary_forgets_the_named_leaf() -> None:
    tree = tree_of(
        rec("a", None),
        rec("b", "a", "assistant"),
        last_prompt("b", explicit=True),
        boundary("B", "b"),
        rec("s", "B", isCompactSummary=True),
    )
    assert tree.marks.saw_last_prompt
    assert tree.marks.named is None and not tree.marks.named_explicit
    assert tree.resolve_leaf() == "s"
    named_after = tree_of(
        rec("a", None),
        boundary("B", "a"),
        rec("s", "B", isCompactSummary=True),
        rec("p", "s"),
        rec("q", "s"),
        last_prompt("p"),
    )
    assert named_after.marks.named == "p"
    assert named_after.resolve_leaf() == "p"


# -- the active leaf: rule 1 (no compaction re-link) -------------------------------------------


def test_single_chain_resumes_from_the_last_message() -> None:
    tree = tree_of(rec("a", None), rec("b", "a", "assistant"), rec("c", "b", "system"))
    assert tree.resolve_leaf() == "b"  # the reply above the turn end
    assert tree.active_path() == ["a", "b", "c"]  # the turn end still follows it
    assert tree.problems == []
    assert tree.fork_points() == []


def test_empty_and_metadata_only() -> None:
    assert tree_of().resolve_leaf() is None
    assert tree_of().active_path() == []
    only_meta = tree_of({"type": "mode", "mode": "x"}, last_prompt("zzz"))
    assert only_meta.resolve_leaf() is None
    assert only_meta.active_path() == []
    assert only_meta.nodes == {}


def test_without_last_prompt_the_newest_record_below_the_last_written_stands_in() -> None:
    # the children of "late" were written before it (out-of-order writes do happen: 06,
    # line 102): the search starts at the record written last and goes down
    tree = tree_of(
        {"type": "user", "uuid": "z", "parentUuid": None, "timestamp": "2026-09-09T00:00:00Z"},
        {"type": "user", "uuid": "c1", "parentUuid": "late", "timestamp": "2026-01-02T00:00:00Z"},
        {"type": "user", "uuid": "c2", "parentUuid": "late", "timestamp": "2026-01-04T00:00:00Z"},
        {"type": "user", "uuid": "c3", "parentUuid": "late", "timestamp": "2026-01-03T00:00:00Z"},
        {"type": "user", "uuid": "late", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z"},
    )
    assert tree.marks.last_row == "late" and tree.marks.newest_row == "z"
    # not z (the newest record overall), not c3 (the last leaf in the file)
    assert tree.resolve_leaf() == "c2"
    assert tree.active_path() == ["late", "c2"]


def test_the_newest_record_below_is_brought_up_to_its_message() -> None:
    tree = tree_of(
        timed("late", None, 0),
        timed("old", "late", 1, "assistant"),
        timed("new", "late", 2, "assistant", messageId="m"),
        timed("end", "new", 3, "system", subtype="turn_duration"),
        timed("late", None, 0),  # written again, last
    )
    assert tree.marks.last_row == "late"
    assert tree.resolve_leaf() == "new"
    assert tree.active_path() == ["late", "new", "end"]


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


def test_the_last_written_record_wins_when_it_is_the_newest() -> None:
    tree = tree_of(
        rec("a", None),
        {"type": "user", "uuid": "old", "parentUuid": "a", "timestamp": "2000-01-01T00:00:00Z"},
        {"type": "user", "uuid": "new", "parentUuid": "a", "timestamp": "2099-01-01T00:00:00Z"},
    )
    assert tree.resolve_leaf() == "new"
    # a leaf written last wins even when an older line is newer: nothing hangs below it
    tree = tree_of(
        rec("a", None),
        {"type": "user", "uuid": "new", "parentUuid": "a", "timestamp": "2099-01-01T00:00:00Z"},
        {"type": "user", "uuid": "old", "parentUuid": "a", "timestamp": "2000-01-01T00:00:00Z"},
    )
    assert tree.resolve_leaf() == "old"


def test_last_prompt_names_a_leaf_off_the_last_written_branch() -> None:
    tree = tree_of(
        rec("a", None),
        rec("old", "a", "assistant"),
        rec("new", "a", "assistant"),
        last_prompt("old"),
    )
    assert tree.marks.last_row == "new" and tree.marks.named == "old"
    assert tree.resolve_leaf() == "old"
    assert tree.active_path() == ["a", "old"]


def test_named_leaf_off_the_last_written_branch_wins_even_with_children() -> None:
    # rule 1 only asks whether the named record is an ancestor of the last row
    tree = tree_of(
        rec("a", None),
        rec("p", "a"),
        rec("r", "p", "assistant"),
        rec("q", "a"),
        last_prompt("p"),
    )
    assert tree.resolve_leaf() == "p"
    assert tree.active_path() == ["a", "p"]  # its reply is a message: not brought along


def test_stale_named_leaf_is_an_ancestor_of_the_last_row() -> None:
    tree = tree_of(rec("a", None), last_prompt("a"), rec("b", "a"), rec("c", "a"))
    assert tree.marks.named == "a" and tree.marks.last_row == "c"
    assert tree.resolve_leaf() == "c"  # the conversation went on past a
    deeper = tree_of(
        rec("a", None),
        rec("b", "a", "assistant"),
        last_prompt("b"),
        rec("c", "b"),
        rec("d", "c", "assistant"),
        rec("e", "d", "system", subtype="turn_duration"),
    )
    assert deeper.resolve_leaf() == "d"
    assert deeper.active_path() == ["a", "b", "c", "d", "e"]


def test_only_the_newest_last_prompt_counts_even_when_it_names_nothing() -> None:
    records = [rec("a", None), rec("x", "a"), rec("y", "a")]
    assert tree_of(*records, last_prompt("x")).resolve_leaf() == "x"
    newest_stale = tree_of(*records, last_prompt("x"), last_prompt("a"))
    assert newest_stale.marks.named == "a"
    assert newest_stale.resolve_leaf() == "y"  # stale, and x does not come back
    newest_gone = tree_of(*records, last_prompt("x"), last_prompt("missing"))
    assert newest_gone.marks.named == "missing"
    assert newest_gone.resolve_leaf() == "y"  # names nothing, and x does not come back


def test_unusable_last_prompt_takes_the_last_row_itself_without_descent() -> None:
    # as the descent test above, but a last-prompt was written: no search below
    records: list[dict[str, Any]] = [
        {"type": "user", "uuid": "z", "parentUuid": None, "timestamp": "2026-09-09T00:00:00Z"},
        {"type": "user", "uuid": "c1", "parentUuid": "late", "timestamp": "2026-01-04T00:00:00Z"},
        {"type": "user", "uuid": "late", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z"},
    ]
    assert tree_of(*records).resolve_leaf() == "c1"
    for marker in (last_prompt("ghost"), last_prompt(NULL_UUID, explicit=True)):
        tree = tree_of(*records[:2], marker, records[2])
        assert tree.marks.saw_last_prompt
        assert tree.resolve_leaf() == "late"
        assert tree.active_path() == ["late"]


def test_rewind_marker_names_nothing_so_the_last_written_record_wins() -> None:
    tree = tree_of(
        rec("a", None),
        rec("old", "a"),
        last_prompt("old"),
        rec("new", "a"),
        last_prompt(NULL_UUID, explicit=True),
    )
    assert tree.marks.named == NULL_UUID
    assert tree.resolve_leaf() == "new"
    rewound = tree_of(
        rec("a", None),
        rec("new", "a"),
        rec("old", "a"),  # written last, but named before the marker
        last_prompt("new"),
        last_prompt(NULL_UUID, explicit=True),
    )
    assert rewound.resolve_leaf() == "old"


def test_last_prompt_after_rewind_marker_counts() -> None:
    tree = tree_of(
        rec("a", None),
        rec("x", "a"),
        rec("y", "a"),
        last_prompt(NULL_UUID, explicit=True),
        last_prompt("x"),
    )
    assert tree.marks.named == "x"
    assert tree.resolve_leaf() == "x"


def test_explicit_checkpoint_wins_even_as_an_ancestor_of_the_last_row() -> None:
    chain = [
        rec("a", None),
        rec("b", "a", "assistant", messageId="m1"),
        rec("c", "b"),
        rec("d", "c", "assistant", messageId="m2"),
    ]
    tree = tree_of(*chain, last_prompt("b", explicit=True))
    assert tree.resolve_leaf() == "b"  # no stale check for an explicit checkpoint
    assert tree.active_path() == ["a", "b"]
    # any record written after it clears the flag: then b is stale
    later = tree_of(*chain, last_prompt("b", explicit=True), rec("e", "d", "system"))
    assert later.resolve_leaf() == "d"
    assert later.active_path() == ["a", "b", "c", "d", "e"]


def test_named_record_is_brought_up_to_its_message() -> None:
    tree = tree_of(
        rec("p", None),
        rec("a", "p", "assistant"),
        rec("end", "a", "system", subtype="turn_duration"),
        rec("q", "p"),  # written last, on another branch
        last_prompt("end"),
    )
    assert tree.resolve_leaf() == "a"
    assert tree.active_path() == ["p", "a", "end"]


def test_named_record_with_children_is_completed() -> None:
    # a last-prompt written mid-turn names the first block of a response: the client
    # resumes from it, then sends the rest of that response and the tool result
    # answering it
    tree = tree_of(
        rec("p", None),
        rec("a1", "p", "assistant", messageId="m1"),
        rec("a2", "a1", "assistant", messageId="m1"),
        rec("r", "a2", toolUseResult={"ok": 1}, sourceToolAssistantUUID="a2"),
        rec("q", "r"),  # the next prompt: a turn, not part of the response
        rec("other", "p", "assistant", messageId="m9"),  # written last
        last_prompt("a1"),
    )
    assert tree.resolve_leaf() == "a1"
    assert tree.active_path() == ["p", "a1", "a2", "r"]


def test_rest_of_response_includes_parallel_tool_results_in_file_order() -> None:
    tree = tree_of(
        rec("p", None),
        rec("a1", "p", "assistant", messageId="m1"),
        rec("a2", "a1", "assistant", messageId="m1"),
        rec("r2", "a2", toolUseResult={"ok": 2}, sourceToolAssistantUUID="a2"),
        rec("r1", "a1", toolUseResult={"ok": 1}, sourceToolAssistantUUID="a1"),
        rec("x", "a2", "assistant", messageId="m2"),  # another response: not brought
        rec("other", "p"),
        last_prompt("a1"),
    )
    assert tree.resolve_leaf() == "a1"
    assert tree.active_path() == ["p", "a1", "a2", "r2", "r1"]


def test_sidechain_records_are_never_the_leaf_of_a_main_transcript() -> None:
    tree = tree_of(
        rec("a", None),
        rec("b", "a", "assistant"),
        rec("s1", "b", isSidechain=True),
        rec("s2", "s1", "assistant", isSidechain=True),
    )
    assert tree.marks.last_row == "b"  # a sidechain is not a row
    assert tree.main_children("b") == []
    assert tree.resolve_leaf() == "b"
    assert tree.active_path() == ["a", "b"]
    assert tree.sidechain_uuids() == ["s1", "s2"]
    assert tree.leaves() == ["b"]


def test_sidechain_only_transcript_is_its_own_main_chain() -> None:
    tree = tree_of(
        rec("a", None, isSidechain=True),
        rec("b", "a", "assistant", isSidechain=True),
        rec("c", "b", "system", isSidechain=True),
    )
    assert tree.sidechain_only
    assert tree.marks.last_row == "c"
    assert tree.resolve_leaf() == "b"
    assert tree.active_path() == ["a", "b", "c"]


def test_chain_types_only() -> None:
    tree = tree_of(
        rec("a", None),
        rec("p", "a", "progress"),
        {"type": "future-thing", "uuid": "f", "parentUuid": "p"},
        {"type": "summary", "summary": "s", "leafUuid": "p"},
    )
    assert set(tree.nodes) == {"a", "p"}
    assert not tree.marks.saw_last_prompt  # a legacy summary is no last-prompt
    assert tree.resolve_leaf() == "a"  # progress is no message
    assert tree.active_path() == ["a", "p"]


def test_records_without_a_message_resume_from_the_newest_record() -> None:
    # rule 3's last resort: no prompt or reply anywhere (the real client resumes it too)
    tree = tree_of(rec("x", None, "system", subtype="local_command"), rec("y", None, "attachment"))
    assert tree.resolve_leaf() == "y"
    assert tree.active_path() == ["y"]


# -- the active leaf: rules 2 and 3 (a compaction re-linked a preserved segment) -----------


def compacted_with_branches(*after: dict[str, Any]) -> Tree:
    """06-like: /compact kept the last answer h..t; two turns were then sent on it."""
    return tree_of(
        rec("p1", None),
        rec("h", "p1", "assistant"),
        rec("t", "h", "system", subtype="turn_duration"),
        boundary("B", "t", ("h", "s", "t")),
        rec("s", "B", isCompactSummary=True),
        rec("x", "t"),
        rec("xa", "x", "assistant"),
        rec("xt", "xa", "system", subtype="turn_duration"),
        rec("y", "t"),
        rec("ya", "y", "assistant"),
        *after,
    )


def test_compaction_named_leaf_message_wins() -> None:
    tree = compacted_with_branches(last_prompt("xa"))
    assert tree.compaction_tail == "t"
    assert tree.marks.last_row == "ya"
    assert tree.resolve_leaf() == "xa"
    assert tree.active_path() == ["B", "s", "h", "t", "x", "xa", "xt"]


def test_compaction_named_record_counts_only_if_it_is_a_leaf_message() -> None:
    # x has a reply below it: not a leaf message, so the one above the last row wins
    # (without the re-link, rule 1 would have taken x: it is not an ancestor of ya)
    tree = compacted_with_branches(last_prompt("x"))
    assert tree.resolve_leaf() == "ya"
    # a turn end is no message: naming it does not pick its branch either
    assert compacted_with_branches(last_prompt("xt")).resolve_leaf() == "ya"
    # a leaf message named before a later record: still the named one
    later = compacted_with_branches(last_prompt("xa"), rec("yt", "ya", "system"))
    assert later.resolve_leaf() == "xa"


def test_compaction_without_a_usable_name_takes_the_message_above_the_last_row() -> None:
    tree = compacted_with_branches(rec("yt", "ya", "system", subtype="turn_duration"))
    assert tree.marks.named is None
    assert tree.resolve_leaf() == "ya"
    assert tree.active_path() == ["B", "s", "h", "t", "y", "ya", "yt"]
    marker = compacted_with_branches(last_prompt(NULL_UUID, explicit=True))
    assert marker.resolve_leaf() == "ya"


def test_compaction_explicit_checkpoint_still_wins() -> None:
    tree = compacted_with_branches(last_prompt("x", explicit=True))
    assert tree.resolve_leaf() == "x"
    assert tree.active_path() == ["B", "s", "h", "t", "x"]


def test_compaction_single_leaf_message_wins_whatever_is_named() -> None:
    tree = tree_of(
        rec("p1", None),
        rec("h", "p1", "assistant"),
        rec("t", "h", "system", subtype="turn_duration"),
        boundary("B", "t", ("h", "s", "t")),
        rec("s", "B", isCompactSummary=True),
        rec("x", "t"),
        rec("xa", "x", "assistant"),
        last_prompt("x"),  # not a leaf message, and x is an ancestor of the last row
    )
    assert tree.resolve_leaf() == "xa"


def test_compaction_newest_leaf_message_when_the_last_row_has_no_message_above() -> None:
    # the last row hangs on nothing, so neither the name nor it decides: the newest
    # leaf message by timestamp does
    tree = tree_of(
        timed("p1", None, 0),
        timed("h", "p1", 1, "assistant"),
        timed("t", "h", 2, "system", subtype="turn_duration"),
        timed("B", None, 3, "system", subtype="compact_boundary", preservedSegment=("h", "s", "t")),
        timed("s", "B", 4, isCompactSummary=True),
        timed("x", "t", 9),
        timed("y", "t", 5),
        timed("cmd", None, 6, "system", subtype="local_command"),
    )
    assert tree.marks.last_row == "cmd"
    assert tree.resolve_leaf() == "x"
    assert tree.active_path() == ["B", "s", "h", "t", "x"]


# -- the active path: bridges, the rest of the response, what follows the leaf ---------------


def test_missing_parent_is_bridged_to_the_record_written_just_before_within_5_s() -> None:
    tree = tree_of(
        timed("a", None, 0),
        timed("x", "a", 3, "assistant"),
        timed("b", "lost", 4.9),  # its parent was never written
        timed("later", "b", 20, "assistant"),  # written after b: never a bridge
    )
    assert kinds(tree) == [("dangling-parent", 3)]
    assert tree.resolve_leaf() == "later"
    assert tree.active_path() == ["a", "x", "b", "later"]  # bridged to x, not to a
    assert tree.path_to("later") == ["b", "later"]  # path_to follows stored links only


def test_bridge_reaches_exactly_5_s_back() -> None:
    tree = tree_of(timed("a", None, 0), timed("b", "lost", 5))
    assert tree.active_path() == ["a", "b"]


def test_no_bridge_beyond_5_s() -> None:
    tree = tree_of(timed("a", None, 0), timed("b", "lost", 5.001), timed("c", "b", 6))
    assert kinds(tree) == [("dangling-parent", 2)]
    assert tree.active_path() == ["b", "c"]


def test_no_bridge_without_a_timestamp() -> None:
    tree = tree_of(timed("a", None, 0), {"type": "user", "uuid": "b", "parentUuid": "lost"})
    assert tree.resolve_leaf() == "b"
    assert tree.active_path() == ["b"]


def test_bridge_stays_on_its_side() -> None:
    # a main-chain record is never bridged to a sidechain one
    tree = tree_of(
        timed("a", None, 0),
        timed("s", "a", 3, isSidechain=True),
        timed("b", "lost", 4),
    )
    assert tree.active_path() == ["a", "b"]


def test_leaf_is_followed_by_its_non_message_descendants_oldest_first() -> None:
    tree = tree_of(
        timed("p", None, 0),
        timed("a", "p", 1, "assistant"),
        timed("att2", "a", 4, "attachment"),
        timed("end", "a", 2, "system", subtype="turn_duration"),
        timed("att3", "att2", 3, "attachment"),
        timed("side", "a", 5, isSidechain=True),  # a message on a sidechain: not sent
        last_prompt("end"),
    )
    assert tree.resolve_leaf() == "a"
    assert tree.active_path() == ["p", "a", "end", "att3", "att2"]


def test_descendants_stop_at_the_next_message() -> None:
    tree = tree_of(
        rec("p", None),
        rec("a", "p", "assistant"),
        rec("end", "a", "system", subtype="turn_duration"),
        rec("q", "end"),  # the next prompt and its reply are messages: not brought
        rec("qa", "q", "assistant"),
        rec("other", "p"),
        last_prompt("end", explicit=True),
    )
    assert tree.resolve_leaf() == "a"
    assert tree.active_path() == ["p", "a", "end"]


# -- compaction ----------------------------------------------------------------------------


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
    assert tree.compaction_tail == "t"
    assert tree.resolve_leaf() == "p2"
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
    assert tree.compacted == {"p2", "p2end"}
    assert tree.resolve_leaf() == "p3"
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
    assert tree.compacted == frozenset() and tree.compaction_tail is None
    assert tree.active_path() == ["B", "s"]


def test_boundary_without_a_preserved_segment_summarizes_nothing_away() -> None:
    # the old leaf is forgotten with the last-prompt naming it; the path stops at the
    # boundary, and nothing before it is marked summarized
    tree = tree_of(
        rec("a", None),
        rec("b", "a", "assistant"),
        last_prompt("b"),
        boundary("B", "b"),
        rec("s", "B", isCompactSummary=True),
        rec("c", "s"),
        rec("d", "c", "assistant"),
    )
    assert tree.compacted == frozenset()
    assert tree.marks.named is None
    assert tree.resolve_leaf() == "d"
    assert tree.active_path() == ["B", "s", "c", "d"]


def test_later_plain_boundary_summarizes_everything_before_it() -> None:
    tree = tree_of(
        rec("p1", None),
        rec("h", "p1", "assistant"),
        boundary("B1", "h", ("h", "s1", "h")),
        rec("s1", "B1", isCompactSummary=True),
        rec("p2", "h"),
        boundary("B2", "p2"),
        rec("s2", "B2", isCompactSummary=True),
        last_prompt("h"),  # summarized away: never the leaf
    )
    assert tree.compacted == {"p1", "h", "B1", "s1", "p2"}
    assert tree.compaction_tail is None
    assert tree.resolve_leaf() == "s2"
    assert tree.active_path() == ["B2", "s2"]


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
    assert tree.resolve_leaf() == "h"  # re-linked under the summary: the path goes on
    assert tree.active_path() == ["B", "s", "h", "t"]


def test_prompt_hung_on_a_summarized_record_hangs_on_the_tail() -> None:
    tree = tree_of(
        rec("p1", None),
        rec("h", "p1", "assistant"),
        rec("t", "h", "system", subtype="turn_duration"),
        boundary("B", "t", ("h", "s", "t")),
        rec("s", "B", isCompactSummary=True),
        rec("late", "p1"),  # written on a summarized record
    )
    assert tree.parent["late"] == "t"
    assert tree.resolve_leaf() == "late"
    assert tree.active_path() == ["B", "s", "h", "t", "late"]


# -- corrupt trees -------------------------------------------------------------------------


def test_dangling_parent_is_reported_and_the_path_starts_there() -> None:
    tree = tree_of(timed("a", None, 0), timed("b", "lost", 10), timed("c", "b", 11))
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
    path = tree.active_path()
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


# -- known bugs (see the report): each would break an invariant of test_tree_properties -----


def test_a_named_sidechain_record_resumes_nothing() -> None:
    # The real client 2.1.328 says "No conversation found" for such a session.
    tree = tree_of(
        rec("a", None),
        rec("b", "a", "assistant"),
        rec("s1", "b", isSidechain=True),
        rec("s2", "s1", "assistant", isSidechain=True),
        last_prompt("s2"),
    )
    # Not the main-chain "b" above it either: resuming "b" is the regression named here.
    assert tree.resolve_leaf() is None
    assert tree.active_path() == []


def test_sidechain_message_above_a_main_record_is_never_the_leaf() -> None:
    tree = tree_of(
        rec("a", None),
        rec("b", "a", "assistant"),
        rec("s", "b", isSidechain=True),
        rec("x", "s", "attachment"),  # a main-chain record written last, under it
    )
    leaf = tree.resolve_leaf()
    assert leaf is None or not tree.is_sidechain(leaf)


def test_last_resort_never_takes_a_summarized_record() -> None:
    # a /compact that kept a segment, then a plain /compact whose summary was never
    # written: nothing loaded is a message
    tree = tree_of(
        timed("p", None, 9),
        timed(
            "B1", None, 1, "system", subtype="compact_boundary", preservedSegment=("p", "B1", "p")
        ),
        timed("B2", None, 2, "system", subtype="compact_boundary"),
    )
    assert tree.compacted == {"p", "B1"}
    leaf = tree.resolve_leaf()
    assert leaf is None or tree.is_loaded(leaf)  # got "p", summarized away


def test_untimed_leaf_messages_resume_nothing_as_in_the_client() -> None:
    # The client keeps the newest leaf message by Date.parse(timestamp): NaN never wins,
    # so with no parseable timestamp it finds no conversation. sessiontree agrees.
    tree = tree_of(
        {"type": "user", "uuid": "h", "parentUuid": None},
        {"type": "assistant", "uuid": "t", "parentUuid": "h"},
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "B",
            "parentUuid": None,
            "preservedSegment": ("h", "s", "t"),
        },
        {"type": "user", "uuid": "s", "parentUuid": "B", "isCompactSummary": True},
    )
    assert tree.compaction_tail == "t"
    assert tree.resolve_leaf() is None
