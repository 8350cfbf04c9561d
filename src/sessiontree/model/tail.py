"""Resuming from the tail: when the lines since the last compaction answer alone.

The client loads a compacted transcript from its last compact boundary: what came before
is summarized away, except the records the boundary preserved. So once a transcript has
been read whole, a later resume need not read its head again. It needs what the head left
(:class:`~sessiontree.model.tree.Head`: the client's notes so far and two flags), the
names of the head's records, and the *tail*: the preserved records and every line from
the boundary on, including lines appended since.

:func:`find_tail` takes that from the skeletons of the whole file; :func:`stands_alone`
says whether a tree built from the tail, with that head (:func:`~sessiontree.model.tree.
build_tree`), resumes exactly as the whole file's tree does. It does when:

- the tail's own tree applies a compaction (so in the whole file's tree every head
  record is summarized away: never a leaf, a response block, a bridge or a descendant
  that resuming reads) and is not a subagent's all-sidechain file;
- no tail record that resuming can read names a head record as its parent (a preserved
  one is re-linked in both trees alike; one summarized away is never read, and a walk up
  from it stays in the head), the preserved segment does not hang on a head record, no
  head record names a tail record as its parent, and no uuid is in both. Then no link
  crosses between what resuming reads and the head, and a re-hang onto the preserved
  tail or a bridge happens in both trees alike;
- the last record written is in the tail (the client's notes of the head are then only
  the newest timestamp and whether a ``last-prompt`` was seen).

Anything else is answered by the whole file. ``tests/conversation/test_open_tail.py``
holds the tail's answer to the whole file's on random transcripts grown in steps, and on
every fixture.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sessiontree.model.records import CHAIN_TYPES, Line, Skeleton
from sessiontree.model.resume import Marks
from sessiontree.model.tree import (
    Head,
    Tree,
    note_last_prompt,
    note_record,
    preserves_segment,
)

#: Joins the head's uuids in :attr:`Tail.head_uuids` (a head with a uuid holding it
#: gets no tail).
UUID_SEPARATOR = "\n"


@dataclass(frozen=True)
class Tail:
    """Where the tail of a scanned transcript starts, and what its head leaves."""

    #: Index in the scan's lines of the last compact boundary: the tail is the lines
    #: at :attr:`kept` and every line from here on.
    start: int
    #: Indexes (before :attr:`start`, ascending) of the lines of the records the last
    #: boundary preserved.
    kept: tuple[int, ...]
    head: Head
    #: The uuids of the head's records, joined by :data:`UUID_SEPARATOR`.
    head_uuids: str
    #: The parents the head's records name outside the head (dangling, or written
    #: later), joined alike.
    head_outward: str

    def head_uuid_set(self) -> frozenset[str]:
        return _split(self.head_uuids)

    def head_outward_set(self) -> frozenset[str]:
        return _split(self.head_outward)


def _split(joined: str) -> frozenset[str]:
    return frozenset(joined.split(UUID_SEPARATOR)) if joined else frozenset()


def find_tail(lines: Sequence[Line]) -> Tail | None:
    """The tail of a transcript whose lines (from its first) are ``lines``: its last
    compact boundary, the lines of the records that boundary preserves, what the lines
    before it leave. None without a boundary. Whether the tail answers alone is
    :func:`stands_alone`'s to say, of the tail's tree."""
    start = next(
        (
            index
            for index in range(len(lines) - 1, -1, -1)
            if (skeleton := lines[index].skeleton) is not None
            and skeleton.type == "system"
            and skeleton.subtype == "compact_boundary"
            and skeleton.uuid
        ),
        None,
    )
    if start is None:
        return None
    boundary = lines[start].skeleton
    assert boundary is not None
    kept = _kept_lines(boundary, lines, start)
    head, head_uuids, parents = _read_head(lines, start, set(kept))
    outward = {p: None for p in parents if p not in head_uuids}
    if any(UUID_SEPARATOR in u for u in [*head_uuids, *outward]):
        return None
    return Tail(start, kept, head, UUID_SEPARATOR.join(head_uuids), UUID_SEPARATOR.join(outward))


def _read_head(
    lines: Sequence[Line], start: int, kept: set[int]
) -> tuple[Head, dict[str, None], list[str]]:
    """One pass over the lines before ``start``: what they leave (:class:`Head`, exactly
    as :func:`~sessiontree.model.tree.build_tree` of the whole file notes it; its
    ``with_segment`` test reads each boundary's last copy), the uuids of those not in
    ``kept`` and the parents these name."""
    marks = Marks()
    all_sidechain = True
    boundaries: dict[str, Skeleton] = {}  # each boundary uuid's last copy
    uuids: dict[str, None] = {}
    parents: list[str] = []
    for index in range(start):
        skeleton = lines[index].skeleton
        if skeleton is None:
            continue
        kind, uuid = skeleton.type, skeleton.uuid
        if index not in kept:
            if uuid:
                uuids[uuid] = None
            if skeleton.parentUuid is not None:
                parents.append(skeleton.parentUuid)
        if kind not in CHAIN_TYPES or not uuid:
            if kind == "last-prompt":
                note_last_prompt(marks, skeleton)
            continue
        sidechain = skeleton.isSidechain is True
        all_sidechain = all_sidechain and sidechain
        if (kind == "system" and skeleton.subtype == "compact_boundary") or uuid in boundaries:
            boundaries[uuid] = skeleton
        note_record(marks, skeleton, uuid, sidechain=sidechain)
    segment = any(preserves_segment(skeleton) for skeleton in boundaries.values())
    return Head(marks, segment, all_sidechain), uuids, parents


def _kept_lines(boundary: Skeleton, lines: Sequence[Line], start: int) -> tuple[int, ...]:
    """Indexes (before ``start``, ascending) of the last copy of each record ``boundary``
    preserves: the stored list, else the segment walked tail → head. Read backwards from
    the boundary, as far as they go back. A guess is safe: the tail's tree preserves what
    it finds itself, and one that lacks a record preserves nothing (then the tail does
    not stand alone)."""
    metadata = boundary.compactMetadata
    if metadata is None:
        return ()
    listed = metadata.preservedMessages
    segment = metadata.preservedSegment
    found: dict[str, int] = {}  # the last copy of each uuid read so far, back from start
    if listed is not None and listed.anchorUuid:
        wanted = set(listed.uuids)
        for index in range(start - 1, -1, -1):
            if len(found) == len(wanted):
                break
            skeleton = lines[index].skeleton
            if skeleton is not None and skeleton.uuid in wanted and skeleton.type in CHAIN_TYPES:
                found.setdefault(skeleton.uuid, index)
        return tuple(sorted(found.values()))
    if segment is None or not segment.anchorUuid:
        return ()
    walked: dict[str, int] = {}
    current = segment.tailUuid  # the record the walk looks for next
    for index in range(start - 1, -1, -1):
        skeleton = lines[index].skeleton
        if skeleton is None or not skeleton.uuid or skeleton.type not in CHAIN_TYPES:
            continue
        found.setdefault(skeleton.uuid, index)
        while current is not None and current in found and current not in walked:
            walked[current] = found[current]
            above = lines[found[current]].skeleton
            done = current == segment.headUuid or above is None
            current = None if done else above.parentUuid  # type: ignore[union-attr]
        if current is None or current in walked:  # the head reached, or a loop
            break
    return tuple(sorted(set(walked.values())))


def stands_alone(tree: Tree, head_uuids: Collection[str], head_outward: Collection[str]) -> bool:
    """Whether ``tree``, built from a tail with its head, resumes as the whole file does
    (see the module docstring). ``head_uuids``: the head's record uuids;
    ``head_outward``: the parents its records name outside it."""
    if not tree.compaction_applied or tree.sidechain_only:
        return False
    if tree.marks.last_row not in tree.nodes or tree.compaction_anchor in head_uuids:
        return False
    preserved = set(tree.preserved)  # re-linked in both trees alike, whatever they named
    for uuid, parent in tree.parent.items():
        if uuid in head_uuids or uuid in head_outward:
            return False
        if uuid in tree.compacted or uuid in preserved:
            continue  # summarized away in both trees; walks up from it stay in the head
        raw = tree.skeleton(uuid).parentUuid  # before any re-link
        if (raw is not None and raw in head_uuids) or (parent is not None and parent in head_uuids):
            return False
    return True
