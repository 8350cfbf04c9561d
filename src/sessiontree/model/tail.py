"""Resuming from the tail: when the lines since the last compaction answer alone.

The client loads a compacted transcript from its last compact boundary: what came before
is summarized away, except the records the boundary preserved. So once a transcript has
been read whole, a later resume need not read its head again. It needs what the head left
(:class:`~sessiontree.model.tree.Head`: the client's notes so far and two flags), the
names of the head's records, and the *tail*: the preserved records and every line from
the boundary on, including lines appended since.

:func:`find_tail` takes that from the skeletons of the whole file; :func:`stands_alone`
says whether a tree built from the tail, with that head (:func:`~sessiontree.model.tree.
build_tree`), resumes exactly as the whole file's tree does. It does when it is not a
subagent's all-sidechain file, and:

- the tail's own tree applies a compaction (so in the whole file's tree every head
  record is summarized away: never a leaf, a response block, a bridge or a descendant
  that resuming reads), or no compact boundary in the file preserves anything (1.0.x and
  2.0.x clients' boundaries: no ``preservedSegment``, nothing summarized away, so the
  head's records are all loaded) and resuming reads none of them: the leaf is picked
  from the marks (never among all the leaf messages), the path up from it ends at a
  boundary or a root with no bridge, no bookmark names a head record, and no head record
  is a block of a response the tail holds;
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

from bisect import bisect_left
from collections.abc import Collection, Iterable, Sequence

import msgspec

from sessiontree.model.records import CHAIN_TYPES, Line, Skeleton, TreeFields
from sessiontree.model.resume import Marks, leaf_from_marks
from sessiontree.model.tree import Head, Tree, preserves_segment

#: Joins the head's uuids in :attr:`Tail.head_uuids` (a head with a uuid holding it
#: gets no tail).
UUID_SEPARATOR = "\n"


class HeadNames(msgspec.Struct, frozen=True):
    """The names in a head that :func:`stands_alone` checks the tail's against."""

    #: The uuids of the head's records.
    uuids: Collection[str]
    #: The parents the head's records name outside the head (dangling, or written later).
    outward: Collection[str]
    #: The ``message.id`` of the head's assistant records, gathered only when the last
    #: boundary preserves nothing (they matter only then).
    message_ids: Collection[str]


class Tail(msgspec.Struct, frozen=True):
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
    #: :attr:`HeadNames.message_ids`, joined alike.
    head_message_ids: str

    def names(self) -> HeadNames:
        return HeadNames(
            _split(self.head_uuids), _split(self.head_outward), _split(self.head_message_ids)
        )


def _split(joined: str) -> list[str]:
    return joined.split(UUID_SEPARATOR) if joined else []


def find_tail(lines: Sequence[Line]) -> Tail | None:
    """The tail of a transcript whose lines (from its first) are ``lines``: its last
    compact boundary, the lines of the records that boundary preserves, what the lines
    before it leave (:class:`HeadReading`). None without a boundary. Whether the tail
    answers alone is :func:`stands_alone`'s to say, of the tail's tree."""
    start = next(
        (
            index
            for index in range(len(lines) - 1, -1, -1)
            if (skeleton := lines[index].skeleton) is not None and is_boundary(skeleton)
        ),
        None,
    )
    if start is None:
        return None
    boundary = lines[start].skeleton
    assert boundary is not None
    kept = _kept_lines(boundary, lines, start)
    reading = HeadReading.before(boundary, frozenset(lines[i].offset for i in kept))
    for line in lines[:start]:
        reading.append(line)
    return reading.tail(start, kept)


def is_boundary(skeleton: Skeleton) -> bool:
    """A compact boundary the tree counts (a chain record with a uuid)."""
    return (
        skeleton.type == "system" and skeleton.subtype == "compact_boundary" and bool(skeleton.uuid)
    )


class HeadReading(msgspec.Struct):
    """What resuming from the tail needs of the head (the lines before the last compact
    boundary), gathered line by line in file order, holding none of them: the lines of
    the preserved records (at ``kept_offsets``), every other line's uuid and the parents
    they name, and what the client notes of them that can outlive the boundary.

    Of the client's notes (:class:`~sessiontree.model.resume.Marks`) only the newest
    timestamp (and a uuid that has it) and whether a ``last-prompt`` was seen can: when
    the tail stands alone (:func:`stands_alone`), its boundary forgets the bookmark and
    its ``explicit`` flag, and a main-chain record in it sets the last row and clears the
    rest. Which compact boundary preserved a segment is read from each one's last copy,
    as :func:`~sessiontree.model.tree.build_tree` reads it.

    It is a :class:`~sessiontree.storage.scan.LineSink`: a scan on two cores fills one
    per part and merges them (:meth:`merge_bytes`); a boundary of the first part copied
    again in the later one, as something else, makes the reading not :attr:`exact`."""

    kept_offsets: frozenset[int]
    #: Whether to gather the assistant records' ``message.id`` (:attr:`message_ids`).
    with_message_ids: bool = False
    kept: list[Line] = msgspec.field(default_factory=list)
    uuids: list[str] = msgspec.field(default_factory=list)
    message_ids: list[str] = msgspec.field(default_factory=list)
    #: Parents named by the head's lines, but for the uuid of the line just before.
    parents: list[str] = msgspec.field(default_factory=list)
    newest_timestamp: str = ""
    newest_row: str | None = None
    saw_last_prompt: bool = False
    all_sidechain: bool = True
    #: Each compact boundary's uuid: whether its last copy so far preserves a segment.
    boundaries: dict[str, bool] = msgspec.field(default_factory=dict)
    exact: bool = True
    previous: str | None = None

    @classmethod
    def before(cls, boundary: Skeleton, kept_offsets: frozenset[int]) -> "HeadReading":
        """A reading of the lines before ``boundary``, the lines of the records it
        preserves at ``kept_offsets``: with the message ids when it preserves nothing."""
        return cls(kept_offsets, with_message_ids=not preserves_segment(boundary))

    def append(self, line: Line) -> None:
        skeleton = line.skeleton
        if skeleton is None:
            return
        if line.offset in self.kept_offsets:
            self.kept.append(line)
            self._note(skeleton)
        else:
            self.take(skeleton)

    def take(self, skeleton: TreeFields) -> None:
        """Fold in a line that is not one of the preserved records' (a
        :class:`~sessiontree.storage.scan.LineFold`: the scan gives the most lines so,
        decoded bare)."""
        uuid = skeleton.uuid
        if skeleton.parentUuid is not None and skeleton.parentUuid != self.previous:
            self.parents.append(skeleton.parentUuid)
        if uuid:
            self.uuids.append(uuid)
            self.previous = uuid
        message = skeleton.message
        if self.with_message_ids and skeleton.type == "assistant" and message and message.id:
            self.message_ids.append(message.id)
        self._note(skeleton)

    def _note(self, skeleton: TreeFields) -> None:
        """What the client notes of a head line (kept or not)."""
        kind, uuid = skeleton.type, skeleton.uuid
        if kind == "last-prompt":
            if not isinstance(skeleton.leafUuid, msgspec.UnsetType):
                self.saw_last_prompt = True
            return
        if kind not in CHAIN_TYPES or not uuid:
            return
        sidechain = skeleton.isSidechain is True
        self.all_sidechain = self.all_sidechain and sidechain
        if kind == "system" and skeleton.subtype == "compact_boundary":
            self.boundaries[uuid] = preserves_segment(skeleton)
        elif uuid in self.boundaries:
            self.boundaries[uuid] = False  # its last copy is no boundary
        if sidechain or (kind == "system" and skeleton.subtype == "file_snapshot"):
            return
        timestamp = skeleton.timestamp
        if timestamp is not None and timestamp > self.newest_timestamp:
            self.newest_row, self.newest_timestamp = uuid, timestamp

    def fresh(self) -> "HeadReading":
        return HeadReading(self.kept_offsets, self.with_message_ids)

    def to_bytes(self) -> bytes:
        return _reading_encoder.encode(self)

    def merge_bytes(self, data: bytes, base: int) -> None:
        """Take in the reading of the lines after this one's (their numbers counted from
        0, ``base`` lines before them)."""
        later = _reading_decoder.decode(data)
        self.kept.extend(
            Line(line.number + base, line.offset, line.length, line.skeleton) for line in later.kept
        )
        seen_later = {*later.uuids, *(line.skeleton.uuid for line in later.kept if line.skeleton)}
        for uuid in self.boundaries:
            if uuid in seen_later and uuid not in later.boundaries:
                self.exact = False  # copied again later as something else: read it whole
        self.boundaries.update(later.boundaries)
        self.uuids.extend(later.uuids)
        self.message_ids.extend(later.message_ids)
        self.parents.extend(later.parents)
        if later.newest_timestamp > self.newest_timestamp:
            self.newest_row, self.newest_timestamp = later.newest_row, later.newest_timestamp
        self.saw_last_prompt = self.saw_last_prompt or later.saw_last_prompt
        self.all_sidechain = self.all_sidechain and later.all_sidechain
        self.exact = self.exact and later.exact
        self.previous = later.previous

    def head(self) -> Head:
        marks = Marks(
            newest_row=self.newest_row,
            newest_timestamp=self.newest_timestamp,
            saw_last_prompt=self.saw_last_prompt,
        )
        return Head(marks, any(self.boundaries.values()), self.all_sidechain)

    def names(self) -> HeadNames:
        """The head's uuids, the parents its lines name outside it and its message ids
        (each once)."""
        uuids = dict.fromkeys(self.uuids)
        outward = dict.fromkeys(p for p in self.parents if p not in uuids)
        return HeadNames(uuids, outward, dict.fromkeys(self.message_ids))

    def tail(
        self, start: int, kept: tuple[int, ...], names: HeadNames | None = None
    ) -> Tail | None:
        """The :class:`Tail` this head leaves when its boundary is line ``start`` and its
        preserved records are lines ``kept`` of a scan (``names``: :meth:`names`, if
        already taken); None when it cannot be stored (a name holding
        :data:`UUID_SEPARATOR`) or the reading is not exact."""
        if not self.exact:
            return None
        names = self.names() if names is None else names
        groups = (names.uuids, names.outward, names.message_ids)
        if any(UUID_SEPARATOR in name for group in groups for name in group):
            return None
        return Tail(start, kept, self.head(), *(UUID_SEPARATOR.join(g) for g in groups))


_reading_encoder = msgspec.msgpack.Encoder()
_reading_decoder = msgspec.msgpack.Decoder(HeadReading)


def _kept_lines(boundary: Skeleton, lines: Sequence[Line], start: int) -> tuple[int, ...]:
    """Indexes (before ``start``, ascending) of :func:`preserved_lines` in ``lines``."""
    found = preserved_lines(boundary, (lines[i] for i in range(start - 1, -1, -1)))
    return tuple(
        sorted(bisect_left(lines, line.offset, hi=start, key=lambda x: x.offset) for line in found)
    )


def preserved_lines(boundary: Skeleton, backward: Iterable[Line]) -> list[Line]:
    """The last copy of each record ``boundary`` preserves (the stored list, else the
    segment walked tail → head), among ``backward``: the lines before the boundary, from
    the nearest back, read only as far as needed. A guess is safe: the tail's tree
    preserves what it finds itself, and one that lacks a record preserves nothing (then
    the tail does not stand alone)."""
    metadata = boundary.compactMetadata
    if metadata is None:
        return []
    listed = metadata.preservedMessages
    segment = metadata.preservedSegment
    found: dict[str, Line] = {}  # the last copy of each uuid read so far
    if listed is not None and listed.anchorUuid:
        wanted = set(listed.uuids)
        for line in backward:
            if len(found) == len(wanted):
                break
            skeleton = line.skeleton
            if skeleton is not None and skeleton.uuid in wanted and skeleton.type in CHAIN_TYPES:
                found.setdefault(skeleton.uuid, line)
        return list(found.values())
    if segment is None or not segment.anchorUuid:
        return []
    walked: dict[str, Line] = {}
    current = segment.tailUuid  # the record the walk looks for next
    for line in backward:
        skeleton = line.skeleton
        if skeleton is None or not skeleton.uuid or skeleton.type not in CHAIN_TYPES:
            continue
        found.setdefault(skeleton.uuid, line)
        while current is not None and current in found and current not in walked:
            walked[current] = found[current]
            above = found[current].skeleton
            done = current == segment.headUuid or above is None
            current = None if done else above.parentUuid  # type: ignore[union-attr]
        if current is None or current in walked:  # the head reached, or a loop
            break
    return list(walked.values())


def stands_alone(tree: Tree, head: Head, names: HeadNames) -> bool:
    """Whether ``tree``, built from a tail with its ``head``, resumes as the whole file
    does (see the module docstring). ``names``: the head's (each gone through once,
    against the few names the tail has: a head holds tens of thousands)."""
    if tree.sidechain_only or tree.marks.last_row not in tree.nodes:
        return False
    own = set(tree.parent)  # the tail's records: none may be in the head, or named by it
    named: set[str] = set()  # what the tail names that must not be a head record
    if not tree.compaction_applied:
        if not _reads_only_the_tail(tree, head, names.message_ids):
            return False
        if tree.marks.named is not None:
            named.add(tree.marks.named)  # (loaded in the whole file's tree, were it there)
    if tree.compaction_anchor is not None:
        named.add(tree.compaction_anchor)
    preserved = set(tree.preserved)  # re-linked in both trees alike, whatever they named
    for uuid, parent in tree.parent.items():
        if uuid in tree.compacted or uuid in preserved:
            continue  # summarized away in both trees; walks up from it stay in the head
        raw = tree.skeleton(uuid).parentUuid  # before any re-link
        if raw is not None:
            named.add(raw)
        if parent is not None:
            named.add(parent)
    return (own | named).isdisjoint(names.uuids) and own.isdisjoint(names.outward)


def _reads_only_the_tail(tree: Tree, head: Head, head_message_ids: Iterable[str]) -> bool:
    """Of a tail whose tree applies no compaction: whether no boundary in the file
    preserves anything, and resuming it reads nothing the head would change (see the
    module docstring): the leaf comes from the marks, the path needs no bridge, and no
    response of the tail has a block in the head."""
    if head.segment:
        return False  # the whole file's tree may apply a compaction this one could not
    responses: set[str] = set()
    for line in tree.nodes.values():
        skeleton = line.skeleton
        assert skeleton is not None  # only decoded lines become nodes
        if skeleton.type == "system" and skeleton.subtype == "compact_boundary":
            if preserves_segment(skeleton):
                return False
        elif skeleton.type == "assistant" and skeleton.message and skeleton.message.id:
            responses.add(skeleton.message.id)
    decided, leaf = leaf_from_marks(tree)
    if not decided:
        return False  # picked among every leaf message, the head's too
    if leaf is not None:
        top = tree.path_to(leaf)[0]  # without a bridge: where one would be needed
        skeleton = tree.skeleton(top)
        is_root = skeleton.type == "system" and skeleton.subtype == "compact_boundary"
        if not is_root and tree.parent.get(top) is not None:
            return False  # a missing parent or a loop: bridged over the head's records too
    return responses.isdisjoint(head_message_ids)
