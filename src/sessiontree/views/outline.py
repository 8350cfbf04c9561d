"""Every branch of a session, read for an export (``export --all-branches``).

The sections of :func:`~sessiontree.model.outline.build_outline`, each with the records
a reader wants (:func:`~sessiontree.views.shapes.is_shown`, told from the skeletons, so
no other record is decoded), decoded in one stream in the order they are shown: one
record in memory at a time, never cached (a 200 MB transcript's would take gigabytes),
the file read ahead where a branch runs forward through it. A section with nothing to
show (an attachment beside the active path) is passed over.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.outline import Section, build_outline
from sessiontree.model.records import Problem, Record
from sessiontree.model.tree import Tree
from sessiontree.storage.jsonl import iter_path_records
from sessiontree.views.shapes import is_shown_kind


@dataclass(frozen=True)
class OutlineSection:
    """One section as an export shows it: ``number`` its place in the outline (what
    names it in the file), ``shown`` the records it shows, ``fork`` the shown record at
    or above the one it hangs on, ``parent`` the number of the section holding that."""

    number: int
    section: Section
    shown: tuple[str, ...]
    fork: str | None
    parent: int | None
    #: Its shown records, decoded: read in order, once (they come from one stream).
    records: Iterator[Record]


class ShownAbove:
    """The record a link to ``uuid`` goes to: the nearest at or above it a reader is
    shown (a turn's ``turn_duration`` note, an attachment, is not); None when there is
    none. Each walk stops where an earlier one went, so all of them take one pass."""

    def __init__(self, tree: Tree) -> None:
        self._tree = tree
        self._memo: dict[str, str | None] = {}

    def __call__(self, uuid: str) -> str | None:
        tree, memo = self._tree, self._memo
        walked: dict[str, None] = {}
        found: str | None = None
        at: str | None = uuid
        while at is not None and at in tree.nodes:
            if at in memo:
                found = memo[at]
                break
            if at in walked:
                break  # (a parent loop)
            if not tree.is_sidechain(at) and _shown(tree, at):
                found = at
                break
            walked[at] = None
            at = tree.parent.get(at)
        for step in walked:
            memo[step] = found
        if at is not None and at in tree.nodes:
            memo[at] = found
        return found


def iter_outline(transcript: Transcript, above: ShownAbove) -> Iterator[OutlineSection]:
    """The sections of ``transcript`` that show anything, in order, their records
    decoded as each is read (see the module docstring); ``above`` names forks."""
    tree = transcript.tree
    sections = build_outline(tree, transcript.active_path)
    shown = [tuple(u for u in s.records if _shown(tree, u)) for s in sections]
    home = {tree.nodes[u].number: index for index, uuids in enumerate(shown) for u in uuids}
    found: list[Problem] = []
    stream = iter_path_records(
        transcript.lines_from, [tree.nodes[u] for uuids in shown for u in uuids], problems=found
    )
    ahead: list[Record] = []  # a record read of a later section than the one being read

    def records(index: int) -> Iterator[Record]:
        while True:
            record = ahead.pop() if ahead else next(stream, None)
            if record is None:
                return
            at = home.get(record.line or 0, -1)
            if at > index:
                ahead.append(record)
                return
            if at == index:
                yield record
            # (one of an earlier section its reader left unread: passed over)

    for index, section in enumerate(sections):
        if not shown[index]:
            continue
        fork = above(section.fork) if section.fork is not None else None
        parent = section.parent if section.parent is not None and shown[section.parent] else None
        yield OutlineSection(index, section, shown[index], fork, parent, records(index))
    seen = {p.line for p in transcript.read_problems}
    transcript.read_problems.extend(p for p in found if p.line not in seen)


def _shown(tree: Tree, uuid: str) -> bool:
    skeleton = tree.skeleton(uuid)
    return is_shown_kind(skeleton.type, skeleton.subtype)
