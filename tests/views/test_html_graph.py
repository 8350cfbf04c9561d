"""The tree laid out to draw (``views/html/graph.py``): pure, property-tested.

Every record placed once, in one node whose records are a chain; edges only between
placed nodes, each the tree's own link; the active path marked and drawn in lane 0;
long runs folded, so a 10,000-record session stays a handful of nodes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.views.html.graph import TreeGraph, layout_tree


@st.composite
def trees(draw: st.DrawFn) -> tuple[dict[str, str | None], list[str], set[str]]:
    """A random forest (uuid → parent; some parents missing from it), an active path
    (a root-to-record chain, as the client's is) and records to keep apart."""
    size = draw(st.integers(1, 60))
    parent: dict[str, str | None] = {}
    for i in range(size):
        choice = draw(st.integers(-2, i - 1)) if i else -1
        parent[f"n{i}"] = None if choice == -1 else ("gone" if choice == -2 else f"n{choice}")
    end = f"n{draw(st.integers(0, size - 1))}"
    path = [end]
    while (up := parent[path[-1]]) is not None and up in parent:
        path.append(up)
    keep = {f"n{i}" for i in draw(st.sets(st.integers(0, size - 1), max_size=5))}
    return parent, path[::-1], keep


def check(graph: TreeGraph, parent: dict[str, str | None], path: list[str], keep: set[str]) -> None:
    members = [m for node in graph.nodes for m in node.members]
    assert sorted(members) == sorted(parent), "every record placed exactly once"
    assert sorted(n.y for n in graph.nodes) == list(range(len(graph.nodes)))
    where = {m: i for i, node in enumerate(graph.nodes) for m in node.members}
    on_path = set(path)
    for node in graph.nodes:
        for a, b in zip(node.members, node.members[1:], strict=False):
            assert parent[b] == a, "a folded node is a chain"
        assert node.on_path == any(m in on_path for m in node.members)
        assert node.on_path == all(m in on_path for m in node.members)
        if node.kept:
            assert node.count == 1 and node.tip in keep
    for edge in graph.edges:
        assert 0 <= edge.parent < len(graph.nodes) and 0 <= edge.child < len(graph.nodes)
        child, up = graph.nodes[edge.child], graph.nodes[edge.parent]
        assert parent[child.members[0]] == up.tip, "an edge is the tree's own link"
    linked = {graph.nodes[e.child].members[0] for e in graph.edges}
    for uuid, up in parent.items():
        if up in parent and up != uuid and where[up] != where[uuid]:
            assert uuid in linked, "every link between nodes is drawn"
    for uuid in path:
        assert graph.nodes[where[uuid]].x == 0, "the active path runs down lane 0"
    at = {(node.x, node.y) for node in graph.nodes}
    for edge in graph.edges:  # drawn down the child's lane: through no other node
        child, up = graph.nodes[edge.child], graph.nodes[edge.parent]
        low, high = sorted((up.y, child.y))
        assert not any((child.x, row) in at for row in range(low + 1, high)), edge
        if up.x != child.x:  # it leaves its parent's row into a lane free there
            assert (child.x, up.y) not in at, edge


@settings(max_examples=300, deadline=None)
@given(trees())
def test_layout_places_every_record_once_and_marks_the_active_path(
    case: tuple[dict[str, str | None], list[str], set[str]],
) -> None:
    parent, path, keep = case
    order = {u: i for i, u in enumerate(parent)}
    check(layout_tree(parent, order, path, keep=keep), parent, path, keep)


def test_a_long_run_folds_into_one_node() -> None:
    parent: dict[str, str | None] = {"r0": None}
    parent |= {f"r{i}": f"r{i - 1}" for i in range(1, 10_000)}
    path = list(parent)
    graph = layout_tree(parent, {u: i for i, u in enumerate(parent)}, path)
    assert [n.count for n in graph.nodes] == [10_000]
    assert graph.nodes[0].on_path and graph.edges == ()


def test_a_rewound_branch_gets_its_own_lane_and_node() -> None:
    # a - b - c - d (active) ; b - x - y (rewound)
    parent: dict[str, str | None] = {
        "a": None, "b": "a", "c": "b", "x": "b", "y": "x", "d": "c",
    }  # fmt: skip
    graph = layout_tree(parent, {u: i for i, u in enumerate(parent)}, ["a", "b", "c", "d"])
    nodes = {n.members: n for n in graph.nodes}
    assert set(nodes) == {("a", "b"), ("c", "d"), ("x", "y")}
    assert nodes[("x", "y")].x == 1 and not nodes[("x", "y")].on_path
    assert nodes[("c", "d")].x == 0 and nodes[("c", "d")].on_path
    assert {
        (graph.nodes[e.parent].tip, graph.nodes[e.child].tip, e.on_path) for e in graph.edges
    } == {
        ("b", "d", True),
        ("b", "y", False),
    }


def test_the_run_is_cut_where_the_active_path_ends() -> None:
    """A rewind's leaf has the rewound branch below it: the leaf ends its node."""
    parent: dict[str, str | None] = {"a": None, "b": "a", "c": "b", "d": "c"}
    graph = layout_tree(parent, {u: i for i, u in enumerate(parent)}, ["a", "b"])
    assert [(n.members, n.on_path) for n in graph.nodes] == [
        (("a", "b"), True),
        (("c", "d"), False),
    ]


def test_kept_records_stand_alone_and_cycles_are_still_placed() -> None:
    parent: dict[str, str | None] = {"a": None, "b": "a", "c": "b", "x": "y", "y": "x"}
    graph = layout_tree(parent, {u: i for i, u in enumerate(parent)}, ["a", "b", "c"], keep={"b"})
    assert [n.members for n in graph.nodes][:3] == [("a",), ("b",), ("c",)]
    assert sorted(m for n in graph.nodes for m in n.members) == ["a", "b", "c", "x", "y"]


def test_branches_that_have_ended_give_their_lane_back() -> None:
    """A session rewound (or compacted) a hundred times, one branch after another, is
    three lanes wide (the active path's and two for the branches), not a hundred."""
    parent: dict[str, str | None] = {"p0": None}
    for i in range(1, 300):
        parent[f"p{i}"] = f"p{i - 1}"
        if i % 3 == 0:  # a rewound branch of two records off each third record
            parent[f"x{i}"] = f"p{i}"
            parent[f"y{i}"] = f"x{i}"
    order = {u: i for i, u in enumerate(parent)}
    path = [f"p{i}" for i in range(300)]
    graph = layout_tree(parent, order, path)
    check(graph, parent, path, set())
    assert graph.lanes <= 3, graph.lanes
    assert len({n.x for n in graph.nodes if not n.on_path}) >= 1
    # two branches at once (overlapping rows) still take lanes of their own
    both: dict[str, str | None] = {"a": None, "b": "a", "c": "a", "d": "b", "e": "c", "f": "a"}
    graph = layout_tree(both, {u: i for i, u in enumerate(both)}, ["a", "f"])
    lanes = {n.tip: n.x for n in graph.nodes}
    assert lanes["f"] == 0
    assert len({lanes["d"], lanes["e"]}) == 2 and 0 not in {lanes["d"], lanes["e"]}


def test_a_tree_of_thousands_of_branches_draws_in_linear_time() -> None:
    """10,000 rewinds: 20,000 nodes. The drawing asks the graph's size once per node (a
    label's place); measured anew each time, that was 400 million steps."""
    import time

    from sessiontree.views.html import environment
    from sessiontree.views.html.pages import GraphView

    parent: dict[str, str | None] = {}
    at: str | None = None
    for i in range(10_000):
        parent[f"b{i}"] = at  # a branch a rewind left, beside the chain
        parent[f"c{i}"] = at
        at = f"c{i}"
    graph = layout_tree(
        parent, {u: i for i, u in enumerate(parent)}, [u for u in parent if u[0] == "c"]
    )
    assert len(graph.nodes) >= 20_000
    macro = environment().from_string('{% import "_macros.html" as m %}{{ m.tree(g, h) }}')
    started = time.perf_counter()
    drawn = macro.render(g=GraphView(graph, {}, frozenset()), h=lambda node: None)
    took = time.perf_counter() - started
    assert drawn.count("<circle") == len(graph.nodes)
    assert took < 3, took
