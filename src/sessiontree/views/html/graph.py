"""The tree of a session laid out to draw: rows and lanes, long linear runs folded.

:func:`layout_tree` is pure: records (uuid → parent, file order) in, placed nodes and
edges out. A run of records each with a single child is one node (its ``count`` says how
many it stands for), so a session of 10,000 records draws as many nodes as it has
branches and marks, not records. A run is cut where the active path ends (its leaf may
have a rewound branch below it), where a record is to be shown on its own (``keep``: a
compaction boundary, a selected record) and at every fork point.

Rows follow the file order of each node's first record (a timeline, top to bottom);
the active path runs down lane 0 (from its root to its leaf; results of parallel tool
calls it also holds beside it), each other branch takes the next free lane.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

#: Pixels of one row and one lane in the drawing.
ROW, LANE, MARGIN = 26, 22, 14


@dataclass(frozen=True)
class GraphNode:
    """One drawn node: the records ``members`` (root first), drawn at lane ``x``, row
    ``y``. ``tip`` is the last of them: what a click on the node opens."""

    members: tuple[str, ...]
    x: int
    y: int
    on_path: bool
    kept: bool

    @property
    def tip(self) -> str:
        return self.members[-1]

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def cx(self) -> int:
        return MARGIN + self.x * LANE

    @property
    def cy(self) -> int:
        return MARGIN + self.y * ROW


@dataclass(frozen=True)
class GraphEdge:
    parent: int  # index into TreeGraph.nodes
    child: int
    on_path: bool


@dataclass(frozen=True)
class TreeGraph:
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]

    # Measured once: the drawing asks for the width at every node (where its label
    # goes), and a look over every node each time made a tree of thousands of branches
    # quadratic.
    @cached_property
    def lanes(self) -> int:
        return max((n.x for n in self.nodes), default=-1) + 1

    @cached_property
    def width(self) -> int:
        return 2 * MARGIN + max(self.lanes - 1, 0) * LANE

    @cached_property
    def height(self) -> int:
        return 2 * MARGIN + max(len(self.nodes) - 1, 0) * ROW

    def node_of(self, uuid: str) -> GraphNode | None:
        return next((n for n in self.nodes if uuid in n.members), None)

    def edge_points(self, edge: GraphEdge) -> tuple[int, int, int, int]:
        a, b = self.nodes[edge.parent], self.nodes[edge.child]
        return a.cx, a.cy, b.cx, b.cy


def layout_tree(
    parent: Mapping[str, str | None],
    order: Mapping[str, int],
    active_path: Sequence[str],
    *,
    keep: Collection[str] = (),
) -> TreeGraph:
    """Place every record of ``parent`` (uuid → its parent; one not in the mapping, or
    None, makes a root) once. ``order``: each record's place in the file (rows follow
    it; a record missing from it sorts last). ``active_path``: root to leaf, drawn in
    lane 0 and marked. ``keep``: records drawn as nodes of their own."""
    nodes = list(parent)
    rank = {u: order.get(u, len(order) + i) for i, u in enumerate(nodes)}
    children: dict[str, list[str]] = {u: [] for u in nodes}
    roots: list[str] = []
    for uuid in nodes:
        up = parent[uuid]
        if up is None or up not in children or up == uuid:
            roots.append(uuid)
        else:
            children[up].append(uuid)
    on_path = {u for u in active_path if u in children}
    leaf = active_path[-1] if active_path else None
    # The leaf's own ancestors: the spine drawn in lane 0 (the active path may hold more,
    # the results of parallel tool calls hanging beside it).
    spine: set[str] = set()
    at = leaf if leaf in children else None
    while at is not None and at not in spine:
        spine.add(at)
        up = parent[at]
        at = up if up in children else None
    kept = set(keep)

    def first(u: str) -> tuple[bool, bool, int]:
        return (u not in spine, u not in on_path, rank[u])

    for kids in children.values():
        kids.sort(key=first)
    roots.sort(key=first)

    # Runs: start at a root or at a child whose parent cannot be continued through.
    def continues(uuid: str) -> str | None:
        """The one record a run goes on with after ``uuid``, if any."""
        kids = children[uuid]
        if len(kids) != 1 or uuid == leaf or uuid in kept:
            return None
        nxt = kids[0]
        if nxt in kept or (nxt in on_path) != (uuid in on_path):
            return None
        return nxt

    runs: list[tuple[str, ...]] = []
    run_of: dict[str, int] = {}
    lane_of: list[int] = []
    parent_run: list[int | None] = []
    next_lane = 0
    seen: set[str] = set()
    # (start of a run, its parent run, the lane it inherits or None for a new one)
    stack: list[tuple[str, int | None, int | None]] = [(r, None, None) for r in reversed(roots)]
    while stack:
        start, up_run, lane = stack.pop()
        if start in seen:
            continue
        members = [start]
        seen.add(start)
        nxt = continues(start)
        while nxt is not None and nxt not in seen:
            members.append(nxt)
            seen.add(nxt)
            nxt = continues(nxt)
        if lane is None:
            lane = next_lane
            next_lane += 1
        index = len(runs)
        runs.append(tuple(members))
        lane_of.append(lane)
        parent_run.append(up_run)
        for member in members:
            run_of[member] = index
        kids = [k for k in children[members[-1]] if k not in seen]
        # The first child goes on in this lane; pushed last, so laid out first.
        for position, kid in reversed(list(enumerate(kids))):
            stack.append((kid, index, lane if position == 0 else None))
    # A record in a cycle is reached from no root: each such loop starts a root of its own.
    for uuid in nodes:
        if uuid not in seen:
            seen.add(uuid)
            index = len(runs)
            runs.append((uuid,))
            run_of[uuid] = index
            lane_of.append(next_lane)
            next_lane += 1
            parent_run.append(None)

    by_row = sorted(range(len(runs)), key=lambda i: rank[runs[i][0]])
    row_of = {run: row for row, run in enumerate(by_row)}
    lanes = _reuse_lanes(lane_of, parent_run, row_of)
    placed = tuple(
        GraphNode(
            members=runs[i],
            x=lanes[i],
            y=row_of[i],
            on_path=runs[i][0] in on_path,
            kept=any(m in kept for m in runs[i]),
        )
        for i in by_row
    )
    edges = tuple(
        GraphEdge(row_of[up], row_of[i], placed[row_of[i]].on_path and placed[row_of[up]].on_path)
        for i, up in enumerate(parent_run)
        if up is not None
    )
    return TreeGraph(placed, edges)


def _reuse_lanes(
    group_of: Sequence[int], parent_run: Sequence[int | None], row_of: Mapping[int, int]
) -> list[int]:
    """Each run's lane, its branch's (``group_of``: the runs of one branch share a
    number, 0 the first root's: the active path's) packed into as few lanes as can be: a
    branch holds its lane from the row it forks at (its parent's) to its last row, and
    takes the lowest lane no other branch holds then, past lane 0 (the active path's
    alone). Without it a session compacted or rewound a hundred times is a hundred lanes
    wide, its labels out of sight."""
    span: dict[int, tuple[int, int]] = {}
    for run, group in enumerate(group_of):
        up = parent_run[run]
        start = row_of[run] if up is None or group_of[up] == group else row_of[up]
        low, high = span.get(group, (start, row_of[run]))
        span[group] = (min(low, start), max(high, row_of[run]))
    lane_of_group: dict[int, int] = {}
    ends: list[int] = []  # the last row held in each lane past lane 0
    for group in sorted(span, key=lambda g: (g != 0, span[g][0], g)):
        start, end = span[group]
        if group == 0:
            lane_of_group[group] = 0
            continue
        free = next((i for i, last in enumerate(ends) if last < start), None)
        if free is None:
            ends.append(end)
            free = len(ends) - 1
        else:
            ends[free] = end
        lane_of_group[group] = free + 1
    return [lane_of_group[group] for group in group_of]
