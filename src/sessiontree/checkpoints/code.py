"""Restore code, the whole operation: plan it, look at it, apply it, undo it.

What ``sessiontree restore`` and ``rewind --code`` do, as library calls::

    plan = plan_restore_code(layout, transcript, "-2")  # a prompt number (2, -1) or uuid prefix
    plan.steps       # file by file: restore, delete, unchanged, skip (with why)
    plan.conflicts   # files changed outside the session since their last known state
    undo = restore_code(plan)  # None when there is nothing to change
    plan_undo_code_restore(layout, transcript)  # which restore, what, the conflicts
    undo_code_restore(layout, transcript)  # puts the files back

Planning changes nothing (:func:`~sessiontree.checkpoints.restore.plan_restore` over the
checkpoints of the prompt's conversation, plus subagents' writes when asked, then
:func:`~sessiontree.checkpoints.drift.find_drift`); applying saves every file it changes
first (:func:`~sessiontree.checkpoints.restore.apply_restore`); undoing checks the undo
record whole first and keeps work done since (:mod:`~sessiontree.checkpoints.undo`).
Asking the user is the caller's: conflicts do not stop :func:`restore_code`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessiontree.checkpoints.bash_capture import plan_bash_restore, read_capture_log
from sessiontree.checkpoints.drift import Conflict, find_drift
from sessiontree.checkpoints.read import read_conversation_checkpoints
from sessiontree.checkpoints.restore import (
    FileStep,
    RestorePlan,
    UndoRecord,
    apply_restore,
    plan_restore,
    plan_subagent_edits,
    read_subagent_edits,
)
from sessiontree.checkpoints.undo import UndoPlan, apply_undo, latest_undo, plan_undo
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import NotFound, Refused
from sessiontree.storage.layout import Layout


@dataclass(frozen=True)
class CodeRestorePlan:
    """What restoring code to a prompt would do (nothing is changed until
    :func:`restore_code`): the steps, and the conflicts they would overwrite."""

    layout: Layout
    plan: RestorePlan
    conflicts: tuple[Conflict, ...]

    @property
    def session_id(self) -> str:
        return self.plan.session_id

    @property
    def prompt_uuid(self) -> str:
        return self.plan.prompt_uuid

    @property
    def project(self) -> Path:
        return self.plan.project

    @property
    def steps(self) -> list[FileStep]:
        return self.plan.steps

    @property
    def beyond_client(self) -> list[FileStep]:
        """The steps only sessiontree takes: files the client's checkpoints do not cover
        (Bash changes, subagents' writes)."""
        return [s for s in self.plan.steps if s.source != "checkpoint"]

    @property
    def changes(self) -> list[FileStep]:
        """The steps that write or delete a file."""
        return self.plan.by_action("restore") + self.plan.by_action("delete")

    def as_json(self) -> dict[str, Any]:
        """The ``code`` object of ``restore --json`` and ``rewind --json``; with Bash
        changes in it, ``beyondClient`` lists the files the client would not restore."""
        shown = self.plan.as_json()
        bash = [str(s.path) for s in self.plan.steps if s.source == "bash"]
        if bash:
            shown["beyondClient"] = bash
        return shown

    def conflicts_as_json(self) -> list[dict[str, Any]]:
        """The ``conflicts`` array of ``restore --json`` and ``rewind --json``."""
        return [c.as_json() for c in self.conflicts]


def conversation_prompts(transcript: Transcript, prompt_uuid: str) -> list[str] | None:
    """The prompts of the conversation through ``prompt_uuid`` (the active path, or the
    path to it), oldest first, when the session kept what Bash changed (None: it did not,
    and nothing is read)."""
    if not read_capture_log(transcript.path):
        return None
    path = transcript.active_path
    if prompt_uuid not in path:
        path = transcript.tree.path_to(prompt_uuid)
    return [str(r.uuid) for r in transcript.records(path) if r.is_prompt and r.uuid]


def plan_restore_code(
    layout: Layout,
    transcript: Transcript,
    prompt: str,
    *,
    project: Path | None = None,
    allow_outside: bool = False,
    include_subagent_edits: bool = False,
    include_bash_captures: bool = True,
) -> CodeRestorePlan:
    """What restoring code to ``prompt`` (a prompt number of the active path, ``-N``, or a
    uuid or 4+ character prefix: :meth:`Transcript.resolve_prompt`) would
    do, as the client's "Restore code" with the checkpoints of the prompt's conversation.

    ``project``: the folder tracking paths are relative to (default: the session's
    ``cwd``). ``allow_outside`` also writes files outside it or behind symlinked folders;
    ``include_subagent_edits`` also puts back files subagents wrote after the prompt
    began (the client leaves them); ``include_bash_captures`` (on by default) also puts
    back files Bash commands changed, when the session kept them
    (:mod:`~sessiontree.checkpoints.bash_capture`: sessions ``sessiontree chat`` wrote).
    Steps the client would not take say so (:attr:`CodeRestorePlan.beyond_client`).
    Raises :class:`~sessiontree.errors.NotFound` when the
    prompt has no checkpoint (sessions of clients before 2.0) and the session kept no
    Bash changes (a fork ``sessiontree chat`` made has none of the client's checkpoints
    of the prompts it copied, but their Bash changes: those are planned), and
    :class:`~sessiontree.errors.Refused` when the project folder is gone (a restore puts
    files back into it; it does not make it again)."""
    prompt_uuid = transcript.resolve_prompt(prompt)
    if project is None:
        if transcript.cwd is None:
            raise Refused(f"{transcript.path}: no cwd recorded; pass project=")
        project = Path(transcript.cwd)
    checkpoints = read_conversation_checkpoints(transcript, prompt_uuid)
    prompts = None  # the order of the checkpoints, unless the prompt has none
    if include_bash_captures and not any(c.message_id == prompt_uuid for c in checkpoints):
        prompts = conversation_prompts(transcript, prompt_uuid)
    if prompts is not None:
        if not project.is_dir():
            raise Refused(f"the project folder {project} is gone")
        # a fork: none of the client's checkpoints for the prompts it copied, only
        # sessiontree's capture of what Bash changed in them
        plan = RestorePlan(transcript.session_id, prompt_uuid, project)
    else:
        plan = plan_restore(
            layout,
            transcript.session_id,
            project,
            checkpoints,
            prompt_uuid,
            allow_outside=allow_outside,
        )
    if include_bash_captures:
        plan_bash_restore(
            plan, transcript.path, checkpoints, allow_outside=allow_outside, prompts=prompts
        )
    if include_subagent_edits:
        record = transcript.record(prompt_uuid)
        edits = read_subagent_edits([(a.agent_id, a.path) for a in transcript.subagents()])
        if record is not None and record.timestamp:
            plan_subagent_edits(plan, edits, record.timestamp, allow_outside=allow_outside)
    conflicts = find_drift(transcript, plan, layout=layout)
    return CodeRestorePlan(layout, plan, tuple(conflicts))


def restore_code(plan: CodeRestorePlan, *, stamp: str | None = None) -> UndoRecord | None:
    """Apply a plan: save what it changes (for :func:`undo_code_restore`), then restore
    and delete. None, and nothing saved, when the plan changes nothing. ``stamp`` names
    the undo folder (default: the time now, UTC)."""
    if not plan.changes:
        return None
    now = datetime.now(UTC)
    if stamp is None:
        stamp = now.strftime("%Y%m%dT%H%M%S%fZ")
    return apply_restore(plan.layout, plan.plan, stamp=stamp, at=now)


def plan_undo_code_restore(
    layout: Layout,
    transcript: Transcript,
    *,
    project: Path | None = None,
    allow_outside: bool = False,
) -> UndoPlan:
    """What undoing the latest restore of the session not undone yet would do: which
    restore it is (with its prompt's number on the active path), each file, and the
    conflicts (files changed since the restore). Its undo record is checked whole first
    (:func:`~sessiontree.checkpoints.undo.plan_undo`): a path outside ``project`` (default:
    the session's ``cwd``) is refused unless ``allow_outside``. Raises
    :class:`~sessiontree.errors.Refused` when there is nothing to undo."""
    if project is None:
        if transcript.cwd is None:
            raise Refused(f"{transcript.path}: no cwd recorded; pass project=")
        project = Path(transcript.cwd)
    folder = latest_undo(layout, transcript.session_id)
    plan = plan_undo(folder, project, allow_outside=allow_outside)
    prompts = transcript.numbered_prompts()
    if plan.restore.prompt_uuid in prompts:
        number = prompts.index(plan.restore.prompt_uuid) + 1
        plan = replace(plan, restore=replace(plan.restore, prompt_number=number))
    return plan


def undo_code_restore(
    layout: Layout,
    session: Transcript | str,
    *,
    project: Path | None = None,
    allow_outside: bool = False,
) -> list[str]:
    """Undo the latest restore of ``session`` (a transcript, or a session id) not undone
    yet (:func:`plan_undo_code_restore`); the paths put back. Files changed since the
    restore are kept in its undo folder first. Raises
    :class:`~sessiontree.errors.Refused` when there is none."""
    if isinstance(session, str):
        session = _open_session(layout, session)
    plan = plan_undo_code_restore(layout, session, project=project, allow_outside=allow_outside)
    return apply_undo(plan).undone


def _open_session(layout: Layout, session_id: str) -> Transcript:
    for project_dir in layout.iter_project_dirs():
        path = project_dir / f"{session_id}.jsonl"
        if path.is_file():
            return Transcript.open(path)
    raise NotFound("session", session_id)
