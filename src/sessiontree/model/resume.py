"""Which conversation the client resumes: the leaf it picks and the path it sends.

Pure, over a :class:`~sessiontree.model.tree.Tree`. This is Claude Code 2.1.328's own
procedure (its transcript loader, read from the client and checked by experiment: every
record named by a ``last-prompt``, records moved, timestamps changed; see
``tests/interop``). ``Rn`` below is the last record written, ``vo`` the leaf the newest
``last-prompt`` names (:class:`~sessiontree.model.tree.Marks`).

Picking the leaf:

1. With no compaction re-link (or an ``explicit`` checkpoint): take ``vo`` if it exists,
   unless it is an ancestor of ``Rn`` (stale: the conversation went on past it); then
   ``Rn``. With no ``last-prompt`` at all, the newest record (by timestamp) below ``Rn``
   stands in for ``Rn``. The leaf is the nearest prompt or reply at or above that record.
2. Otherwise, from the leaf messages (the nearest prompt or reply above each childless
   record, if no prompt or reply hangs on it): with several, ``vo`` when it is one of
   them, else the message at or above ``Rn``.
3. Of what is left, the newest by timestamp; with nothing, the newest record. A record
   without a parseable timestamp is never "the newest", and a sidechain message is never
   the leaf: the client then finds no conversation, and so does sessiontree.

The path: up from the leaf through parents (a missing parent is bridged to the record
written just before, by timestamp, within 5 s), then the rest of the leaf's response
(its other blocks and the tool results answering them), then the leaf's non-message
descendants (attachments, turn ends), oldest first.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sessiontree.model.tree import Tree

#: How far back (ms) a missing parent may be bridged by timestamp.
BRIDGE_MS = 5000


def message_at_or_above(tree: Tree, uuid: str) -> str | None:
    seen: set[str] = set()
    current: str | None = uuid
    while current is not None and tree.is_loaded(current) and current not in seen:
        if tree.is_message(current):
            return current
        seen.add(current)
        current = tree.parent.get(current)
    return None


def _is_proper_ancestor(tree: Tree, ancestor: str, of: str) -> bool:
    seen: set[str] = set()
    current = tree.parent.get(of)
    while current is not None and current not in seen:
        if current == ancestor:
            return True
        seen.add(current)
        current = tree.parent.get(current)
    return False


def _newest_below(tree: Tree, uuid: str) -> str:
    """The newest record by timestamp among ``uuid``'s descendants (``uuid`` if none)."""
    best, best_time = uuid, ""
    queue = deque(tree.children.get(uuid, ()))
    seen = {uuid}
    found: list[str] = []
    while queue:
        child = queue.popleft()
        if child in seen or not tree.is_loaded(child):
            continue
        seen.add(child)
        found.append(child)
        queue.extend(tree.children.get(child, ()))
    for child in sorted(found, key=tree.order.__getitem__):
        timestamp = tree.skeleton(child).timestamp
        if not tree.is_sidechain(child) and isinstance(timestamp, str) and timestamp >= best_time:
            best, best_time = child, timestamp
    return best


def _leaf_messages(tree: Tree) -> list[str]:
    """The nearest message above each childless record, unless a message hangs on it."""
    loaded = [u for u in tree.nodes if u not in tree.compacted]
    with_message_child = {
        p for u in loaded if (p := tree.parent.get(u)) is not None and tree.is_message(u)
    }
    has_child = {p for u in loaded if (p := tree.parent.get(u)) is not None}
    above: dict[str, str | None] = {}  # shared by the walks: each record is walked once
    out: dict[str, None] = {}
    for uuid in loaded:
        if uuid in has_child:
            continue
        message = _message_above(tree, uuid, above)
        if message is not None and message not in with_message_child:
            out[message] = None
    return list(out)


def _message_above(tree: Tree, uuid: str, above: dict[str, str | None]) -> str | None:
    """:func:`message_at_or_above`, remembering the answer for every record it walks
    through in ``above`` (the answer is the same from each of them: the first message up
    their common chain, or None where it leaves the loaded records or loops)."""
    walked: list[str] = []
    on_walk: set[str] = set()
    current: str | None = uuid
    found: str | None = None
    while current is not None and tree.is_loaded(current) and current not in on_walk:
        if current in above:
            found = above[current]
            break
        if tree.is_message(current):
            found = current
            break
        walked.append(current)
        on_walk.add(current)
        current = tree.parent.get(current)
    for step in walked:
        above[step] = found
    return found


def _epoch_ms(timestamp: str | None) -> float:
    if not timestamp:
        return float("-inf")
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return float("-inf")


def _newest(tree: Tree, uuids: list[str]) -> str | None:
    best, best_time = None, float("-inf")
    for uuid in uuids:
        moment = _epoch_ms(tree.skeleton(uuid).timestamp)
        if moment > best_time:
            best, best_time = uuid, moment
    return best


def resolve_leaf(tree: Tree) -> str | None:
    """The message the client resumes from, or None for an empty transcript."""
    marks = tree.marks
    if marks.cleared:
        return None  # rewound to before the first prompt: the client resumes empty
    last_row = marks.last_row if marks.last_row in tree.nodes else None
    named = marks.named if marks.named is not None and tree.is_loaded(marks.named) else None
    explicit = marks.named_explicit and named is not None and not tree.is_sidechain(named)
    if tree.compaction_tail is None or explicit:
        chosen = named
        if (
            chosen is not None
            and not marks.named_explicit
            and last_row is not None
            and last_row != chosen
            and _is_proper_ancestor(tree, chosen, of=last_row)
        ):
            chosen = last_row
        if chosen is None and tree.compaction_tail is None:
            chosen = last_row
            if last_row is not None and not marks.saw_last_prompt and marks.newest_row != last_row:
                chosen = _newest_below(tree, last_row)
        if chosen is not None:
            message = message_at_or_above(tree, chosen)
            if message is not None:
                # A sidechain message here means the client finds no conversation.
                return None if tree.is_sidechain(message) else message
    leaves = _leaf_messages(tree)
    if len(leaves) > 1:
        pick = named if named in leaves else last_row
        message = message_at_or_above(tree, pick) if pick is not None else None
        if message is not None:
            leaves = [message]
    candidates = [u for u in leaves if not tree.is_sidechain(u)]
    if candidates:
        return _newest(tree, candidates)
    if leaves:
        return None
    return _newest(tree, [u for u in tree.nodes if tree.is_loaded(u) and not tree.is_sidechain(u)])


def _bridge(tree: Tree, uuid: str, used: set[str]) -> str | None:
    """The record written just before ``uuid`` (by time, within 5 s) to stand in for its
    missing parent, on the same side (main chain or sidechain), not already used; of
    records written at the same moment, the first seen."""
    moment = _epoch_ms(tree.skeleton(uuid).timestamp)
    if moment == float("-inf"):
        return None
    times, uuids = _timeline(tree, tree.is_sidechain(uuid))
    # Walk down from the last record at or before ``moment``, one moment at a time.
    high = bisect_right(times, moment)
    while high > 0 and moment - times[high - 1] <= BRIDGE_MS:
        low = bisect_left(times, times[high - 1], 0, high)
        for other in uuids[low:high]:
            if other not in used:
                return other
        high = low
    return None


def _timeline(tree: Tree, sidechain: bool) -> tuple[list[float], list[str]]:
    """The records a bridge may land on, on one side, by (time, first-seen order): built
    once per tree, so a transcript whose every parent is missing is not quadratic."""
    key = f"bridge-timeline-{sidechain}"
    cached: tuple[list[float], list[str]] | None = tree.memo.get(key)
    if cached is not None:
        return cached
    entries: list[tuple[float, int, str]] = []
    for index, other in enumerate(tree.nodes):
        if tree.is_sidechain(other) != sidechain or not tree.is_loaded(other):
            continue
        skeleton = tree.skeleton(other)
        if skeleton.type == "system" and skeleton.subtype == "file_snapshot":
            continue
        moment = _epoch_ms(skeleton.timestamp)
        if moment != float("-inf"):
            entries.append((moment, index, other))
    entries.sort()
    built = ([e[0] for e in entries], [e[2] for e in entries])
    tree.memo[key] = built
    return built


def _rest_of_response(tree: Tree, chain: list[str]) -> list[str]:
    """The leaf response's blocks missing from the chain and the tool results answering
    them, in file order (the client recovers them for the last response it sends)."""
    leaf = chain[-1]
    skeleton = tree.skeleton(leaf)
    message_id = skeleton.message.id if skeleton.message else None
    if skeleton.type != "assistant" or message_id is None:
        return []
    on_chain = set(chain)
    blocks = {leaf}
    frontier = [leaf]
    while frontier:  # the response's blocks chain one after another below the leaf
        for child in tree.children.get(frontier.pop(), ()):
            child_skeleton = tree.skeleton(child)
            same = child_skeleton.message.id if child_skeleton.message else None
            if child_skeleton.type == "assistant" and same == message_id and child not in blocks:
                blocks.add(child)
                frontier.append(child)
    results = {
        child
        for block in blocks
        for child in tree.children.get(block, ())
        if tree.skeleton(child).type == "user" and not tree.is_turn(child)
    }
    extra = (blocks | results) - on_chain
    return sorted(extra, key=lambda u: tree.nodes[u].number)


def _non_message_descendants(tree: Tree, leaf: str, used: set[str]) -> list[str]:
    found: list[str] = []
    queue = deque([leaf])
    while queue:
        for child in tree.children.get(queue.popleft(), ()):
            if child in used or tree.is_message(child) or not tree.is_loaded(child):
                continue
            used.add(child)
            found.append(child)
            queue.append(child)
    found.sort(key=lambda u: tree.skeleton(u).timestamp or "")
    return found


def active_path(tree: Tree) -> list[str]:
    """The records resuming sends, root first (see the module docstring)."""
    leaf = resolve_leaf(tree)
    if leaf is None:
        return []
    chain = tree.path_to(leaf, bridge=lambda uuid, used: _bridge(tree, uuid, used))
    chain.extend(_rest_of_response(tree, chain))
    chain.extend(_non_message_descendants(tree, leaf, set(chain)))
    return chain
