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
