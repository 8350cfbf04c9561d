"""The conversation tree of one transcript: records, links, compaction, branches.

Pure: built from the skeletons of a scan (:class:`~sessiontree.model.records.Line`), it
does no I/O. Which leaf the client resumes and the path it sends live in
:mod:`sessiontree.model.resume` (which reads a tree through its own protocol, so the two
modules do not import each other); this module holds what that rests on, as Claude Code
2.1.328 loads a transcript:

* uuids are kept in first-seen order; a later copy of a uuid replaces the record (and
  its parent) but keeps the first position, as a JavaScript ``Map`` does;
* the last compact boundary with a preserved segment re-links it on load: the segment's
  records chain from the anchor, and what hung on the anchor hangs on the segment's
  tail. Records before the last boundary that it does not preserve are *summarized
  away*: kept on disk and in this tree, but not loaded by the client, and a prompt or
  reply that hung on one of them hangs on the tail instead;
* while reading, the client notes the last record written, the newest by timestamp,
  and the newest ``last-prompt`` (a compact boundary forgets it; any later record
  clears its ``explicit`` flag). :class:`~sessiontree.model.resume.Marks` holds those notes.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

import msgspec

from sessiontree.errors import Ambiguous, NotFound
from sessiontree.model.records import CHAIN_TYPES, Line, Problem, Skeleton, TreeFields
from sessiontree.model.resume import Marks as Marks
from sessiontree.model.resume import active_path, branch_path, resolve_leaf


class ForkPoint(msgspec.Struct, frozen=True):
    """A record where the conversation branched: two or more turns hang on it."""

    uuid: str
    children: tuple[str, ...]


class Head(msgspec.Struct, frozen=True):
    """What the lines before some point of a transcript leave for building the rest:
    the client's notes so far (:class:`~sessiontree.model.resume.Marks`), whether a
    compact boundary among them preserved a segment, and whether every chain record
    among them is a sidechain one (True when there is none).

    :func:`build_tree` of the rest with this head gives the notes and the compaction of
    the whole file; :mod:`sessiontree.model.tail` says when the rest's tree resumes as the
    whole file's does."""

    marks: Marks
    segment: bool
    all_sidechain: bool


class Tree(msgspec.Struct, dict=True):
    """uuid → line, effective parents (after re-links) and children, in file order."""

    path: str
    nodes: dict[str, Line] = msgspec.field(default_factory=dict)
    parent: dict[str, str | None] = msgspec.field(default_factory=dict)
    children: dict[str, list[str]] = msgspec.field(default_factory=dict)
    marks: Marks = msgspec.field(default_factory=Marks)
    #: Found while building: duplicate uuids, dangling parents.
    build_problems: list[Problem] = msgspec.field(default_factory=list)
    #: A subagent's own transcript is all sidechain: then its records are the main chain.
    sidechain_only: bool = False
    #: How many of :attr:`nodes` are marked ``isSidechain`` (what :meth:`is_sidechain`
    #: reads, but for :attr:`sidechain_only`).
    sidechain_records: int = 0
    #: Known to hold no loop: each record's parent was read before it and no uuid came
    #: twice (so every walk up runs back through the file), and nothing was re-linked.
    acyclic: bool = False
    #: Records summarized away by the last compact boundary (see the module docstring).
    compacted: frozenset[str] = frozenset()
    #: The preserved segment's tail when the last boundary re-linked one, else None.
    compaction_tail: str | None = None
    #: Whether the last boundary summarized away what came before it (see
    #: :func:`_apply_compaction`); the records it preserved, in order.
    compaction_applied: bool = False
    preserved: tuple[str, ...] = ()
    #: The record the preserved segment was re-linked below (when one was).
    compaction_anchor: str | None = None
    #: Indexes the readers build once per tree, by name (the timestamp bridge's).
    memo: dict[str, Any] = msgspec.field(default_factory=dict)

    # -- building ---------------------------------------------------------------------

    def _set_parent(self, uuid: str, new_parent: str | None) -> None:
        old = self.parent.get(uuid)
        if old is not None and uuid in self.children.get(old, ()):
            self.children[old].remove(uuid)
        self.parent[uuid] = new_parent
        if new_parent is not None:
            siblings = self.children.setdefault(new_parent, [])
            siblings.append(uuid)
            siblings.sort(key=lambda u: self.nodes[u].number)

    def _move_all(self, uuids: Iterable[str], new_parent: str) -> None:
        """:meth:`_set_parent` for many records at once: each old parent's children
        filtered once and the new parent's sorted once, not once per record (a compaction
        anchor with thousands of children made the re-link quadratic)."""
        moved = [u for u in dict.fromkeys(uuids) if self.parent.get(u) != new_parent]
        if not moved:
            return
        leaving: dict[str, set[str]] = {}
        for uuid in moved:
            old = self.parent.get(uuid)
            if old is not None:
                leaving.setdefault(old, set()).add(uuid)
            self.parent[uuid] = new_parent
        for old, gone in leaving.items():
            if old in self.children:
                self.children[old] = [c for c in self.children[old] if c not in gone]
        siblings = self.children.setdefault(new_parent, [])
        siblings.extend(moved)
        siblings.sort(key=lambda u: self.nodes[u].number)

    # -- queries ----------------------------------------------------------------------

    @cached_property
    def problems(self) -> list[Problem]:
        """Everything wrong with the links; cycles are looked for only when asked."""
        cycles = [
            Problem("cycle", self.path, self.nodes[u].number, f"parent chain of {u} loops")
            for u in ([] if self.acyclic else find_cycles(self.nodes, self.parent))
        ]
        return [*self.build_problems, *cycles]

    @cached_property
    def order(self) -> dict[str, int]:
        """Each uuid's first-seen position (the client's ``Map`` order)."""
        return {uuid: index for index, uuid in enumerate(self.nodes)}

    def skeleton(self, uuid: str) -> Skeleton:
        skeleton = self.nodes[uuid].skeleton
        assert skeleton is not None  # only decoded lines become nodes
        return skeleton

    def is_loaded(self, uuid: str) -> bool:
        """In the client's view of the transcript: present, not summarized away."""
        return uuid in self.nodes and uuid not in self.compacted

    def is_sidechain(self, uuid: str) -> bool:
        """Off the main conversation (an inline subagent chain of an older client)."""
        return not self.sidechain_only and self.skeleton(uuid).isSidechain is True

    def is_message(self, uuid: str) -> bool:
        """A user or assistant record (what a conversation is made of)."""
        return self.skeleton(uuid).type in ("user", "assistant")

    def main_children(self, uuid: str) -> list[str]:
        return [c for c in self.children.get(uuid, ()) if not self.is_sidechain(c)]

    def leaves(self) -> list[str]:
        """Main-chain records with no children, in file order."""
        children, nodes = self.children, self.nodes
        found = [
            u
            for u in nodes
            if not (u in children and self.main_children(u)) and not self.is_sidechain(u)
        ]
        found.sort(key=lambda u: nodes[u].number)
        return found

    def path_to(
        self, leaf: str, *, bridge: Callable[[str, set[str]], str | None] | None = None
    ) -> list[str]:
        """Root-to-leaf uuids over effective parents; the root is a parentless record or a
        compact boundary. Where a parent is missing, summarized away or already on the
        path (a loop), ``bridge(uuid, used)`` may name a stand-in; without one the path
        starts there."""
        chain: list[str] = []
        used: set[str] = set()
        nodes, parents, compacted = self.nodes, self.parent, self.compacted  # (a long path)
        current: str | None = leaf
        while current is not None:
            used.add(current)
            chain.append(current)
            skeleton = nodes[current].skeleton
            assert skeleton is not None  # only decoded lines become nodes
            if skeleton.type == "system" and skeleton.subtype == "compact_boundary":
                break
            parent = parents.get(current)
            if parent is not None and (
                parent in used
                or parent not in nodes
                or (bridge is not None and parent in compacted)
            ):
                parent = bridge(current, used) if bridge is not None else None
            current = parent
        chain.reverse()
        return chain

    def resolve_prefix(self, ref: str) -> str:
        """A record uuid, or a unique prefix of one."""
        if ref in self.nodes:
            return ref
        found = [u for u in self.nodes if u.startswith(ref)]
        if len(found) > 1:
            raise Ambiguous("record", ref, found)
        if not found:
            raise NotFound("record", ref)
        return found[0]

    def resolve_leaf(self) -> str | None:
        """The message the client resumes from (see :mod:`sessiontree.model.resume`)."""
        return resolve_leaf(self)

    def active_path(self) -> list[str]:
        """Root first: what resuming sends (see :mod:`sessiontree.model.resume`)."""
        return active_path(self)

    def branch_path(self, leaf: str) -> list[str]:
        """Root first: what resuming would send were ``leaf`` the leaf, the blocks and
        results of parallel calls gathered (see :mod:`sessiontree.model.resume`)."""
        return branch_path(self, leaf)

    def is_turn(self, uuid: str) -> bool:
        """A record that starts or continues a turn: a prompt or an assistant response."""
        skeleton = self.skeleton(uuid)
        if skeleton.type == "assistant":
            return True
        return (
            skeleton.type == "user"
            and not skeleton.toolUseResult
            and skeleton.sourceToolAssistantUUID is None
        )

    def fork_points(self) -> list[ForkPoint]:
        """Records with two or more turns hanging on them (rewinds, re-sends).

        Structural branching (parallel tool results, attachments, hook output) is not a
        fork point; assistant blocks of one response count once.
        """
        points: list[ForkPoint] = []
        branching = [u for u, below in self.children.items() if len(below) >= 2]
        for uuid in sorted(branching, key=lambda u: self.nodes[u].number if u in self.nodes else 0):
            turns: list[str] = []
            responses: set[str] = set()
            for child in self.main_children(uuid):
                if not self.is_turn(child):
                    continue
                skeleton = self.skeleton(child)
                message_id = skeleton.message.id if skeleton.message else None
                if skeleton.type == "assistant" and message_id:
                    if message_id in responses:
                        continue
                    responses.add(message_id)
                turns.append(child)
            if len(turns) >= 2 and uuid in self.nodes:
                points.append(ForkPoint(uuid, tuple(turns)))
        return points

    def off_path_leaves(self, active: Sequence[str]) -> list[str]:
        on_path = set(active)
        return [u for u in self.leaves() if u not in on_path]

    def sidechain_uuids(self) -> list[str]:
        return [u for u in self.nodes if self.is_sidechain(u)]


def find_cycles(nodes: Mapping[str, object], parent: Mapping[str, str | None]) -> list[str]:
    """uuids whose chain over ``parent`` loops; each loop is reported once, by one member."""
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = known to reach a root
    looped: list[str] = []
    for start in nodes:
        walk: list[str] = []
        current: str | None = start
        while current is not None and current in nodes and current not in state:
            state[current] = 1
            walk.append(current)
            current = parent.get(current)
        if current is not None and state.get(current) == 1:
            looped.append(current)
        for uuid in walk:
            state[uuid] = 2
    return looped


def note_record(marks: Marks, skeleton: Skeleton, uuid: str, *, sidechain: bool) -> None:
    """What the client notes for one chain record: the last row, the newest row, and the
    bookmark's ``explicit`` flag (cleared by any later record)."""
    if skeleton.type == "system" and skeleton.subtype == "compact_boundary":
        marks.named, marks.named_explicit = None, False  # a boundary forgets the checkpoint
    if sidechain or (skeleton.type == "system" and skeleton.subtype == "file_snapshot"):
        return
    marks.last_row = uuid
    marks.named_explicit = marks.cleared = False
    timestamp = skeleton.timestamp
    if timestamp is not None and timestamp > marks.newest_timestamp:
        marks.newest_row, marks.newest_timestamp = uuid, timestamp


def note_last_prompt(marks: Marks, skeleton: Skeleton) -> None:
    leaf = skeleton.leafUuid
    if isinstance(leaf, msgspec.UnsetType):
        return
    marks.saw_last_prompt = True
    if leaf is None:
        if skeleton.explicit is True:
            marks.named, marks.named_explicit, marks.cleared = None, False, True
        return
    marks.named_explicit = skeleton.explicit is True or (
        marks.named_explicit and leaf == marks.named
    )
    marks.named = leaf  # the all-zero rewind marker names nothing that exists


def _preserved(tree: Tree, boundary: Skeleton) -> tuple[str, list[str]] | None:
    """(anchor, preserved uuids in order): the stored list, else a walk tail → head."""
    metadata = boundary.compactMetadata
    if metadata is None:
        return None
    listed = metadata.preservedMessages
    if listed is not None and listed.anchorUuid:
        return listed.anchorUuid, list(listed.uuids)
    segment = metadata.preservedSegment
    if segment is None or not segment.anchorUuid:
        return None
    walked: list[str] = []
    seen: set[str] = set()
    current = segment.tailUuid
    while current is not None and current in tree.nodes and current not in seen:
        walked.append(current)
        seen.add(current)
        if current == segment.headUuid:
            walked.reverse()
            return segment.anchorUuid, walked
        current = tree.skeleton(current).parentUuid
    return None  # the walk broke: the client leaves the transcript as it is


def preserves_segment(skeleton: TreeFields) -> bool:
    meta = skeleton.compactMetadata
    return meta is not None and (
        meta.preservedSegment is not None or meta.preservedMessages is not None
    )


def _apply_compaction(tree: Tree, boundaries: list[str], *, segment_before: bool) -> None:
    """Re-link the last boundary's preserved segment; mark what it summarized away.
    ``segment_before``: a boundary before ``boundaries`` (in a head) preserved a segment."""
    with_segment = [b for b in boundaries if preserves_segment(tree.skeleton(b))]
    if not with_segment and not segment_before:
        return
    last = boundaries[-1]
    last_with_segment = with_segment[-1] if with_segment else None
    kept: list[str] = []
    anchor = None
    if last == last_with_segment:
        found = _preserved(tree, tree.skeleton(last))
        if found is None:
            return
        anchor, kept = found
        if any(u not in tree.nodes for u in kept):
            return
    if kept and anchor is not None:
        tail = kept[-1]
        previous: str | None = anchor
        for uuid in kept:
            tree._set_parent(uuid, previous)
            previous = uuid
        segment = set(kept)
        tree._move_all((c for c in tree.children.get(anchor, ()) if c not in segment), tail)
    order = list(tree.nodes)
    cut = order.index(last)
    keep = set(kept)
    away = frozenset(order[:cut]) - keep
    tree.compacted = away
    if kept and away:
        tail = kept[-1]
        # Only loaded records can be re-hung; one hung on a summarized record is now on
        # the tail.
        tree._move_all(
            (u for u in [*order[cut:], *kept] if tree.parent.get(u) in away and tree.is_message(u)),
            tail,
        )
    tree.compaction_tail = kept[-1] if kept else None
    tree.compaction_applied = True
    tree.preserved = tuple(kept)
    tree.compaction_anchor = anchor if kept else None


def _marks_of(lines: Sequence[Line], *, sidechain_is_main: bool) -> Marks:
    """Replay what the client notes, line by line (for a subagent's own transcript)."""
    marks = Marks()
    for line in lines:
        skeleton = line.skeleton
        if skeleton is None:
            continue
        if skeleton.type == "last-prompt":
            note_last_prompt(marks, skeleton)
        elif skeleton.type in CHAIN_TYPES and skeleton.uuid:
            sidechain = skeleton.isSidechain is True and not sidechain_is_main
            note_record(marks, skeleton, skeleton.uuid, sidechain=sidechain)
    return marks


def build_tree(path: str, lines: Iterable[Line], *, head: Head | None = None) -> Tree:
    """Index the chain records of a scan, note what the client notes (:func:`note_record`,
    :func:`note_last_prompt`), apply compaction.

    With ``head``, ``lines`` are the rest of a transcript after lines that left ``head``
    (the notes go on from its marks; see :mod:`sessiontree.model.tail`)."""
    lines = lines if isinstance(lines, list) else list(lines)
    tree = Tree(path=path)
    if head is not None:
        tree.marks = msgspec.structs.replace(head.marks)
    nodes, parents, children, marks = tree.nodes, tree.parent, tree.children, tree.marks
    boundaries: list[str] = []
    all_sidechain = head.all_sidechain if head is not None else True
    sidechain_records = 0
    forward = False  # a parent not read before its child (it may come later, or never)
    twice = False  # a uuid read twice
    for line in lines:
        skeleton = line.skeleton
        if skeleton is None:
            continue
        kind = skeleton.type
        uuid = skeleton.uuid
        if kind not in CHAIN_TYPES or not uuid:
            if kind == "last-prompt":
                note_last_prompt(marks, skeleton)
            continue
        parent = skeleton.parentUuid
        if parent is not None and parent not in nodes:
            forward = True
        if uuid in nodes:
            twice = True
            first = nodes[uuid].number
            tree.build_problems.append(
                Problem("duplicate-uuid", path, line.number, f"{uuid} first on line {first}")
            )
            old = parents.get(uuid)
            if old is not None:
                children[old].remove(uuid)  # the last copy's parent is the one that counts
            replaced = nodes[uuid].skeleton
            if replaced is not None and replaced.isSidechain is True:
                sidechain_records -= 1
        nodes[uuid] = line
        parents[uuid] = parent
        if parent is not None:
            siblings = children.get(parent)
            if siblings is None:
                children[parent] = [uuid]
            else:
                siblings.append(uuid)
        if kind == "system" and skeleton.subtype == "compact_boundary":
            boundaries.append(uuid)
        sidechain = skeleton.isSidechain is True
        all_sidechain = all_sidechain and sidechain
        sidechain_records += sidechain
        note_record(marks, skeleton, uuid, sidechain=sidechain)
    tree.sidechain_records = sidechain_records
    if nodes and all_sidechain:  # (with a head, its records were all sidechain too)
        # A subagent's own transcript: read it as the main chain it is.
        tree.sidechain_only = True
        tree.marks = _marks_of(lines, sidechain_is_main=True)
    for uuid, parent in parents.items() if forward else ():  # (else every parent was read)
        if parent is not None and parent not in nodes:
            detail = f"{uuid} names missing {parent}"
            tree.build_problems.append(Problem("dangling-parent", path, nodes[uuid].number, detail))
    for kids in children.values() if twice else ():  # (else each list is in file order)
        if len(kids) > 1:  # a duplicate uuid can put a child out of file order
            kids.sort(key=lambda u: nodes[u].number)
    tree.acyclic = not forward and not twice and not boundaries  # (a compaction may re-link)
    if boundaries:
        _apply_compaction(tree, boundaries, segment_before=head is not None and head.segment)
    return tree
