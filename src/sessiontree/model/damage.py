"""Damage that reads fine but is wrong: what ``doctor`` finds past the tolerant reader.

Pure. The reader never stops on these (a record whose ``content`` is ``7`` is read as
having no content; a snapshot entry naming ``../../etc/passwd`` is never restored), but
each one silently changes what a command shows, so each is a
:class:`~sessiontree.model.records.Problem`:

* ``bad-field``: a field of the wrong type (``message`` missing or not an object,
  ``content`` neither text nor a list, a content block that is not an object, a
  ``timestamp`` that is not an ISO date);
* ``missing-parent-key``: a chain record without a ``parentUuid`` key at all (a root
  writes ``null``; a deleted key makes a record a root and cuts the context above it);
* ``self-link``: a compact boundary whose ``logicalParentUuid`` is itself;
* ``bad-last-prompt``: a ``last-prompt`` naming a record that does not exist, a
  sidechain record, or a record the client never names (it names messages, and the last
  record of a turn: a ``turn_duration`` or an attachment);
* ``cycle``: a loop in the stored ``parentUuid`` links that the compaction re-link hides
  (the tree as loaded has no loop, so :attr:`Tree.problems` cannot see it);
* ``hostile-path``: a checkpoint entry that must not be restored (see
  :func:`sessiontree.checkpoints.read.tracking_path_damage` and ``backup_name_damage``; an
  absolute path under none of the folders the session worked in).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sessiontree.model.records import CHAIN_TYPES, NULL_UUID, Problem, Record
from sessiontree.model.tree import Tree, find_cycles

#: Non-message records the real client names in a ``last-prompt`` (the turn's last record).
_NAMEABLE = frozenset({("system", "turn_duration"), ("attachment", None)})


def is_timestamp(value: Any) -> bool:
    """Whether ``value`` is an ISO 8601 date as the client writes it."""
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _field_damage(record: Record) -> str | None:
    raw = record.raw
    if "timestamp" in raw and not is_timestamp(raw["timestamp"]):
        return f"timestamp {str(raw['timestamp'])[:40]!r} is not a date"
    if record.type not in ("user", "assistant"):
        return None
    if "message" not in raw:
        return "no message"
    message = raw["message"]
    if not isinstance(message, dict):
        return f"message is {type(message).__name__}, not an object"
    if "content" not in message:
        return "message has no content"
    content = message["content"]
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"message.content is {type(content).__name__}, not text or a list"
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            return f"message.content[{index}] is {type(block).__name__}, not an object"
    return None


def find_record_damage(path: str, records: Iterable[Record]) -> list[Problem]:
    """Wrong-typed fields, deleted ``parentUuid`` keys and self-linked boundaries."""
    problems: list[Problem] = []
    for record in records:
        if record.uuid is None or record.type not in CHAIN_TYPES:
            continue  # metadata: no tree fields to check
        why = _field_damage(record)
        if why is not None:
            problems.append(Problem("bad-field", path, record.line, f"{record.uuid}: {why}"))
        if "parentUuid" not in record.raw:
            detail = f"{record.uuid} has no parentUuid key: read as a root"
            problems.append(Problem("missing-parent-key", path, record.line, detail))
        if record.subtype == "compact_boundary" and record.get("logicalParentUuid") == record.uuid:
            detail = f"compact boundary {record.uuid} names itself as logical parent"
            problems.append(Problem("self-link", path, record.line, detail))
    return problems


def find_last_prompt_damage(tree: Tree, last_prompts: Iterable[Record]) -> list[Problem]:
    """``last-prompt`` records naming what the client would never name."""
    problems: list[Problem] = []
    for record in last_prompts:
        leaf = record.get("leafUuid")
        if not isinstance(leaf, str) or leaf == NULL_UUID:
            continue  # absent, null (a rewind to empty) or the rewind marker
        why = None
        if leaf not in tree.nodes:
            why = "a record that is not in the transcript"
        elif tree.is_sidechain(leaf):
            why = "a sidechain record"
        else:
            skeleton = tree.skeleton(leaf)
            kind = skeleton.type
            subtype = skeleton.subtype if kind == "system" else None
            if kind not in ("user", "assistant") and (kind, subtype) not in _NAMEABLE:
                why = f"a {kind}{'/' + subtype if subtype else ''} record, not a message"
        if why is not None:
            detail = f"names {leaf}: {why}"
            problems.append(Problem("bad-last-prompt", tree.path, record.line, detail))
    return problems


def find_hidden_cycles(tree: Tree) -> list[Problem]:
    """Loops in the stored ``parentUuid`` links that the loaded tree no longer has."""
    if tree.compaction_tail is None:
        return []  # no re-link: the loaded links are the stored ones
    stored = {u: tree.skeleton(u).parentUuid for u in tree.nodes}
    loaded = set(find_cycles(tree.nodes, tree.parent))
    return [
        Problem(
            "cycle",
            tree.path,
            tree.nodes[u].number,
            f"stored parent chain of {u} loops (hidden by the compaction re-link)",
        )
        for u in find_cycles(tree.nodes, stored)
        if u not in loaded and not _on_loop(tree.parent, u)
    ]


def _on_loop(parent: dict[str, str | None], start: str) -> bool:
    seen: set[str] = set()
    current = parent.get(start)
    while current is not None and current not in seen:
        if current == start:
            return True
        seen.add(current)
        current = parent.get(current)
    return False
