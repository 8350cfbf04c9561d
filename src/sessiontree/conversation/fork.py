"""Fork a session: a new transcript continuing the conversation, the original untouched.

As the client's ``/branch`` does: the records of the active path (or of the path to a
chosen record) are copied into a new file under a new ``sessionId`` with the *same
uuids*, each with ``forkedFrom {sessionId, messageUuid}``, then a ``custom-title``
("<title> (Branch)") and a ``last-prompt`` naming the last copy, so the real client
resumes the fork with the parent's conversation (``tests/interop``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import NotFound, Refused
from sessiontree.model.builders import (
    build_custom_title,
    build_fork_records,
    build_last_prompt,
    fork_title,
)
from sessiontree.storage.jsonl import append_records


@dataclass(frozen=True)
class ForkPlan:
    session_id: str
    path: Path
    forked_from: str
    title: str
    records: list[dict[str, Any]]


def plan_fork(
    transcript: Transcript,
    *,
    new_session_id: str,
    at: str | None = None,
    title: str | None = None,
    original_title: str | None = None,
) -> ForkPlan:
    """The new file's records; ``at`` forks from that record instead of the leaf: the
    records resuming would send were it the leaf (every call of a response with several,
    and their results), so the fork resumes with the parent's context up to there."""
    if at is not None:
        if at not in transcript.tree.nodes:
            raise NotFound("record", at)
        uuids = transcript.tree.branch_path(at)
    else:
        uuids = transcript.active_path
    if not uuids:
        raise Refused("an empty session has nothing to fork")
    copies = build_fork_records(
        (r.raw for r in transcript.records(uuids)), new_session_id=new_session_id
    )
    prompts = [r for r in transcript.records(uuids) if r.is_prompt]
    name = title or fork_title(original_title or (prompts[0].text()[:60] if prompts else "Session"))
    tail = [
        build_custom_title(new_session_id, name),
        build_last_prompt(
            new_session_id,
            last_prompt=prompts[-1].text() if prompts else "",
            leaf_uuid=str(copies[-1]["uuid"]),
        ),
    ]
    path = transcript.path.with_name(f"{new_session_id}.jsonl")
    return ForkPlan(new_session_id, path, transcript.session_id, name, [*copies, *tail])


def apply_fork(plan: ForkPlan) -> None:
    """Write the fork's file; refuses to touch an existing one."""
    try:
        fd = os.open(plan.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise Refused(f"{plan.path} exists already") from exc
    os.close(fd)
    append_records(plan.path, plan.records, fsync=True)
