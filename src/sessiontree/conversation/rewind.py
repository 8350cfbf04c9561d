"""Rewind a conversation outside a live client: one appended ``last-prompt`` line.

The client's own ``/rewind`` writes nothing until the next prompt, which it hangs on
the parent of the chosen prompt. A rewind done while no client runs must leave a mark
the next resume obeys, and nothing else: an *explicit* ``last-prompt`` naming the
chosen prompt's parent. The client takes an explicit checkpoint as the leaf even when
records hang below it (see :mod:`sessiontree.model.resume`), so the next ``claude -r``
sends the conversation up to just before the prompt, and the next prompt continues
from there; the abandoned branch stays in the file. Rewinding to before the very first
prompt (or the first after a "summarize from here", which nothing the model is sent
precedes) writes a null leaf, which the client resumes as an empty conversation.

Checked with the real client on every fixture shape (plain, rewound, compacted,
summarized, with subagents): ``tests/interop/test_write_interop.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.model.branches import newest_leaves as newest_leaves
from sessiontree.model.branches import switchable_leaves as _switchable
from sessiontree.model.builders import build_last_prompt
from sessiontree.model.resume import message_at_or_above
from sessiontree.storage.jsonl import append_records


@dataclass(frozen=True)
class RewindPlan:
    """The one record a conversation rewind appends, and what it points at."""

    session_id: str
    prompt_uuid: str
    record: dict[str, Any]

    @property
    def leaf_uuid(self) -> str | None:
        value = self.record.get("leafUuid")
        return value if isinstance(value, str) else None


def plan_rewind(transcript: Transcript, prompt_uuid: str) -> RewindPlan:
    """The ``last-prompt`` that makes the next resume continue from before the prompt."""
    prompt = transcript.record(prompt_uuid)
    if prompt is None or not prompt.is_prompt:
        raise Refused(f"{prompt_uuid} is not a prompt of this session")
    parent = transcript.tree.parent.get(prompt_uuid)
    if parent is not None and message_at_or_above(transcript.tree, parent) is None:
        # nothing the model is sent comes before the prompt (it is the first after a
        # "summarize from here" boundary): the same as rewinding to before the first
        parent = None
    kept = _last_prompt_text_before(transcript, parent)
    if parent is None:
        record: dict[str, Any] = {
            "type": "last-prompt",
            "leafUuid": None,
            "explicit": True,
            "sessionId": transcript.session_id,
        }
    else:
        record = build_last_prompt(
            transcript.session_id, last_prompt=kept, leaf_uuid=parent, explicit=True
        )
    return RewindPlan(transcript.session_id, prompt_uuid, record)


def _last_prompt_text_before(transcript: Transcript, parent: str | None) -> str:
    if parent is None:
        return ""
    for record in reversed(transcript.records(transcript.tree.path_to(parent))):
        if record.is_prompt:
            return record.text()
    return ""


def apply_rewind(path: Path, plan: RewindPlan) -> None:
    """Append the plan's record (whole line, under the transcript's lock, fsynced)."""
    append_records(path, [plan.record], fsync=True)


# Switching branches: the same one explicit ``last-prompt``, naming a branch's leaf.


@dataclass(frozen=True)
class SwitchPlan:
    """What ``switch`` appends: an explicit ``last-prompt`` naming ``branch_leaf`` (the
    newest leaf at or below the record ``to_uuid``), after which the client resumes
    ``leaf_uuid`` (the message at or above it). ``record`` is None when that is already
    the leaf the client resumes: nothing is appended."""

    session_id: str
    to_uuid: str
    branch_leaf: str
    leaf_uuid: str
    previous_leaf: str | None
    record: dict[str, Any] | None


def plan_switch(transcript: Transcript, to_uuid: str) -> SwitchPlan:
    """The ``last-prompt`` that makes the client resume the branch of ``to_uuid``: the
    newest leaf at or below that record (:func:`newest_leaves`). Refused for a record the
    client does not load (summarized away by a compaction: ``fork --at`` copies it into a
    new session instead), a sidechain record, or a branch with no message to resume."""
    tree = transcript.tree
    if to_uuid not in tree.nodes:
        raise Refused(f"{to_uuid} is not a record of this session")
    if tree.is_sidechain(to_uuid):
        raise Refused(f"{to_uuid[:8]} is on a subagent's sidechain, not the conversation")
    if not tree.is_loaded(to_uuid):
        raise Refused(
            f"{to_uuid[:8]} was summarized away by a compaction: the client no longer loads "
            "it, so it cannot be switched to (fork --at it to continue it in a new session)"
        )
    branch_leaf = newest_leaves(tree)[to_uuid]
    message = message_at_or_above(tree, branch_leaf)
    if message is None or tree.is_sidechain(message):
        raise Refused(f"no prompt or reply at or above {branch_leaf[:8]} to resume from")
    previous = transcript.leaf
    record: dict[str, Any] | None = None
    if message != previous:
        record = build_last_prompt(
            transcript.session_id,
            last_prompt=_last_prompt_text_before(transcript, branch_leaf),
            leaf_uuid=branch_leaf,
            explicit=True,
        )
    return SwitchPlan(transcript.session_id, to_uuid, branch_leaf, message, previous, record)


def apply_switch(path: Path, plan: SwitchPlan) -> None:
    """Append the plan's record, as :func:`apply_rewind` does; nothing when it has none."""
    if plan.record is not None:
        apply_rewind(path, RewindPlan(plan.session_id, plan.to_uuid, plan.record))


def switchable_leaves(transcript: Transcript) -> list[str]:
    """:func:`~sessiontree.model.branches.switchable_leaves` of a transcript."""
    return _switchable(transcript.tree, transcript.active_path)
