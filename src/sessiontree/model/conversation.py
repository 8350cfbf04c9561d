"""Whether a transcript holds a conversation the client would resume, and why not.

Pure, over the records of one file (anything with ``type``, ``uuid`` and ``isSidechain``:
a :class:`~sessiontree.model.records.Skeleton`, or the listing's end records).

Claude Code 2.1.328 resumes a transcript (``claude -r <id>``) as soon as it holds one
record of its main chain: a ``user``, ``assistant``, ``system`` or ``attachment`` record
with a ``uuid`` and not ``isSidechain``. Any of them will do: a lone meta prompt, a slash
command, an attachment or a ``system`` record resume (the last with nothing to send).
Anything else it refuses with ``No conversation found with session ID: <id>`` on stderr
and exit code 1, sending nothing: an empty file, blank lines, lines that are not JSON,
only ``summary`` records, only ``file-history-snapshot`` records, only metadata
(``custom-title``, ``last-prompt``, ``queue-operation``, ``progress``, …), or only
sidechain records. Checked against the client, one file of each kind:
``tests/interop/test_not_sessions_interop.py``.

It refuses one more: a file with main-chain records whose leaf (``model.resume``)
lands on a sidechain record, as when the newest ``last-prompt`` names one. That takes
the tree to know (:func:`find_sidechain_leaf`). A rewind to before the first prompt
(an explicit ``last-prompt`` with a null leaf) is not a refusal: it resumes empty.

A subagent's own transcript (``agent-*.jsonl``) is all sidechain by nature: there the
sidechain records are its conversation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from sessiontree.model.records import RecordFields

if TYPE_CHECKING:
    from sessiontree.model.tree import Tree

#: Why a transcript holds no conversation (a closed set; the ``--json`` values).
NoConversation = Literal[
    "empty",
    "not-json",
    "only-summaries",
    "only-file-history",
    "only-metadata",
    "only-sidechain",
    "sidechain-leaf",
]

#: Record types that make a conversation when on the main chain (``progress`` does not).
CONVERSATION_TYPES = frozenset({"user", "assistant", "system", "attachment"})

_DESCRIPTIONS: dict[NoConversation, str] = {
    "empty": "the file is empty",
    "not-json": "no line of it is a JSON record",
    "only-summaries": "only summary records",
    "only-file-history": "only file-history-snapshot records",
    "only-metadata": "only metadata records (titles, bookmarks, snapshots; no messages)",
    "only-sidechain": "only sidechain (subagent) records",
    "sidechain-leaf": "the conversation it would resume ends on a sidechain (subagent) record",
}


def find_no_conversation(
    records: Iterable[RecordFields],
    *,
    unreadable_lines: bool = False,
    subagent: bool = False,
) -> NoConversation | None:
    """None when ``records`` hold a conversation the client resumes; else why not.

    ``records`` are the decodable lines of a file, in any order; ``unreadable_lines`` says
    whether the file also has lines that are not records; ``subagent`` reads sidechain
    records as the conversation (a subagent's own transcript).
    """
    types: set[str | None] = set()
    sidechain = False
    for record in records:
        kind = record.type
        if kind in CONVERSATION_TYPES and record.uuid:
            if subagent or record.isSidechain is not True:
                return None
            sidechain = True
        types.add(kind)
    if sidechain:
        return "only-sidechain"
    if not types:
        return "not-json" if unreadable_lines else "empty"
    if types == {"summary"}:
        return "only-summaries"
    if types == {"file-history-snapshot"}:
        return "only-file-history"
    return "only-metadata"


def find_sidechain_leaf(tree: Tree, leaf: str | None) -> NoConversation | None:
    """``"sidechain-leaf"`` when a tree with main-chain records has no leaf to resume
    (``leaf`` is :func:`~sessiontree.model.resume.resolve_leaf`'s answer) other than by a
    rewind to before the first prompt; else None."""
    if leaf is not None or tree.marks.cleared or tree.sidechain_only:
        return None
    has_main = any(not tree.is_sidechain(u) for u in tree.nodes)
    return "sidechain-leaf" if has_main else None


def format_no_conversation(reason: NoConversation) -> str:
    """Why there is nothing to resume, for people: ``only summary records``."""
    return _DESCRIPTIONS[reason]


def is_subagent_name(name: str) -> bool:
    """A subagent's own transcript (``agent-<id>.jsonl``), whose records are all sidechain."""
    return name.startswith("agent-")
