"""Property tests for the tree: random transcripts, corrupt ones included, and a client model.

Three layers:

* random record sets (branches, rewinds, compactions with preserved segments, last-prompt
  records incl. the all-zero reset marker, sidechains, plus corruption: dangling parents,
  duplicate uuids, cycles) built straight into skeletons: the invariants of
  ``build_tree`` / ``resolve_leaf`` / ``path_to`` hold, checked against references
  computed here, and building always ends;
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

from sessiontree.model.records import (
    CHAIN_TYPES,
    NULL_UUID,
    CompactMetadataSkeleton,
    Line,
    MessageSkeleton,
    PreservedSegment,
    Skeleton,
)
from sessiontree.model.tree import Tree, build_tree
from sessiontree.storage.jsonl import append_records, format_line, read_records
from sessiontree.transcript import Transcript

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
        compact = CompactMetadataSkeleton(
            preservedSegment=PreservedSegment(**segment) if isinstance(segment, dict) else None
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
        "parent": dict(tree.parent),
        "children": {k: list(v) for k, v in tree.children.items() if v},
        "last_prompt_leaves": list(tree.last_prompt_leaves),
        "leaf": leaf,
        "path": tree.path_to(leaf) if leaf is not None else [],
        "forks": [(f.uuid, f.children) for f in tree.fork_points()],
        "problems": sorted((p.kind, p.line or 0) for p in tree.problems),
    }


# -- random record sets ------------------------------------------------------------------------

TIMES = [None, *(f"2026-01-01T00:00:{s:02d}.000Z" for s in range(8))]
KINDS = ["user", "assistant", "system", "attachment", "progress"]
OPS = (
    ["next"] * 8
    + ["branch"] * 3
    + ["root", "compact", "compact", "sidechain", "metadata"]
    + ["last-prompt"] * 3
    + ["reset"]
)
CORRUPTIONS = ["dangling", "duplicate", "duplicate", "forward"]


@st.composite
def record_sets(draw: st.DrawFn, *, corrupt: bool = True) -> list[Record]:
    """A random transcript: mostly a growing conversation, with every kind of damage."""
    count = draw(st.integers(0, 36))
    ops = OPS + (CORRUPTIONS if corrupt else [])
    records: list[Record] = []
    made: list[str] = []  # chain uuids written so far

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
            record["subtype"] = draw(st.sampled_from(["turn_duration", "local_command"]))
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
            if made and draw(st.booleans()):
                pick = st.sampled_from([*made, fresh, summary, "ghost"])
                metadata["preservedSegment"] = {
                    "headUuid": draw(pick),
                    "anchorUuid": draw(pick),
                    "tailUuid": draw(pick),
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
        elif op == "last-prompt":
            leaf = draw(st.sampled_from([*made, "ghost"])) if made else "ghost"
            records.append({"type": "last-prompt", "leafUuid": leaf, "lastPrompt": "p"})
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


def summarized_away(records: list[Record], tree: Tree) -> set[str]:
    """Records written before the last compact boundary, minus its preserved segment
    (walked by stored parents from tail to head): never a leaf (model/tree.py)."""
    boundaries = [
        r
        for r in records
        if r.get("type") == "system" and r.get("subtype") == "compact_boundary" and r.get("uuid")
    ]
    if not boundaries:
        return set()
    last = boundaries[-1]
    segment = (last.get("compactMetadata") or {}).get("preservedSegment") or {}
    kept: set[str] = set()
    current = segment.get("tailUuid")
    while current is not None and current in tree.nodes and current not in kept:
        kept.add(current)
        if current == segment.get("headUuid"):
            break
        current = tree.skeleton(current).parentUuid
    line = tree.nodes[last["uuid"]].number
    return {u for u, ln in tree.nodes.items() if ln.number < line and u not in kept}


def reference_leaf(records: list[Record], tree: Tree) -> tuple[str | None, str | None]:
    """(default leaf, named leaf or None) by the documented rules (model/tree.py), computed
    from the raw records and the tree's parent map alone."""
    away = summarized_away(records, tree)
    kids: dict[str, list[str]] = {u: [] for u in tree.nodes}
    for child, parent in tree.parent.items():
        if parent in kids and not tree.is_sidechain(child):
            kids[parent].append(child)
    main = [u for u in tree.nodes if not tree.is_sidechain(u) and u not in away]
    if not main:
        return None, None
    start = max(main, key=lambda u: tree.nodes[u].number)
    below: set[str] = set()
    stack = [start]
    while stack:
        uuid = stack.pop()
        if uuid not in below:
            below.add(uuid)
            stack.extend(kids[uuid])
    leaves = [u for u in below if not kids[u]]
    default = (
        max(leaves, key=lambda u: (tree.skeleton(u).timestamp or "", tree.nodes[u].number))
        if leaves
        else start
    )
    named: list[str] = []
    for record in records:
        if record.get("type") == "last-prompt" and record.get("leafUuid"):
            named = [] if record["leafUuid"] == NULL_UUID else [*named, record["leafUuid"]]
    existing = [u for u in named if u in tree.nodes and not tree.is_sidechain(u) and u not in away]
    return default, (existing[-1] if existing else None)


def continues(tree: Tree, record: str, child: str) -> bool:
    """``child`` is more of ``record``'s response: its next block, or a tool result."""
    mine, theirs = tree.skeleton(record), tree.skeleton(child)
    mine_id = mine.message.id if mine.message else None
    theirs_id = theirs.message.id if theirs.message else None
    same_response = (
        mine.type == "assistant" == theirs.type and mine_id is not None and mine_id == theirs_id
    )
    tool_result = theirs.type == "user" and not tree.is_turn(child)
    return same_response or (tool_result and (mine.type == "assistant" or not tree.is_turn(record)))


def is_boundary(tree: Tree, uuid: str) -> bool:
    skeleton = tree.skeleton(uuid)
    return skeleton.type == "system" and skeleton.subtype == "compact_boundary"


def check_tree(records: list[Record], tree: Tree) -> None:
    nodes = tree.nodes
    problems = [(p.kind, p.line) for p in tree.problems]
    chain_lines = {
        number: r
        for number, r in enumerate(records, 1)
        if r.get("type") in CHAIN_TYPES and r.get("uuid")
    }
    # nodes: the last line of each uuid; duplicates reported on every later line
    last_line: dict[str, int] = {}
    duplicates: list[int] = []
    for number, r in chain_lines.items():
        if r["uuid"] in last_line:
            duplicates.append(number)
        last_line[r["uuid"]] = number
    assert {u: line.number for u, line in nodes.items()} == last_line
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
    # the leaf
    leaf = tree.resolve_leaf()
    away = summarized_away(records, tree)
    assert set(tree.compacted) == away
    main_nodes = [u for u in nodes if not tree.is_sidechain(u) and u not in away]
    default, named = reference_leaf(records, tree)
    assert (leaf is None) == (not main_nodes)
    assert tree.default_leaf() == default
    if leaf is not None:
        assert default is not None
        assert leaf in nodes
        assert not tree.is_sidechain(leaf)
        if named is None or named in tree.path_to(default):
            assert leaf == default
            if tree.main_children(leaf):  # only when everything below the start loops
                assert leaf == max(main_nodes, key=lambda u: nodes[u].number)
                assert cycle_lines
        else:
            # the named record, completed: the rest of its response and its tool results
            path = tree.path_to(leaf)
            assert named in path
            completion = path[path.index(named) :]
            for previous, current in itertools.pairwise(completion):
                assert continues(tree, previous, current), (previous, current)
            if not any(leaf in loop for loop in loops):  # a loop stops the completion early
                assert not any(
                    continues(tree, leaf, c) and c not in completion
                    for c in tree.main_children(leaf)
                )
    # every path is a chain that starts at a root, a boundary or a cut
    for end in [leaf, *tree.leaves()]:
        if end is None:
            continue
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
                assert ("dangling-parent", nodes[first].number) in problems
    # the other queries answer, and agree
    active = tree.path_to(leaf) if leaf is not None else []
    off = tree.off_path_leaves(active)
    assert not set(off) & set(active)
    for point in tree.fork_points():
        assert len(point.children) >= 2
        assert set(point.children) <= set(tree.main_children(point.uuid))


@settings(max_examples=300, deadline=None)
@given(record_sets())
def test_tree_invariants_hold_on_any_record_set(records: list[Record]) -> None:
    with time_limit(5):
        tree = build_tree("t.jsonl", model_lines(records))
        check_tree(records, tree)


@settings(max_examples=100, deadline=None)
@given(record_sets(corrupt=False))
def test_clean_record_sets_report_no_cycles_or_duplicates(records: list[Record]) -> None:
    tree = build_tree("t.jsonl", model_lines(records))
    kinds = {p.kind for p in tree.problems}
    # only a preserved segment naming arbitrary records may close a loop
    relinks = any(
        isinstance(r.get("compactMetadata"), dict) and r["compactMetadata"].get("preservedSegment")
        for r in records
    )
    assert "duplicate-uuid" not in kinds
    assert "dangling-parent" not in kinds
    if not relinks:
        assert "cycle" not in kinds
        assert (tree.resolve_leaf() is None) == (not tree.nodes)
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
        assert transcript.active_path == tree_facts(model)["path"]
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
        self.leaf: str | None = None
        self.active: list[str] = []  # expected active path
        self.messages: list[dict[str, Any]] = []  # expected context, before merging
        self.prompts: list[tuple[str, int, int]] = []  # (uuid, path index, message index)
        self.turn: tuple[str, str] | None = None  # (assistant, turn end) of the last turn
        self.forks: list[tuple[Path, str, list[str]]] = []

    def teardown(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    # writing

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
        self.leaf = end
        self.turn = (answer, end)

    # rules

    @rule(last_prompt=st.booleans())
    def prompt(self, last_prompt: bool) -> None:
        self.do_turn(self.leaf, last_prompt=last_prompt)

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
            {"type": "last-prompt", "leafUuid": self.leaf, "lastPrompt": "x"},
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": boundary,
                "parentUuid": None,
                "logicalParentUuid": self.leaf,
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
            self.leaf = command
        else:
            self.leaf = summary
        # on exit the client names the live leaf
        self.write({"type": "last-prompt", "leafUuid": self.leaf, "lastPrompt": "x"})
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
        append_records(path, [*copied, {"type": "last-prompt", "leafUuid": self.leaf}])
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
        expected = normalize(self.messages)
        if expected and expected[-1][0] == "user":
            # a conversation that stops unanswered gets the client's placeholder reply
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
