"""Every branch of a conversation as an outline: the tree cut into sections.

Pure over a :class:`~sessiontree.model.tree.Tree`; what ``export --all-branches`` shows.
Each main-chain record is in exactly one section, so a prefix two branches share is
shown once:

* section 0 is the active path, in its own order (what resuming sends: the blocks and
  results of parallel calls gathered);
* every other section is a branch hanging on a record shown before it (its ``fork``): a
  rewind, a re-send, or what a compaction summarized (a root of its own). Within it the
  tree is walked depth first; at a fork point (two or more turns below one record, the
  blocks of one response counted once) the turn whose branch holds the newest leaf goes
  on in the section (the branch ``switch --to`` would resume), each other turn starts a
  section of its own; a record that only hangs beside the branch (a tool result of a
  parallel call, an attachment) stays in it, before the record the branch goes on with;
* sections come in pre-order: a branch's own branches right after it, in the order they
  fork from it; then the roots the active path does not reach, in file order; then any
  records on a parent loop (reached from no root), each loop from its first record.

One pass: every record is placed once and its children looked at once (a session of
thousands of rewinds on a chain of a hundred thousand records is not a walk up the
chain per branch).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from sessiontree.model.branches import newest_leaves, summarized
from sessiontree.model.tree import Tree

#: Where a section's records are: on the active path, on a branch a rewind left, or
#: summarized by a compaction (as :mod:`sessiontree.views.marks` marks them).
SectionKind = Literal["active", "rewound", "summarized"]


@dataclass(frozen=True)
class Section:
    """One branch of the outline. ``records``: its main-chain records in reading order;
    ``fork``: the record its first one hangs on (None: a root, or a loop's first record),
    held by section ``parent``; ``depth``: how many forks away from a root section it is;
    ``loop``: reached from no root (its parents loop)."""

    records: tuple[str, ...]
    kind: SectionKind
    fork: str | None = None
    parent: int | None = None
    depth: int = 0
    loop: bool = False


def build_outline(tree: Tree, active_path: Sequence[str]) -> tuple[Section, ...]:
    """The sections of ``tree`` (see the module docstring); ``active_path`` root first."""
    main = {u: None for u in tree.nodes if not tree.is_sidechain(u)}  # (file order)
    away = summarized(tree, active_path)
    newest = newest_leaves(tree)
    home: dict[str, int] = {}
    sections: list[Section] = []

    def kind_of(uuid: str) -> SectionKind:
        return "summarized" if uuid in away else "rewound"

    def open_children(uuid: str) -> list[str]:
        return [c for c in tree.children.get(uuid, ()) if c in main and c not in home]

    def newness(uuid: str) -> tuple[str, int]:
        leaf = newest.get(uuid, uuid)
        return (tree.skeleton(leaf).timestamp or "", tree.nodes[leaf].number)

    def split(kids: list[str]) -> tuple[list[str], list[str]]:
        """The children that stay in the section (the one it goes on with last), and the
        turns that start sections of their own."""
        turns: list[str] = []
        responses: set[str] = set()
        beside: list[str] = []
        for kid in kids:
            skeleton = tree.skeleton(kid)
            response = skeleton.message.id if skeleton.message is not None else None
            if not tree.is_turn(kid) or (skeleton.type == "assistant" and response in responses):
                beside.append(kid)
                continue
            if skeleton.type == "assistant" and response:
                responses.add(response)
            turns.append(kid)
        goes_on = max(turns, key=newness) if turns else None
        # Beside the branch: what ends there first, then what goes on, in file order.
        beside.sort(key=lambda kid: (bool(tree.children.get(kid)), tree.nodes[kid].number))
        stays = beside if goes_on is None else [*beside, goes_on]
        return stays, [t for t in turns if t != goes_on]

    def walk(start: str, index: int) -> tuple[list[str], list[tuple[str, str]]]:
        """The records of the section from ``start``, and its branches: (fork, first)."""
        records: list[str] = []
        forks: list[tuple[str, str]] = []
        stack = [start]
        while stack:
            uuid = stack.pop()
            if uuid in home:
                continue  # (a parent loop comes back here)
            home[uuid] = index
            records.append(uuid)
            kids = open_children(uuid)
            if not kids:
                continue
            stays, branches = split(kids)
            forks.extend((uuid, first) for first in branches)
            stack.extend(reversed(stays))
        return records, forks

    def grow(pending: list[tuple[str, str | None, int | None, int]], *, loop: bool) -> None:
        """Place the sections ``pending`` starts (a stack: (first, fork, parent, depth)),
        each followed by its own branches."""
        while pending:
            first, fork, parent, depth = pending.pop()
            if first in home:
                continue
            index = len(sections)
            records, forks = walk(first, index)
            sections.append(Section(tuple(records), kind_of(first), fork, parent, depth, loop))
            pending.extend((kid, up, index, depth + 1) for up, kid in reversed(forks))

    path = [u for u in dict.fromkeys(active_path) if u in main]
    if path:
        for uuid in path:
            home[uuid] = 0
        sections.append(Section(tuple(path), "active"))
        # Its branches, top to bottom: anything below a record of it that it does not hold.
        below = [(up, kid) for up in path for kid in open_children(up)]
        grow([(kid, up, 0, 1) for up, kid in reversed(below)], loop=False)
    for root in _roots(tree, main):
        grow([(root, None, None, 0)], loop=False)
    for uuid in main:  # records on a parent loop: no root reaches them
        grow([(uuid, None, None, 0)], loop=True)
    return tuple(sections)


def _roots(tree: Tree, main: dict[str, None]) -> Iterator[str]:
    """Main-chain records with no parent among them, in file order."""
    for uuid in main:
        parent = tree.parent.get(uuid)
        if parent is None or parent not in main or parent == uuid:
            yield uuid
