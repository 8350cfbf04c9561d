"""What a session page shows, built from the engine: the conversation of one branch,
paged, and the tree drawn as a graph. Used by the web viewer and the HTML export alike.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace

from sessiontree.catalog.index import read_session_info
from sessiontree.conversation.transcript import Transcript
from sessiontree.model.branches import newest_leaves
from sessiontree.views.html.conversation import Item, build_items, describe_records
from sessiontree.views.html.graph import GraphNode, TreeGraph, layout_tree
from sessiontree.views.text import printable, printable_line

#: Records of the conversation one page (one screen and a little more) shows.
PAGE = 60
#: How long a node's label may be.
LABEL = 60
#: Records of a node without a prompt read to say what it holds.
DESCRIBED = 8
#: A tree of up to this many records is drawn in the session page itself; a bigger one
#: is fetched once the page shows (its layout takes longer than the first screen may).
INLINE_GRAPH_RECORDS = 5000


@dataclass(frozen=True)
class BranchView:
    """One branch of a session as a page shows it.

    ``path``: root to ``leaf``, the records of the branch; ``items`` those of
    ``path[start:start + PAGE]`` a reader wants; ``more``: where the next page starts
    (None: this is the last)."""

    session_id: str
    title: str
    leaf: str | None
    active_leaf: str | None
    on_active_path: bool
    path: tuple[str, ...]
    items: tuple[Item, ...]
    start: int
    more: int | None


def session_title(transcript: Transcript) -> str:
    """The title ``sessions`` shows (custom, else AI title, else first prompt; a stored
    transcript's, as its sync read it), else ``Session <id>``; its control characters
    shown as escapes."""
    from sessiontree.storage.store.reads import StoredLines, stored_title

    reader = transcript.reader
    title: str | None
    if isinstance(reader, StoredLines):  # (its file is on the machine that synced it)
        title = stored_title(reader.conn, reader.source)
    else:
        try:
            title = read_session_info(transcript.path).title
        except (OSError, ValueError):
            title = None
    return printable(title) if title else f"Session {transcript.session_id}"


def branch_leaf(transcript: Transcript, uuid: str | None) -> str | None:
    """The leaf a page of ``uuid`` shows: the newest leaf below it (a record of a
    rewound branch stands for that branch); None (or unknown): the active leaf."""
    tree = transcript.tree
    if uuid is None or uuid not in tree.nodes or tree.is_sidechain(uuid):
        return transcript.leaf
    leaf = newest_leaves(tree).get(uuid, uuid)
    if uuid == transcript.leaf or leaf in transcript.active_path:
        return transcript.leaf  # the branch resumed: its page is the active path's
    return leaf


def branch_view(
    transcript: Transcript,
    *,
    leaf: str | None = None,
    start: int = 0,
    page: int | None = PAGE,
    title: str | None = None,
) -> BranchView:
    """The page of the branch ending at ``leaf`` (None: the active path) from record
    ``start`` on; ``page`` None: the whole branch."""
    active_leaf = transcript.leaf
    shown_leaf = leaf if leaf is not None else active_leaf
    if shown_leaf is None:
        path: list[str] = []
    elif shown_leaf == active_leaf:
        path = list(transcript.active_path)
    else:  # (as resuming it would send it: every call of a response with several)
        path = transcript.tree.branch_path(shown_leaf)
    start = max(0, min(start, len(path)))
    end = len(path) if page is None else min(len(path), start + page)
    items = [
        _with_summarized(transcript, it) for it in build_items(transcript.records(path[start:end]))
    ]
    return BranchView(
        session_id=transcript.session_id,
        title=title if title is not None else session_title(transcript),
        leaf=shown_leaf,
        active_leaf=active_leaf,
        on_active_path=shown_leaf == active_leaf,
        path=tuple(path),
        items=tuple(items),
        start=start,
        more=end if end < len(path) else None,
    )


def summarized_record(
    transcript: Transcript, logical: str, *, on_path: Collection[str] | None = None
) -> str | None:
    """The last record a compaction summarized, from its boundary's logical parent: that
    one, or, when the compaction kept it (a preserved segment, now on the active path),
    the first of its original ancestors the active path no longer holds. ``on_path``:
    the active path's records as a set, when the caller asks for many."""
    tree = transcript.tree
    on_path = set(transcript.active_path) if on_path is None else on_path
    at: str | None = logical
    seen: set[str] = set()
    while at is not None and at in tree.nodes and at in on_path and at not in seen:
        seen.add(at)
        skeleton = tree.nodes[at].skeleton
        at = skeleton.parentUuid if skeleton is not None else None
    return at if at is not None and at in tree.nodes and at not in on_path else None


def _with_summarized(transcript: Transcript, item: Item) -> Item:
    if item.summarized is None:
        return item
    return replace(item, summarized=summarized_record(transcript, item.summarized))


@dataclass(frozen=True)
class GraphView:
    """The tree drawn: the layout, a label for each node and which node is selected."""

    graph: TreeGraph
    labels: dict[str, str]
    #: The tips of the nodes that hold a selected record.
    selected: frozenset[str]


def graph_view(transcript: Transcript, *, selected: Collection[str] = ()) -> GraphView:
    """The tree of ``transcript`` (its conversation's records, sidechains left out), laid
    out with compaction boundaries on nodes of their own; ``selected``: the records of
    the branch a page shows, marked. Labels: the first prompt a node stands for, else
    what its records are (:func:`~sessiontree.views.html.conversation.describe_records`:
    the tool a call runs, a slash command, an empty message), never a bare record type."""
    tree = transcript.tree
    parent = {u: tree.parent.get(u) for u in tree.nodes if not tree.is_sidechain(u)}
    order = {u: tree.nodes[u].number for u in parent}
    boundaries = {
        u
        for u in parent
        if (sk := tree.nodes[u].skeleton) is not None and sk.subtype == "compact_boundary"
    }
    graph = layout_tree(parent, order, transcript.active_path, keep=boundaries)
    prompts = set(transcript.prompt_uuids())
    candidates = [m for node in graph.nodes for m in node.members if m in prompts]
    texts = {
        str(r.uuid): printable_line(r.text(), LABEL) or "(empty message)"
        for r in transcript.records(candidates)
        if r.is_prompt
    }
    labels: dict[str, str] = {}
    unnamed: list[GraphNode] = []
    for node in graph.nodes:
        prompt = next((texts[m] for m in node.members if m in texts), None)
        if prompt is not None:
            labels[node.tip] = prompt
        elif node.tip in boundaries:
            labels[node.tip] = "compacted"
        else:
            unnamed.append(node)
    labels.update(_described(transcript, unnamed))
    chosen = set(selected)
    tips = frozenset(n.tip for n in graph.nodes if chosen.intersection(n.members))
    return GraphView(graph, labels, tips)


def _described(transcript: Transcript, nodes: Sequence[GraphNode]) -> dict[str, str]:
    """The labels of nodes that hold no prompt, from their first :data:`DESCRIBED`
    records and the record above them (where the call a lone result answers is)."""
    tree = transcript.tree
    above_of: dict[str, str] = {}
    wanted: dict[str, list[str]] = {}
    for node in nodes:
        up = tree.parent.get(node.members[0])
        if up is not None:
            above_of[node.tip] = up
        wanted[node.tip] = list(dict.fromkeys([*node.members[:DESCRIBED], node.tip]))
    every = [*above_of.values(), *(u for uuids in wanted.values() for u in uuids)]
    decoded = {str(r.uuid): r for r in transcript.records(list(dict.fromkeys(every)))}
    return {
        tip: describe_records(
            [decoded[u] for u in uuids if u in decoded],
            above=decoded.get(above_of.get(tip, "")),
            limit=LABEL,
        )
        for tip, uuids in wanted.items()
    }


#: Records decoded at a time when a whole branch is streamed.
BATCH = 500


def iter_items(transcript: Transcript, path: Sequence[str]) -> Iterator[Item]:
    """The items of the records of ``path``, decoded :data:`BATCH` at a time."""
    for at in range(0, len(path), BATCH):
        yield from build_items(transcript.records(path[at : at + BATCH]))
