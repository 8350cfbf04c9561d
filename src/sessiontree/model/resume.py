"""Which conversation the client resumes: the leaf it picks and the path it sends.

Pure, over a :class:`~sessiontree.model.tree.Tree`. This is Claude Code 2.1.328's own
procedure (its transcript loader, read from the client and checked by experiment: every
record named by a ``last-prompt``, records moved, timestamps changed; see
``tests/interop``). Below, *the last row* is the last record written and *the bookmark*
the leaf the newest ``last-prompt`` names (:class:`Marks`).

Picking the leaf:

1. With no compaction re-link (or an ``explicit`` checkpoint): take the bookmark if it
   exists, unless it is an ancestor of the last row (stale: the conversation went on past
   it); then the last row. With no ``last-prompt`` at all, the newest record (by
   timestamp) below the last row stands in for it. The leaf is the nearest prompt or
   reply at or above that record.
2. Otherwise, from the leaf messages (the nearest prompt or reply above each childless
   record, if no prompt or reply hangs on it): with several, the bookmark when it is one
   of them, else the message at or above the last row.
3. Of what is left, the newest by timestamp; with nothing, the newest record. A record
   without a parseable timestamp is never "the newest", and a sidechain message is never
   the leaf: the client then finds no conversation, and so does sessiontree.

The path: up from the leaf through parents (a missing parent is bridged to the record
written just before, by timestamp, within 5 s); every response on it made whole (the
blocks and tool results of parallel tool calls that fork off the chain, put back in
file order within the response's span); then the leaf's non-message descendants
(attachments, turn ends), oldest first.
"""

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

import msgspec

from sessiontree.model.records import Line, Skeleton

#: How far back (ms) a missing parent may be bridged by timestamp.
BRIDGE_MS = 5000


class Marks(msgspec.Struct):
    """What the client notes while it reads a transcript, in file order."""

    #: The last main-chain record written (file order, a later copy of a uuid counts).
    last_row: str | None = None
    #: The main-chain record with the newest timestamp (the first of equals).
    newest_row: str | None = None
    newest_timestamp: str = ""
    #: Whether any ``last-prompt`` naming a leaf was written at all.
    saw_last_prompt: bool = False
    #: The leaf the newest ``last-prompt`` names (forgotten at a compact boundary).
    named: str | None = None
    #: That ``last-prompt`` said ``explicit`` and no record was written after it.
    named_explicit: bool = False
    #: An explicit ``last-prompt`` with a null leaf (a rewind to before the first prompt)
    #: and no record written after it: the conversation resumes empty.
    cleared: bool = False


class Tree(Protocol):
    """What resuming reads of a :class:`sessiontree.model.tree.Tree`."""

    nodes: dict[str, Line]
    parent: dict[str, str | None]
    children: dict[str, list[str]]
    marks: Marks
    compacted: frozenset[str]
    compaction_tail: str | None
    memo: dict[str, Any]

    @property
    def order(self) -> dict[str, int]: ...

    def skeleton(self, uuid: str) -> Skeleton: ...

    def is_loaded(self, uuid: str) -> bool: ...

    def is_message(self, uuid: str) -> bool: ...

    def is_sidechain(self, uuid: str) -> bool: ...

    def is_turn(self, uuid: str) -> bool: ...

    def path_to(
        self, leaf: str, *, bridge: Callable[[str, set[str]], str | None] | None = None
    ) -> list[str]: ...


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
    decided, leaf = leaf_from_marks(tree)
    if decided:
        return leaf
    leaves = _leaf_messages(tree)
    marks = tree.marks
    last_row = marks.last_row if marks.last_row in tree.nodes else None
    named = marks.named if marks.named is not None and tree.is_loaded(marks.named) else None
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


def leaf_from_marks(tree: Tree) -> tuple[bool, str | None]:
    """Step 1 of picking the leaf (see the module docstring), which reads only the marks
    and the records at and above them: (True, the leaf) when it decides, else (False,
    None) and the leaf is picked among all the leaf messages."""
    marks = tree.marks
    if marks.cleared:
        return True, None  # rewound to before the first prompt: the client resumes empty
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
                return True, (None if tree.is_sidechain(message) else message)
    return False, None


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


def _message_id(tree: Tree, uuid: str) -> str | None:
    return _response_id(tree.skeleton(uuid))


def _response_id(skeleton: Skeleton | None) -> str | None:
    """The ``message.id`` of an assistant record."""
    if skeleton is None or skeleton.type != "assistant" or skeleton.message is None:
        return None
    return skeleton.message.id or None


def _is_tool_result(tree: Tree, uuid: str) -> bool:
    """A user record answering a call (not a prompt: ``toolUseResult`` or a source)."""
    return tree.skeleton(uuid).type == "user" and not tree.is_turn(uuid)


def _continues_response(tree: Tree, uuid: str, message_id: str) -> bool:
    """What may follow a response's blocks on the chain and still belong to its span:
    more of its blocks, tool results and meta rows, attachments, and system rows other
    than a compact boundary (the client's span end, read from 2.1.328)."""
    skeleton = tree.skeleton(uuid)
    kind = skeleton.type
    if kind == "assistant":
        return _message_id(tree, uuid) == message_id
    if kind == "user":
        return skeleton.isMeta is True or _is_tool_result(tree, uuid)
    if kind == "system":
        return skeleton.subtype != "compact_boundary"
    return kind == "attachment"


def _recover_responses(tree: Tree, chain: list[str], summarized: frozenset[str]) -> list[str]:
    """The chain with every response made whole, as the client loads it.

    A response with several tool calls is written as one assistant record per block
    (one ``message.id``) chained one below the other, and each tool result hangs on its
    own call's record: the conversation goes on from one of them, so the other blocks
    and results are off the chain. For each response on the chain, the client gathers
    all records with its ``message.id`` and the tool results hanging on them, and puts
    the ones the chain lacks back into the response's span (from its first block to the
    last record that still continues it), in file order. ``summarized``: the records
    the client does not load (:attr:`Tree.compacted`, or none for a chain of them)."""
    nodes = tree.nodes
    ids = [_response_id(nodes[uuid].skeleton) for uuid in chain]  # (inline: a long chain)
    on_chain = {m for m in ids if m is not None}
    taken = set(chain)
    # Only a response with a record, or a tool result of one, off the chain has anything
    # to recover: found from the records off the chain (none, on a path that holds them all).
    on_chain = _with_records_off(tree, taken, on_chain, summarized)
    if not on_chain:
        return chain
    by_message: dict[str, list[str]] = {}  # of those responses: all their records
    compacted = summarized
    for uuid, row in tree.nodes.items():  # (inline: this loop is over the whole file)
        skeleton = row.skeleton
        if (
            skeleton is not None
            and skeleton.type == "assistant"
            and skeleton.message is not None
            and skeleton.message.id in on_chain
            and uuid not in compacted
        ):
            by_message.setdefault(skeleton.message.id, []).append(uuid)
    position = {uuid: index for index, uuid in enumerate(chain)}
    spans: list[tuple[int, int, list[str]]] = []
    seen_responses: set[str] = set()
    for index, (uuid, message_id) in enumerate(zip(chain, ids, strict=True)):
        if message_id is None or message_id in seen_responses or message_id not in on_chain:
            continue
        seen_responses.add(message_id)
        blocks = by_message.get(message_id, [uuid])
        recovered = [b for b in blocks if b not in taken]
        for block in blocks:
            for child in tree.children.get(block, ()):
                if child not in taken and child not in summarized and _is_tool_result(tree, child):
                    recovered.append(child)
        if not recovered:
            continue
        end = max([index, *(position[b] for b in blocks if b in position)]) + 1
        while end < len(chain) and _continues_response(tree, chain[end], message_id):
            end += 1
        taken.update(recovered)
        spans.append((index, end, recovered))
    if not spans:
        return chain
    merged: list[tuple[int, int, list[str]]] = []
    for start, end, recovered in spans:  # already in start order
        if merged and start < merged[-1][1]:
            last_start, last_end, last_recovered = merged[-1]
            merged[-1] = (last_start, max(last_end, end), last_recovered + recovered)
        else:
            merged.append((start, end, recovered))
    number = {u: tree.nodes[u].number for span in merged for u in span[2]}
    out: list[str] = []
    done = 0
    for start, end, recovered in merged:
        out.extend(chain[done : start + 1])
        pending = sorted(recovered, key=number.__getitem__)
        next_recovered = 0
        for uuid in chain[start + 1 : end]:
            line = tree.nodes[uuid].number
            while next_recovered < len(pending) and number[pending[next_recovered]] < line:
                out.append(pending[next_recovered])
                next_recovered += 1
            out.append(uuid)
        out.extend(pending[next_recovered:])
        done = end
    out.extend(chain[done:])
    return out


def _with_records_off(
    tree: Tree, taken: set[str], responses: set[str], summarized: frozenset[str]
) -> set[str]:
    """Those of ``responses`` (``message.id`` s on the chain ``taken`` holds) with a record
    off the chain that is not summarized away, or with a loaded tool result off the
    chain below one of their records: every response that has anything to recover, and
    maybe a few more (those are looked at in full, and found to have nothing)."""
    if len(taken) == len(tree.nodes):
        return set()  # every record is on the chain (it holds only records)
    found: set[str] = set()
    for uuid in tree.nodes:
        if uuid in taken:
            continue
        if uuid not in summarized and (message_id := _message_id(tree, uuid)) in responses:
            found.add(message_id)  # (a record of the response off the chain)
        elif uuid not in summarized and _is_tool_result(tree, uuid):
            parent = tree.parent.get(uuid)  # (summarized away or not: a guess may be more)
            if parent is not None and parent in tree.nodes:
                message_id = _message_id(tree, parent)
                if message_id in responses:
                    found.add(message_id)  # (a result of one of its records)
    return found


def _non_message_descendants(
    tree: Tree, leaf: str, used: set[str], summarized: frozenset[str]
) -> list[str]:
    found: list[str] = []
    queue = deque([leaf])
    while queue:
        for child in tree.children.get(queue.popleft(), ()):
            if child in used or tree.is_message(child) or child in summarized:
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
    chain = _recover_responses(tree, _bridged_path(tree, leaf), tree.compacted)
    chain.extend(_non_message_descendants(tree, leaf, set(chain), tree.compacted))
    return chain


def _bridged_path(tree: Tree, leaf: str) -> list[str]:
    return tree.path_to(leaf, bridge=lambda uuid, used: _bridge(tree, uuid, used))


def branch_path(tree: Tree, leaf: str) -> list[str]:
    """The records resuming sends were ``leaf`` (any record) the leaf, root first: the
    chain up to it made whole, then its non-message descendants (see the module
    docstring); what a fork at ``leaf`` copies and what a branch's page shows.

    A record of the chain the client resumes keeps that chain up to it (so a parent
    bridged there is bridged here too). A record a compaction summarized away is taken
    as the client loaded it before that compaction: its chain is not bridged past, and
    the blocks and results of its responses are gathered among the summarized records
    too."""
    if tree.is_loaded(leaf):
        summarized = tree.compacted
        resumed = resolve_leaf(tree)
        chain = [] if resumed is None else _bridged_path(tree, resumed)
        chain = chain[: chain.index(leaf) + 1] if leaf in chain else _bridged_path(tree, leaf)
    else:
        summarized = frozenset()
        chain = tree.path_to(leaf)
    chain = _recover_responses(tree, chain, summarized)
    chain.extend(_non_message_descendants(tree, leaf, set(chain), summarized))
    return chain
