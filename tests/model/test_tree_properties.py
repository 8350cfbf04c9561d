"""Property tests for the tree: random transcripts, corrupt ones included, and a client model.

Three layers:

* random record sets (branches, rewinds, compactions with preserved segments, last-prompt
  records incl. the all-zero rewind marker and explicit ones, sidechains, timestamps far
  apart, close together, missing or malformed, plus corruption: dangling parents,
  duplicate uuids, cycles) built straight into skeletons: building and resolving always
  end, and the invariants of ``build_tree``, the client's marks (model/tree.py),
  ``resolve_leaf`` and ``active_path`` (model/resume.py) hold for any input;
* the same record sets written with ``append_records`` (in batches, with torn writes
  between them) and read back: replay from disk equals the in-memory model;
* a state machine that plays the real client (prompt, rewind, compact, fork)
  and knows which leaf, path and context resuming must give.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import signal
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import (
    CHAIN_TYPES,
    NULL_UUID,
    CompactMetadataSkeleton,
    Line,
    MessageSkeleton,
    PreservedMessages,
    PreservedSegment,
    Skeleton,
)
from sessiontree.model.resume import BRIDGE_MS, _bridge
from sessiontree.model.tree import Marks, Tree, build_tree, find_cycles
from sessiontree.storage.jsonl import append_records, format_line, read_records

Record = dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail (instead of hanging the run) if the body loops forever."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"did not finish in {seconds}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def skeleton_of(record: Record) -> Skeleton:
    """The skeleton of an on-disk record, mapped field by field (not through the codec)."""
    metadata = record.get("compactMetadata")
    compact = None
    if isinstance(metadata, dict):
        segment = metadata.get("preservedSegment")
        listed = metadata.get("preservedMessages")
        compact = CompactMetadataSkeleton(
            preservedSegment=PreservedSegment(**segment) if isinstance(segment, dict) else None,
            preservedMessages=PreservedMessages(**listed) if isinstance(listed, dict) else None,
        )
    message = record.get("message")
    result = record.get("toolUseResult")
    return Skeleton(
        type=record.get("type"),
        uuid=record.get("uuid"),
        parentUuid=record.get("parentUuid"),
        logicalParentUuid=record.get("logicalParentUuid"),
        timestamp=record.get("timestamp"),
        isSidechain=record.get("isSidechain"),
        isMeta=record.get("isMeta"),
        isCompactSummary=record.get("isCompactSummary"),
        leafUuid=record.get("leafUuid"),
        explicit=record.get("explicit"),
        subtype=record.get("subtype"),
        message=MessageSkeleton(id=message.get("id")) if isinstance(message, dict) else None,
        sourceToolAssistantUUID=record.get("sourceToolAssistantUUID"),
        toolUseResult=msgspec.Raw(msgspec.json.encode(result))
        if result is not None
        else msgspec.Raw(),
        compactMetadata=compact,
    )


def model_lines(records: list[Record], numbers: list[int] | None = None) -> list[Line]:
    numbers = numbers or list(range(1, len(records) + 1))
    return [
        Line(number, number * 4096, 100, skeleton_of(r))
        for number, r in zip(numbers, records, strict=True)
    ]


def tree_facts(tree: Tree) -> dict[str, Any]:
    """Everything a tree exposes, in comparable form."""
    leaf = tree.resolve_leaf()
    return {
        "numbers": {u: line.number for u, line in tree.nodes.items()},
        "order": list(tree.nodes),
        "parent": dict(tree.parent),
        "children": {k: list(v) for k, v in tree.children.items() if v},
        "marks": msgspec.structs.asdict(tree.marks),
        "compacted": set(tree.compacted),
        "compaction_tail": tree.compaction_tail,
        "leaf": leaf,
        "active_path": tree.active_path(),
        "forks": [(f.uuid, f.children) for f in tree.fork_points()],
        "problems": sorted((p.kind, p.line or 0) for p in tree.problems),
    }


# -- random record sets ------------------------------------------------------------------------

#: Mostly seconds apart (within the 5 s bridge), some far apart, some missing or malformed.
TIMES = [
    None,
    "yesterday",
    *(f"2026-01-01T00:00:{s:02d}.000Z" for s in range(8)),
    "2026-01-01T00:00:20.000Z",
    "2026-01-01T00:01:00.000Z",
]
KINDS = ["user", "assistant", "system", "attachment", "progress"]
OPS = (
    ["next"] * 8
    + ["branch"] * 3
    + ["root", "compact", "compact", "sidechain", "metadata"]
    + ["last-prompt"] * 3
    + ["reset", "explicit", "reply", "reply", "mid-turn"]
)
CORRUPTIONS = ["dangling", "duplicate", "duplicate", "forward"]


@st.composite
def record_sets(draw: st.DrawFn, *, corrupt: bool = True) -> list[Record]:
    """A random transcript: mostly a growing conversation, with every kind of damage."""
    count = draw(st.integers(0, 36))
    ops = OPS + (CORRUPTIONS if corrupt else [])
    records: list[Record] = []
    made: list[str] = []  # chain uuids written so far
    replies: list[str] = []  # the first block of each whole response written

    def chain(uuid: str, parent: str | None, kind: str | None = None) -> Record:
        kind = kind or draw(st.sampled_from(KINDS))
        record: Record = {"type": kind, "uuid": uuid, "parentUuid": parent}
        record["timestamp"] = draw(st.sampled_from(TIMES))
        if kind == "assistant":
            record["message"] = {"id": draw(st.sampled_from(["m1", "m2", "m3"])), "role": "x"}
        elif kind == "user" and draw(st.booleans()):
            record["toolUseResult"] = {"ok": True}
            record["sourceToolAssistantUUID"] = parent
        elif kind == "system":
            subtypes = ["turn_duration", "local_command", "file_snapshot"]
            record["subtype"] = draw(st.sampled_from(subtypes))
        return record

    for index in range(count):
        op = draw(st.sampled_from(ops))
        fresh = f"n{index}"
        last = made[-1] if made else None
        if op == "next":
            records.append(chain(fresh, last))
        elif op == "branch" and made:
            records.append(chain(fresh, draw(st.sampled_from(made)), "user"))
        elif op == "root":
            records.append(chain(fresh, None, "user"))
        elif op == "compact":
            boundary = chain(fresh, None, "system")
            boundary["subtype"] = "compact_boundary"
            boundary["logicalParentUuid"] = last
            summary = f"s{index}"
            metadata: Record = {"trigger": "manual"}
            pick = st.sampled_from([*made, fresh, summary, "ghost"])
            shape = draw(st.sampled_from(["none", "segment", "listed"])) if made else "none"
            if shape == "segment":
                metadata["preservedSegment"] = {
                    "headUuid": draw(pick),
                    "anchorUuid": draw(pick),
                    "tailUuid": draw(pick),
                }
            elif shape == "listed":
                metadata["preservedMessages"] = {
                    "anchorUuid": draw(pick),
                    "uuids": draw(st.lists(pick, max_size=4)),
                }
            boundary["compactMetadata"] = metadata
            records.append(boundary)
            made.append(fresh)
            summary_record = chain(summary, fresh, "user")
            summary_record["isCompactSummary"] = True
            records.append(summary_record)
            made.append(summary)
            continue
        elif op == "sidechain" and made:
            record = chain(fresh, draw(st.sampled_from(made)))
            record["isSidechain"] = True
            records.append(record)
        elif op == "metadata":
            records.append({"type": draw(st.sampled_from(["mode", "ai-title", "x-new"]))})
            continue
        elif op == "reply":
            # one response: blocks chained under each other, sharing a message id, then
            # maybe the tool result answering the last one
            response = f"r{index}"
            parent = last
            for block in range(draw(st.integers(1, 3))):
                uuid = f"{fresh}b{block}"
                record = chain(uuid, parent, "assistant")
                record["message"]["id"] = response
                records.append(record)
                made.append(uuid)
                parent = uuid
            replies.append(f"{fresh}b0")
            if draw(st.booleans()):
                result = chain(f"{fresh}r", parent, "user")
                result["toolUseResult"] = {"ok": True}
                result["sourceToolAssistantUUID"] = parent
                records.append(result)
                made.append(f"{fresh}r")
            continue
        elif op == "mid-turn" and replies:
            # a last-prompt written mid-turn names the first block of a response
            records.append({"type": "last-prompt", "leafUuid": draw(st.sampled_from(replies))})
            continue
        elif op in ("last-prompt", "explicit"):
            leaf = draw(st.sampled_from([*made, "ghost"])) if made else "ghost"
            lp: Record = {"type": "last-prompt", "leafUuid": leaf, "lastPrompt": "p"}
            if op == "explicit":
                lp["explicit"] = True
            records.append(lp)
            continue
        elif op == "reset":
            records.append({"type": "last-prompt", "leafUuid": NULL_UUID, "explicit": True})
            continue
        elif op == "dangling":
            records.append(chain(fresh, f"ghost{index}"))
        elif op == "duplicate" and made:
            # the same uuid again, hung anywhere: may close a loop (even onto itself)
            again = draw(st.sampled_from(made))
            records.append(chain(again, draw(st.sampled_from([*made, None]))))
            continue
        elif op == "forward":
            records.append(chain(fresh, f"n{index + draw(st.integers(0, 3))}"))
        else:
            records.append(chain(fresh, last))
        made.append(fresh)
    return records


def cycles_of(parent: dict[str, str | None]) -> list[set[str]]:
    """The loops of a parent map, found by walking every chain (reference implementation)."""
    loops: list[set[str]] = []
    on_loop: set[str] = set()
    for start in parent:
        seen: list[str] = []
        current: str | None = start
        while current is not None and current in parent and current not in seen:
            seen.append(current)
            current = parent[current]
        if current is not None and current in seen and current not in on_loop:
            loop = set(seen[seen.index(current) :])
            loops.append(loop)
            on_loop |= loop
    return loops


def is_boundary_record(record: Record) -> bool:
    return record.get("type") == "system" and record.get("subtype") == "compact_boundary"


def reference_marks(records: list[Record], *, sidechain_only: bool) -> Marks:
    """What the client notes while reading (the :class:`Marks` docstrings), from the raw
    records alone."""
    marks = Marks()
    for record in records:
        kind = record.get("type")
        if kind == "last-prompt" and record.get("leafUuid") is not None:
            leaf = record["leafUuid"]
            marks.saw_last_prompt = True
            # explicit: said so, or a repeat of an explicit one naming the same leaf
            marks.named_explicit = record.get("explicit") is True or (
                marks.named_explicit and marks.named == leaf
            )
            marks.named = leaf
            continue
        if kind not in CHAIN_TYPES or not record.get("uuid"):
            continue
        if is_boundary_record(record):
            marks.named, marks.named_explicit = None, False
        sidechain = record.get("isSidechain") is True and not sidechain_only
        if sidechain or (kind == "system" and record.get("subtype") == "file_snapshot"):
            continue
        marks.last_row = record["uuid"]
        marks.named_explicit = False  # a record after it: no longer the explicit checkpoint
        timestamp = record.get("timestamp")
        if timestamp is not None and timestamp > marks.newest_timestamp:
            marks.newest_row, marks.newest_timestamp = record["uuid"], timestamp
    return marks


def epoch_ms(timestamp: str | None) -> float:
    if not timestamp:
        return float("-inf")
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return float("-inf")


def moment(tree: Tree, uuid: str) -> float:
    return epoch_ms(tree.skeleton(uuid).timestamp)


def is_boundary(tree: Tree, uuid: str) -> bool:
    skeleton = tree.skeleton(uuid)
    return skeleton.type == "system" and skeleton.subtype == "compact_boundary"


def bridgeable(tree: Tree, uuid: str, other: str) -> bool:
    """``other`` may stand in for ``uuid``'s missing parent: loaded, on the same side,
    not a file snapshot, written at or before it and within the bridge."""
    skeleton = tree.skeleton(other)
    at = moment(tree, uuid)
    return (
        tree.is_loaded(other)
        and tree.is_sidechain(other) == tree.is_sidechain(uuid)
        and not (skeleton.type == "system" and skeleton.subtype == "file_snapshot")
        and at != float("-inf")
        and at - BRIDGE_MS <= moment(tree, other) <= at
    )


def message_at_or_above(tree: Tree, uuid: str) -> str | None:
    """The nearest loaded user/assistant record walking up from ``uuid`` (reference)."""
    seen: set[str] = set()
    current: str | None = uuid
    while current is not None and tree.is_loaded(current) and current not in seen:
        if tree.is_message(current):
            return current
        seen.add(current)
        current = tree.parent.get(current)
    return None


def check_structure(records: list[Record], tree: Tree) -> None:
    """Nodes, problems, links, path_to and fork points."""
    nodes = tree.nodes
    problems = [(p.kind, p.line) for p in tree.problems]
    chain_lines = {
        number: r
        for number, r in enumerate(records, 1)
        if r.get("type") in CHAIN_TYPES and r.get("uuid")
    }
    # nodes: the last line of each uuid, in first-seen order; duplicates reported on every
    # later line
    last_line: dict[str, int] = {}
    duplicates: list[int] = []
    for number, r in chain_lines.items():
        if r["uuid"] in last_line:
            duplicates.append(number)
        last_line[r["uuid"]] = number
    assert {u: line.number for u, line in nodes.items()} == last_line
    assert list(nodes) == list(last_line)  # a later copy keeps the first position
    assert tree.order == {u: i for i, u in enumerate(last_line)}
    assert sorted(n for k, n in problems if k == "duplicate-uuid") == duplicates
    # dangling parents: reported once per kept record whose stored parent is missing
    dangling = sorted(
        n
        for u, n in last_line.items()
        if chain_lines[n].get("parentUuid") is not None
        and chain_lines[n]["parentUuid"] not in nodes
    )
    assert sorted(n for k, n in problems if k == "dangling-parent") == dangling
    # children and parents agree
    for child, parent in tree.parent.items():
        assert child in nodes
        if parent is not None:
            assert child in tree.children.get(parent, []), (child, parent)
    for parent, kids in tree.children.items():
        assert len(kids) == len(set(kids))
        for kid in kids:
            assert tree.parent[kid] == parent
    # cycles: every loop has a member reported, and nothing is reported without a loop
    loops = cycles_of(tree.parent)
    cycle_lines = [n for k, n in problems if k == "cycle"]
    assert len(cycle_lines) == len(loops)
    for loop in loops:
        assert any(nodes[u].number in cycle_lines for u in loop), loop
    # every path_to is a chain that starts at a root, a boundary or a cut
    for end in nodes:
        path = tree.path_to(end)
        assert path and path[-1] == end
        assert len(path) == len(set(path))
        for previous, current in itertools.pairwise(path):
            assert tree.parent[current] == previous
            assert not is_boundary(tree, current)  # the path stops at the nearest one
        first = path[0]
        first_parent = tree.parent[first]
        if not is_boundary(tree, first) and first_parent is not None:
            if first_parent in nodes:
                assert first_parent in path  # cut where a loop closed
                assert any(first in loop for loop in loops)
            else:
                # a stored parent that is missing is reported; a compaction may also
                # re-link a record onto an anchor that does not exist
                stored = tree.skeleton(first).parentUuid
                assert ("dangling-parent", nodes[first].number) in problems or (
                    first_parent != stored
                )
    # the other queries answer, and agree
    for point in tree.fork_points():
        assert len(point.children) >= 2
        assert set(point.children) <= set(tree.main_children(point.uuid))


def check_compaction(records: list[Record], tree: Tree) -> None:
    """What the docstring of model/tree.py promises about compaction, for any input."""
    boundaries = [r["uuid"] for r in records if is_boundary_record(r) and r.get("uuid")]
    assert set(tree.compacted) <= set(tree.nodes)
    if not boundaries:
        assert not tree.compacted and tree.compaction_tail is None
        return
    last = boundaries[-1]
    assert last not in tree.compacted
    # only what was first seen before the last boundary is summarized away
    assert all(tree.order[u] < tree.order[last] for u in tree.compacted)
    with_segment = [
        r
        for r in records
        if is_boundary_record(r)
        and isinstance(r.get("compactMetadata"), dict)
        and (
            r["compactMetadata"].get("preservedSegment") is not None
            or r["compactMetadata"].get("preservedMessages") is not None
        )
    ]
    if not with_segment:  # nothing is re-linked, nothing is summarized away
        assert not tree.compacted and tree.compaction_tail is None
    tail = tree.compaction_tail
    if tail is not None:
        assert tree.is_loaded(tail)
        # a message that hung on a summarized record hangs on the tail now
        for uuid in tree.nodes:
            if tree.is_loaded(uuid) and tree.is_message(uuid):
                assert tree.parent[uuid] not in tree.compacted, uuid


def childless_messages(tree: Tree) -> list[str]:
    """Loaded prompts and replies with nothing loaded below them: always leaf messages."""
    return [
        u
        for u in tree.nodes
        if tree.is_loaded(u)
        and tree.is_message(u)
        and not any(tree.is_loaded(c) for c in tree.children.get(u, ()))
    ]


def check_leaf(tree: Tree) -> None:
    """The leaf, for any input: a loaded main-chain message (but for rule 3's last
    resort), and the rules of model/resume.py wherever they leave no choice. None is
    allowed where the client finds no conversation (a sidechain message chosen, leaf
    messages without a parseable timestamp)."""
    leaf = tree.resolve_leaf()
    marks = tree.marks
    assert leaf is None or (tree.is_loaded(leaf) and not tree.is_sidechain(leaf)), leaf
    if marks.cleared:
        # an explicit null last-prompt with nothing written after it: rewound to empty
        assert leaf is None
        return
    if leaf is not None and not (tree.is_loaded(leaf) and tree.is_message(leaf)):
        # rule 3's last resort (the real client too resumes a transcript of system
        # records only): only when no prompt or reply is a leaf
        assert not childless_messages(tree), leaf
    named = marks.named
    if (
        named is not None
        and tree.is_loaded(named)
        and tree.is_message(named)
        and not tree.is_sidechain(named)
        and not tree.children.get(named)
    ):
        # a childless prompt or reply named last: a live leaf, whatever the compaction
        # (rule 1: never stale; rule 2: always among the leaf messages, and preferred)
        untimed = epoch_ms(tree.skeleton(named).timestamp) == float("-inf")
        assert leaf == named or (leaf is None and untimed)
    if (
        tree.compaction_tail is None
        and marks.saw_last_prompt
        and (named is None or not tree.is_loaded(named))
        and marks.last_row is not None
    ):
        # rule 1, an unusable last-prompt (the rewind marker, a record that is gone):
        # the record written last itself, no descent below it
        above = message_at_or_above(tree, marks.last_row)
        if above is not None:
            # a sidechain message there: the client finds no conversation
            assert leaf == (None if tree.is_sidechain(above) else above)
    if (
        marks.named_explicit
        and named is not None
        and tree.is_loaded(named)
        and not tree.is_sidechain(named)
    ):
        # an explicit checkpoint nothing was written after: taken even when it has
        # children or a compaction re-linked a segment
        above = message_at_or_above(tree, named)
        if above is not None and not tree.is_sidechain(above):
            assert leaf == above


def _response_of(tree: Tree, uuid: str) -> str | None:
    skeleton = tree.skeleton(uuid)
    if skeleton.type != "assistant" or skeleton.message is None:
        return None
    return skeleton.message.id or None


def check_active_path(tree: Tree) -> None:
    """The path, for any input (model/resume.py): no repeats, contains the leaf; its chain
    (the path less what responses recovered) goes up over effective parents except where
    a missing parent is bridged (within 5 s, to the newest earlier record) and ends at
    the leaf; every response on the chain is whole (all records of its message id, and
    the tool results hanging on them), the recovered records each after their
    response's first block on the chain; then the leaf's non-message descendants."""
    leaf = tree.resolve_leaf()
    path = tree.active_path()
    if leaf is None:
        assert path == []
        return
    assert len(path) == len(set(path))
    assert leaf in path
    assert all(u in tree.nodes for u in path)
    # the chain (checked link by link below), and what its responses bring back: their
    # other blocks and their tool results
    chain = tree.path_to(leaf, bridge=lambda uuid, used: _bridge(tree, uuid, used))
    responses: dict[str, set[str]] = {}
    for uuid in tree.nodes:
        response = _response_of(tree, uuid) if tree.is_loaded(uuid) else None
        if response is not None:
            responses.setdefault(response, set()).add(uuid)
    at = path.index(leaf)
    chain_responses = {r for u in chain if (r := _response_of(tree, u)) is not None}
    whole: set[str] = set()
    for response in chain_responses:
        blocks = responses.get(response, set())
        whole |= blocks
        whole |= {
            c
            for b in blocks
            for c in tree.children.get(b, ())
            if tree.is_loaded(c) and tree.skeleton(c).type == "user" and not tree.is_turn(c)
        }
    messages_after = [u for u in path[at + 1 :] if tree.is_message(u)]
    others = path[at + 1 + len(messages_after) :]
    assert not any(tree.is_message(u) for u in others)
    prefix = [u for u in path[: at + 1] if u in chain]
    assert prefix == chain
    recovered = [u for u in path if u not in chain and u not in others]
    # every record of the chain's responses is on the path, and nothing else is added
    assert set(recovered) == whole - set(chain), (set(recovered), whole - set(chain))
    for uuid in recovered:  # after the first block of a response on the chain
        firsts = [i for i, u in enumerate(path) if u in chain and _response_of(tree, u)]
        assert firsts and firsts[0] < path.index(uuid), uuid
    # up to the leaf: parents, or a bridge over a missing (or summarized, or looping) one
    for index in range(1, len(prefix)):
        previous, current = prefix[index - 1], prefix[index]
        assert not is_boundary(tree, current)  # the path stops at the nearest boundary
        parent = tree.parent[current]
        if parent == previous:
            continue
        used = set(prefix[index:])
        assert parent is not None, (previous, current)
        assert not tree.is_loaded(parent) or parent in used, (previous, current, parent)
        assert previous not in used
        assert bridgeable(tree, current, previous), (previous, current)
        newer = [
            o
            for o in tree.nodes
            if o not in used
            and bridgeable(tree, current, o)
            and moment(tree, o) > moment(tree, previous)
        ]
        assert not newer, (current, previous, newer)  # the newest one before it
    first = prefix[0]
    parent = tree.parent[first]
    if not is_boundary(tree, first) and parent is not None:
        # the walk ended on a missing (summarized, looping) parent nothing could bridge
        assert not tree.is_loaded(parent) or parent in prefix
        assert not [o for o in tree.nodes if o not in prefix and bridgeable(tree, first, o)]
    # ... then what hangs below the leaf that is not a message (turn ends, attachments),
    # not through a record already on the path (a loop, or a bridge, may have put one
    # there)
    on_path = set(chain) | set(recovered)
    below: set[str] = set()
    queue = [leaf]
    while queue:
        for child in tree.children.get(queue.pop(), ()):
            if (
                child not in below
                and child not in on_path
                and tree.is_loaded(child)
                and not tree.is_message(child)
            ):
                below.add(child)
                queue.append(child)
    assert set(others) == below
    stamps = [tree.skeleton(u).timestamp or "" for u in others]
    assert stamps == sorted(stamps)


def check_branch_paths(tree: Tree) -> None:
    """What resuming would send were a record the leaf (what a fork at it copies and its
    branch's page shows): of the leaf resumed, the active path; of any record, a path
    with no repeats that holds it and every response on it whole (each record of its
    message id and each tool result on one; a record a compaction summarized away is
    taken with the records it summarized)."""
    leaf = tree.resolve_leaf()
    if leaf is not None:
        assert tree.branch_path(leaf) == tree.active_path()
    for uuid in list(tree.nodes)[:30]:
        path = tree.branch_path(uuid)
        assert len(path) == len(set(path)) and uuid in path, uuid
        summarized = tree.compacted if tree.is_loaded(uuid) else frozenset()
        responses = {r for u in path if (r := _response_of(tree, u)) is not None}
        for other in tree.nodes:
            if other in summarized or _response_of(tree, other) not in responses:
                continue
            assert other in path, (uuid, other)
            for child in tree.children.get(other, ()):
                if child not in summarized and tree.skeleton(child).type == "user":
                    assert tree.is_turn(child) or child in path, (uuid, child)


def check_tree(records: list[Record], tree: Tree) -> None:
    check_structure(records, tree)
    chain = [r for r in records if r.get("type") in CHAIN_TYPES and r.get("uuid")]
    assert tree.sidechain_only == (bool(chain) and all(r.get("isSidechain") is True for r in chain))
    # (records the uuid of a later copy replaced do not count: duplicates are generated)
    marked = [u for u, line in tree.nodes.items() if tree.skeleton(u).isSidechain is True]
    assert tree.sidechain_records == len(marked)
    if tree.acyclic:
        assert not find_cycles(tree.nodes, tree.parent)
    assert tree.marks == reference_marks(records, sidechain_only=tree.sidechain_only)
    check_compaction(records, tree)
    check_leaf(tree)
    check_active_path(tree)
    check_branch_paths(tree)


@settings(max_examples=300, deadline=None)
@given(record_sets())
def test_tree_invariants_hold_on_any_record_set(records: list[Record]) -> None:
    with time_limit(5):
        tree = build_tree("t.jsonl", model_lines(records))
        check_tree(records, tree)


@settings(max_examples=100, deadline=None)
@given(record_sets(corrupt=False))
def test_clean_record_sets_report_no_cycles_or_duplicates(records: list[Record]) -> None:
    with time_limit(5):
        tree = build_tree("t.jsonl", model_lines(records))
    kinds = {p.kind for p in tree.problems}
    # only a preserved segment naming arbitrary records may close a loop
    relinks = any(
        isinstance(r.get("compactMetadata"), dict)
        and (
            r["compactMetadata"].get("preservedSegment")
            or r["compactMetadata"].get("preservedMessages")
        )
        for r in records
    )
    assert "duplicate-uuid" not in kinds
    assert "dangling-parent" not in kinds
    if not relinks:
        assert "cycle" not in kinds
    check_tree(records, tree)


# -- replay from disk equals the model ----------------------------------------------------------


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(record_sets(), st.data())
def test_replay_from_disk_equals_the_model(records: list[Record], data: st.DataObject) -> None:
    folder = Path(tempfile.mkdtemp())
    try:
        path = folder / "s.jsonl"
        path.touch()
        numbers: list[int] = []
        torn_lines: list[int] = []
        number = 0
        position = 0
        while position < len(records):
            size = data.draw(st.integers(1, 6), label="batch")
            batch = records[position : position + size]
            append_records(path, batch)
            numbers.extend(range(number + 1, number + 1 + len(batch)))
            number += len(batch)
            position += size
            if data.draw(st.booleans(), label="torn"):
                # a writer died mid-line: half a record, no newline
                whole = format_line({"type": "user", "uuid": "torn", "parentUuid": None})
                cut = data.draw(st.integers(1, len(whole) - 2), label="cut")
                with path.open("ab") as handle:
                    handle.write(whole[:cut])
                number += 1
                torn_lines.append(number)
        transcript = Transcript.open(path)
        model = build_tree(str(path), model_lines(records, numbers))
        disk = tree_facts(transcript.tree)
        assert disk == tree_facts(model)
        assert [ln.number for ln in transcript.scan.lines] == numbers
        scan_problems = [(p.kind, p.line) for p in transcript.scan.problems]
        expected = [("bad-json", n) for n in torn_lines]
        if torn_lines and torn_lines[-1] == number:
            expected[-1] = ("torn-line", number)
        assert scan_problems == expected
        assert transcript.leaf == model.resolve_leaf()
        assert transcript.active_path == model.active_path()
        # every record reads back whole, exactly as appended
        assert [r.raw for r in read_records(path, transcript.scan.lines)] == records
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- a client model: prompt, rewind, compact, fork ----------------------------------


def normalize(messages: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    out: list[tuple[str, list[Any]]] = []
    for message in messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts = [("text", b["text"].strip()) if b.get("type") == "text" else b for b in blocks]
        texts = [t for t in texts if t != ("text", "")]
        if not texts:
            continue
        if out and out[-1][0] == message["role"]:
            out[-1][1].extend(texts)
        else:
            out.append((message["role"], texts))
    return out


SESSION = "5e551011-0000-4000-8000-000000000000"


class ClientModel(RuleBasedStateMachine):
    """Writes what the real client writes, and knows what resuming must give."""

    @initialize()
    def start(self) -> None:
        self.folder = Path(tempfile.mkdtemp())
        self.path = self.folder / f"{SESSION}.jsonl"
        self.ids = itertools.count()
        self.written: list[Record] = []
        self.leaf: str | None = None  # expected leaf: the last prompt or reply resumed
        self.active: list[str] = []  # expected active path (it may go on past the leaf)
        self.messages: list[dict[str, Any]] = []  # expected context, before merging
        self.prompts: list[tuple[str, int, int]] = []  # (uuid, path index, message index)
        self.turn: tuple[str, str] | None = None  # (assistant, turn end) of the last turn
        self.forks: list[tuple[Path, str, list[str]]] = []

    def teardown(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    # writing

    def tip(self) -> str | None:
        """The last record on the active path: what the next record hangs on and what a
        ``last-prompt`` names (a turn end, not the reply above it, as the client does)."""
        return self.active[-1] if self.active else None

    def new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self.ids):04d}"

    def stamp(self) -> str:
        tick = len(self.written)
        return f"2026-01-01T{tick // 3600:02d}:{tick // 60 % 60:02d}:{tick % 60:02d}.000Z"

    def write(self, *records: Record) -> None:
        stamped = []
        for record in records:
            if "uuid" in record:
                record = {**record, "timestamp": self.stamp(), "sessionId": SESSION}
            stamped.append(record)
            self.written.append(record)
        # the client writes its own lines: plain appends, one whole line per record
        with self.path.open("ab") as handle:
            handle.write(b"".join(format_line(r) for r in stamped))

    def do_turn(self, parent: str | None, *, last_prompt: bool, reset: bool = False) -> None:
        prompt, answer, end = self.new_id("p"), self.new_id("a"), self.new_id("t")
        text = f"prompt {prompt}"
        self.write(
            {"type": "file-history-snapshot", "messageId": prompt, "snapshot": {}},
            {
                "type": "user",
                "uuid": prompt,
                "parentUuid": parent,
                "message": {"role": "user", "content": text},
            },
        )
        if reset:
            self.write({"type": "last-prompt", "leafUuid": NULL_UUID, "explicit": True})
        self.write(
            {
                "type": "assistant",
                "uuid": answer,
                "parentUuid": prompt,
                "message": {
                    "id": f"msg-{answer}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"answer {answer}"}],
                },
            },
            {"type": "system", "subtype": "turn_duration", "uuid": end, "parentUuid": answer},
        )
        if last_prompt:
            self.write({"type": "last-prompt", "leafUuid": end, "lastPrompt": text})
        self.prompts.append((prompt, len(self.active), len(self.messages)))
        self.active += [prompt, answer, end]
        self.messages += [
            {"role": "user", "content": text},
            {"role": "assistant", "content": f"answer {answer}"},
        ]
        self.leaf = answer  # the reply above the turn end
        self.turn = (answer, end)

    # rules

    @rule(last_prompt=st.booleans())
    def prompt(self, last_prompt: bool) -> None:
        self.do_turn(self.tip(), last_prompt=last_prompt)

    @precondition(lambda self: bool(self.prompts))
    @rule(data=st.data(), last_prompt=st.booleans())
    def rewind_and_prompt(self, data: st.DataObject, last_prompt: bool) -> None:
        """/rewind → Restore conversation to an earlier prompt, then a new prompt."""
        _, at, message_at = data.draw(st.sampled_from(self.prompts), label="rewind to")
        parent = self.active[at - 1] if at > 0 else None
        del self.active[at:]
        del self.messages[message_at:]
        self.prompts = [p for p in self.prompts if p[1] < at]
        self.do_turn(parent, last_prompt=last_prompt, reset=True)

    @precondition(lambda self: self.turn is not None)
    @rule(preserve=st.booleans())
    def compact(self, preserve: bool) -> None:
        """/compact: a boundary, a summary, and (06-style) the last answer kept."""
        assert self.turn is not None
        head, tail = self.turn
        boundary, summary = self.new_id("b"), self.new_id("s")
        metadata: Record = {"trigger": "manual", "preTokens": 1}
        if preserve:
            metadata["preservedSegment"] = {
                "headUuid": head,
                "anchorUuid": summary,
                "tailUuid": tail,
            }
        summary_text = f"This session is being continued. {summary}"
        self.write(
            {"type": "last-prompt", "leafUuid": self.tip(), "lastPrompt": "x"},
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": boundary,
                "parentUuid": None,
                "logicalParentUuid": self.tip(),
                "content": "Compacted",
                "compactMetadata": metadata,
            },
            {
                "type": "user",
                "uuid": summary,
                "parentUuid": boundary,
                "isCompactSummary": True,
                "message": {"role": "user", "content": summary_text},
            },
        )
        self.active = [boundary, summary]
        self.messages = [{"role": "user", "content": summary_text}]
        if preserve:
            command = self.new_id("c")
            stdout = f"<local-command-stdout>Compacted {command}</local-command-stdout>"
            self.write(
                {
                    "type": "system",
                    "subtype": "local_command",
                    "uuid": command,
                    "parentUuid": summary,
                    "content": stdout,
                },
            )
            answer = next(r for r in self.written if r.get("uuid") == head)
            self.active += [head, tail, command]
            self.messages += [
                {"role": "assistant", "content": answer["message"]["content"]},
                {"role": "user", "content": stdout},
            ]
            self.leaf = head  # the kept reply: the command output below it is no message
        else:
            self.leaf = summary
        # on exit the client names the live leaf
        self.write({"type": "last-prompt", "leafUuid": self.tip(), "lastPrompt": "x"})
        self.prompts = []
        self.turn = None

    @precondition(lambda self: self.leaf is not None and len(self.forks) < 2)
    @rule()
    def fork(self) -> None:
        """/fork: the conversation copied to a new session file, same uuids."""
        session = f"f0000000-0000-4000-8000-{len(self.forks):012d}"
        path = self.folder / f"{session}.jsonl"
        copied = [
            {**r, "sessionId": session} if "uuid" in r else r
            for r in self.written
            if r.get("type") != "last-prompt"
        ]
        assert self.leaf is not None
        append_records(path, [*copied, {"type": "last-prompt", "leafUuid": self.tip()}])
        self.forks.append((path, self.leaf, list(self.active)))

    # invariants

    @invariant()
    def resuming_gives_the_model(self) -> None:
        if not self.path.exists():
            return
        transcript = Transcript.open(self.path)
        assert transcript.problems == []
        assert transcript.leaf == self.leaf
        assert transcript.active_path == self.active
        first = transcript.tree.skeleton(self.active[0]) if self.active else None
        if first is not None:
            assert first.parentUuid is None  # the leaf reaches a root or a boundary
        for previous, current in itertools.pairwise(self.active):
            assert transcript.tree.parent[current] == previous
        # the leaf is the last prompt or reply on the path; only turn ends follow it
        on_path = [u for u in self.active if transcript.tree.is_message(u)]
        assert (on_path[-1] if on_path else None) == self.leaf
        expected = normalize(self.messages)
        last_row = next(
            (r for r in reversed(transcript.active_records()) if r.type != "system"), None
        )
        if (
            expected
            and expected[-1][0] == "user"
            and last_row is not None
            and last_row.type == "user"
        ):
            # a conversation whose path ends at a prompt, a tool result, a meta row or a
            # compact summary, unanswered, gets the client's placeholder reply
            expected.append(("assistant", [("text", "No response requested.")]))
        assert normalize(transcript.context()) == expected

    @invariant()
    def forks_resume_where_they_were_made(self) -> None:
        for path, leaf, active in self.forks:
            fork = Transcript.open(path)
            assert fork.problems == []
            assert fork.leaf == leaf
            assert fork.active_path == active


ClientModel.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestClientModel = ClientModel.TestCase
