"""The conversation tree of one transcript: leaf resolution, active path, branches.

Pure: built from the skeletons of a scan (:class:`~sessiontree.model.records.Line`), it
does no I/O. The rules follow what Claude Code 2.1.328 does, checked on the real-client
fixtures and by experiment with the real client (see docs/FORMAT.md):

* Preserved segments of a ``compact_boundary`` are re-linked on load: the segment's head
  hangs on the anchor, and what hung on the anchor hangs on the segment's tail.
* Records written before the last compact boundary, except its preserved segment, are
  summarized away: kept on disk, never a leaf.
* The default leaf is the newest leaf (by timestamp) below the record written last.
  The newest ``last-prompt`` written after the last all-zero reset marker names a leaf;
  it wins unless it lies on the default leaf's path (then it is stale). A named record
  with children is completed: the rest of its response's blocks and their tool results.
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
    #: Records summarized away: written before the last compact boundary and not in its
    #: preserved segment. They stay on disk (and in the tree) but the client no longer
    #: loads them, so no leaf is ever taken from them.
    compacted: frozenset[str] = frozenset()

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

    def default_leaf(self) -> str | None:
        """The leaf the client resumes without a usable ``last-prompt``.

        Start at the record written last (file order), then take the newest leaf below it
        by timestamp. Found with the real client: not the newest leaf overall by timestamp,
        nor the last leaf in the file.
        """
        # ``nodes`` keeps first-seen order, as the client's Map of messages does.
        start = next(
            (
                u
                for u in reversed(self.nodes)
                if not self.is_sidechain(u) and u not in self.compacted
            ),
            None,
        )
        if start is None:
            return None
        best: str | None = None
        stack = [start]
        seen: set[str] = set()
        while stack:
            uuid = stack.pop()
            if uuid in seen:
                continue  # a cycle below the start: each record once
            seen.add(uuid)
            kids = self.main_children(uuid)
            if kids:
                stack.extend(kids)
            elif best is None or self._recency(uuid) > self._recency(best):
                best = uuid
        return best if best is not None else start

    def _recency(self, uuid: str) -> tuple[str, int]:
        return (self.skeleton(uuid).timestamp or "", self.nodes[uuid].number)

    def named_leaf(self) -> str | None:
        """The newest ``last-prompt`` leaf written after the last reset marker that exists."""
        for leaf in reversed(self.last_prompt_leaves):
            if leaf in self.nodes and not self.is_sidechain(leaf) and leaf not in self.compacted:
                return leaf
        return None

    def resolve_leaf(self) -> str | None:
        """The active leaf, as the real client picks it on resume.

        A named leaf on the default leaf's own path is stale (the conversation went on past
        it): the default wins. A named leaf elsewhere wins, even one with children; the
        client then completes its turn (the rest of an assistant response's blocks and the
        tool results that answer it).
        """
        default = self.default_leaf()
        named = self.named_leaf()
        if named is None or default is None or named in self.path_to(default):
            return default
        return self._complete_response(named)

    def _complete_response(self, uuid: str) -> str:
        current = uuid
        seen = {current}
        while True:
            skeleton = self.skeleton(current)
            message_id = skeleton.message.id if skeleton.message else None
            following = None
            for child in self.main_children(current):
                child_skeleton = self.skeleton(child)
                child_id = child_skeleton.message.id if child_skeleton.message else None
                same_response = (
                    skeleton.type == "assistant"
                    and child_skeleton.type == "assistant"
                    and message_id is not None
                    and child_id == message_id
                )
                answers_tool = child_skeleton.type == "user" and not self.is_turn(child)
                if same_response or (
                    answers_tool and (skeleton.type == "assistant" or not self.is_turn(current))
                ):
                    following = child
            if following is None or following in seen:
                return current
            seen.add(following)
            current = following

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


def _summarized_away(tree: Tree, boundary: Skeleton) -> frozenset[str]:
    """Records before ``boundary`` in the file that its preserved segment does not keep."""
    assert boundary.uuid is not None
    kept: set[str] = set()
    segment = boundary.compactMetadata.preservedSegment if boundary.compactMetadata else None
    if segment is not None and segment.tailUuid in tree.nodes:
        current: str | None = segment.tailUuid
        while current is not None and current in tree.nodes and current not in kept:
            kept.add(current)  # walk the stored (not re-linked) parents from tail to head
            if current == segment.headUuid:
                break
            skeleton = tree.nodes[current].skeleton
            current = skeleton.parentUuid if skeleton else None
    line = tree.nodes[boundary.uuid].number
    return frozenset(u for u, ln in tree.nodes.items() if ln.number < line and u not in kept)


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
        if len(kids) > 1:  # a duplicate uuid can put a child out of file order
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
    if boundaries:
        tree.compacted = _summarized_away(tree, boundaries[-1])
    for uuid in _find_cycles(tree):
        tree.problems.append(
            Problem("cycle", path, tree.nodes[uuid].number, f"parent chain of {uuid} loops")
        )
    return tree
