"""The conversation tree of one transcript: leaf resolution, active path, branches.

Pure: built from the skeletons of a scan (:class:`~sessiontree.model.records.Line`), it
does no I/O. The rules follow what Claude Code 2.1.328 does, checked on the real-client
fixtures and by experiment with the real client (see docs/FORMAT.md):

* Preserved segments of a ``compact_boundary`` are re-linked on load: the segment's head
  hangs on the anchor, and what hung on the anchor hangs on the segment's tail.
* The active leaf is the newest usable ``last-prompt`` leaf: one written after the last
  all-zero reset marker, naming a record that exists and has no children. Failing that,
  the newest childless record by timestamp.
* The active path runs from the leaf up through parents and stops at the first
  ``compact_boundary`` (the summarized history before it stays on disk, off the path).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sessiontree.model.records import CHAIN_TYPES, NULL_UUID, Line, Problem, Skeleton


@dataclass(frozen=True)
class ForkPoint:
    """A record where the conversation branched: two or more turns hang on it."""

    uuid: str
    children: tuple[str, ...]


@dataclass
class Tree:
    """uuid → line, effective parents (after re-links) and children, in file order."""

    path: str
    nodes: dict[str, Line] = field(default_factory=dict)
    parent: dict[str, str | None] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    last_prompt_leaves: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: A subagent's own transcript is all sidechain: then its records are the main chain.
    sidechain_only: bool = False

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

    # -- queries ----------------------------------------------------------------------

    def skeleton(self, uuid: str) -> Skeleton:
        skeleton = self.nodes[uuid].skeleton
        assert skeleton is not None  # only decoded lines become nodes
        return skeleton

    def is_sidechain(self, uuid: str) -> bool:
        """Off the main conversation (an inline subagent chain of an older client)."""
        return not self.sidechain_only and self.skeleton(uuid).isSidechain is True

    def main_children(self, uuid: str) -> list[str]:
        return [c for c in self.children.get(uuid, ()) if not self.is_sidechain(c)]

    def leaves(self) -> list[str]:
        """Main-chain records with no children, in file order."""
        return [
            u
            for u, line in sorted(self.nodes.items(), key=lambda kv: kv[1].number)
            if not self.is_sidechain(u) and not self.main_children(u)
        ]

    def resolve_leaf(self) -> str | None:
        """The active leaf, as the real client picks it on resume."""
        for leaf in reversed(self.last_prompt_leaves):
            if leaf in self.nodes and not self.is_sidechain(leaf) and not self.main_children(leaf):
                return leaf
        leaves = self.leaves()
        if not leaves:
            return None
        return max(leaves, key=lambda u: (self.skeleton(u).timestamp or "", self.nodes[u].number))

    def path_to(self, leaf: str) -> list[str]:
        """Root-to-leaf uuids; the root is a parentless record or the last compact boundary."""
        chain: list[str] = []
        seen: set[str] = set()
        current: str | None = leaf
        while current is not None and current in self.nodes and current not in seen:
            seen.add(current)
            chain.append(current)
            skeleton = self.skeleton(current)
            if skeleton.type == "system" and skeleton.subtype == "compact_boundary":
                break
            current = self.parent.get(current)
        chain.reverse()
        return chain

    def active_path(self) -> list[str]:
        leaf = self.resolve_leaf()
        return self.path_to(leaf) if leaf is not None else []

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
        for uuid in sorted(
            self.children, key=lambda u: self.nodes[u].number if u in self.nodes else 0
        ):
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


def _find_cycles(tree: Tree) -> list[str]:
    """uuids whose parent chain loops; each loop is reported once, by one member."""
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = known to reach a root
    looped: list[str] = []
    for start in tree.nodes:
        walk: list[str] = []
        current: str | None = start
        while current is not None and current in tree.nodes and current not in state:
            state[current] = 1
            walk.append(current)
            current = tree.parent.get(current)
        if current is not None and state.get(current) == 1:
            looped.append(current)
        for uuid in walk:
            state[uuid] = 2
    return looped


def build_tree(path: str, lines: Iterable[Line]) -> Tree:
    """Index the chain records of a scan and apply compaction re-links."""
    tree = Tree(path=path)
    boundaries: list[Skeleton] = []
    for line in lines:
        skeleton = line.skeleton
        if skeleton is None:
            continue
        if skeleton.type == "last-prompt" and skeleton.leafUuid:
            if skeleton.leafUuid == NULL_UUID:
                tree.last_prompt_leaves.clear()  # a rewind's reset marker
            else:
                tree.last_prompt_leaves.append(skeleton.leafUuid)
            continue
        if skeleton.type not in CHAIN_TYPES or not skeleton.uuid:
            continue
        if skeleton.uuid in tree.nodes:
            first = tree.nodes[skeleton.uuid].number
            tree.problems.append(
                Problem(
                    "duplicate-uuid", path, line.number, f"{skeleton.uuid} first on line {first}"
                )
            )
        tree.nodes[skeleton.uuid] = line
        if skeleton.type == "system" and skeleton.subtype == "compact_boundary":
            boundaries.append(skeleton)
    tree.sidechain_only = bool(tree.nodes) and all(
        line.skeleton is not None and line.skeleton.isSidechain is True
        for line in tree.nodes.values()
    )
    for uuid, line in tree.nodes.items():
        parent = line.skeleton.parentUuid if line.skeleton else None
        if parent is not None and parent not in tree.nodes:
            tree.problems.append(
                Problem("dangling-parent", path, line.number, f"{uuid} names missing {parent}")
            )
        tree.parent[uuid] = parent
        if parent is not None:
            tree.children.setdefault(parent, []).append(uuid)
    for kids in tree.children.values():
        kids.sort(key=lambda u: tree.nodes[u].number)
    for boundary in boundaries:
        segment = boundary.compactMetadata.preservedSegment if boundary.compactMetadata else None
        if segment is None:
            continue
        head, anchor, tail = segment.headUuid, segment.anchorUuid, segment.tailUuid
        if not (head in tree.nodes and anchor in tree.nodes and tail in tree.nodes):
            continue
        assert head is not None and anchor is not None and tail is not None
        for child in list(tree.children.get(anchor, ())):
            if child not in (head, tail):
                tree._set_parent(child, tail)
        tree._set_parent(head, anchor)
    for uuid in _find_cycles(tree):
        tree.problems.append(
            Problem("cycle", path, tree.nodes[uuid].number, f"parent chain of {uuid} loops")
        )
    return tree
