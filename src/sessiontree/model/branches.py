"""The branches of a tree a reader can switch to: pure, over a
:class:`~sessiontree.model.tree.Tree`.

:func:`newest_leaves` gives, for each record, the leaf the client would resume were that
record's branch the active one; :func:`switchable_leaves` the off-path leaves worth
offering (``switch``, ``tree``'s footer, ``prompts --json``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sessiontree.model.tree import Tree


def newest_leaves(tree: Tree) -> dict[str, str]:
    """For each main-chain record the client loads, the newest leaf at or below it: the
    record with no loaded main-chain child, of the newest timestamp (the later in the
    file of equals; one without a timestamp is never newer). One pass, post-order."""
    memo: dict[str, str] = tree.memo.setdefault("newest-leaves", {})
    if memo:
        return memo

    def loaded_children(uuid: str) -> list[str]:
        return [c for c in tree.main_children(uuid) if tree.is_loaded(c)]

    def key(uuid: str) -> tuple[str, int]:
        return (tree.skeleton(uuid).timestamp or "", tree.nodes[uuid].number)

    for start in tree.nodes:
        if start in memo or tree.is_sidechain(start) or not tree.is_loaded(start):
            continue
        stack: list[tuple[str, bool]] = [(start, False)]
        on_walk: set[str] = set()  # (a parent loop must not walk forever)
        while stack:
            uuid, expanded = stack.pop()
            if uuid in memo:
                continue
            kids = loaded_children(uuid)
            pending = [c for c in kids if c not in memo and c not in on_walk]
            if not expanded and pending:
                on_walk.add(uuid)
                stack.append((uuid, True))
                stack.extend((c, False) for c in pending)
                continue
            below = [memo[c] for c in kids if c in memo]
            memo[uuid] = max(below, key=key) if below else uuid
    return memo


def switchable_leaves(tree: Tree, active_path: Sequence[str]) -> list[str]:
    """The off-path leaves a ``switch`` goes to, in file order: loaded by the client (not
    summarized away by a compaction), and not a block or tool result of a parallel call
    whose response went on from another of its blocks (resuming the branch takes that
    one along)."""
    leaves = [u for u in tree.off_path_leaves(active_path) if tree.is_loaded(u)]
    groups: dict[str, list[str]] = {}
    for uuid in tree.nodes:
        message_id = _response_id(tree, uuid)
        if message_id is not None:
            groups.setdefault(message_id, []).append(uuid)
    return [u for u in leaves if not _taken_along(tree, u, groups)]


def _response_id(tree: Tree, uuid: str) -> str | None:
    skeleton = tree.skeleton(uuid)
    if skeleton.type != "assistant" or skeleton.message is None:
        return None
    return skeleton.message.id or None


def _taken_along(tree: Tree, leaf: str, groups: dict[str, list[str]]) -> bool:
    skeleton = tree.skeleton(leaf)
    if skeleton.type == "assistant":
        block: str | None = leaf
    elif skeleton.type == "user" and not tree.is_turn(leaf):  # a tool result
        block = tree.parent.get(leaf)
    else:
        return False
    if block is None or block not in tree.nodes:
        return False
    message_id = _response_id(tree, block)
    if message_id is None:
        return False
    blocks = groups.get(message_id, [block])
    # The response: its blocks and the tool results hanging on them. It went on when
    # anything else hangs on one of those.
    members = {leaf, *blocks}
    members.update(c for b in blocks for c in tree.main_children(b) if not tree.is_turn(c))
    return any(c not in members for m in members for c in tree.main_children(m))


def summarized(tree: Tree, active_path: Sequence[str]) -> frozenset[str]:
    """The records a compaction summarized: those the last boundary left out
    (:attr:`~sessiontree.model.tree.Tree.compacted`), and, for a boundary on the active
    path that preserved nothing (a 1.x or 2.0.x client's: no ``preservedSegment``, its
    ``parentUuid`` null), the chain its ``logicalParentUuid`` ends, off the active path.
    What the readers mark as summarized rather than rewound."""
    on_path = set(active_path)
    away: set[str] = set(tree.compacted)
    for uuid in active_path:
        skeleton = tree.skeleton(uuid)
        if skeleton.subtype != "compact_boundary":
            continue
        current = skeleton.logicalParentUuid
        while current is not None and current in tree.nodes:
            if current in on_path or current in away:
                break  # (the rest is above: on the path, or marked already)
            away.add(current)
            current = tree.parent.get(current)
    return frozenset(away)
