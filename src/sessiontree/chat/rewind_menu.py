"""The ``/rewind`` (Esc Esc) menu, as data: the prompts to go back to, then what to do.

First the prompts of the session's current path, oldest first, each with the number of
files its turn changed (what restoring code to it would put back of that turn); then,
for the prompt picked, the client's actions: restore code and conversation, restore
conversation, restore code (those two only when a code restore would change a file), summarize
from here, summarize up to here, never mind. Pure but for reading the transcript, its
checkpoints and the files on disk; the terminal draws it (:mod:`sessiontree.chat.repl`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sessiontree.chat.pastes import fold_stored_pastes
from sessiontree.checkpoints.bash_capture import plan_bash_restore, read_capture_log
from sessiontree.checkpoints.code import conversation_prompts
from sessiontree.checkpoints.read import Checkpoint, FileBackup, fold_checkpoints
from sessiontree.checkpoints.restore import RestorePlan, plan_restore
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import SessionTreeError
from sessiontree.storage.layout import Layout

Action = Literal["both", "conversation", "code", "summarize_from", "summarize_up_to", "cancel"]

#: Every action, in the menu's order, with its label.
ACTIONS: dict[Action, str] = {
    "both": "Restore code and conversation",
    "conversation": "Restore conversation",
    "code": "Restore code",
    "summarize_from": "Summarize from here",
    "summarize_up_to": "Summarize up to here",
    "cancel": "Never mind",
}

_CODE_ACTIONS = ("both", "code")


@dataclass(frozen=True)
class RewindItem:
    """One prompt the menu lists: its number on the path (1 = first), uuid, text (as
    typed, pastes in place), time, whether it has a checkpoint, how many files its turn
    changed (None: not known, no checkpoint) and how many a code restore to it would
    change now (this turn's and every later one's)."""

    number: int
    uuid: str
    text: str
    timestamp: str | None
    has_checkpoint: bool
    files_changed: int | None
    #: How many files restoring code to this prompt would write or delete now.
    restorable: int = 0

    def label(self, width: int = 72) -> str:
        """One line: the prompt's first line, cut to ``width``, and its file changes."""
        first = " ".join(fold_stored_pastes(self.text)[0].split())
        if len(first) > width:
            first = first[: width - 1] + "…"
        if self.files_changed:
            plural = "" if self.files_changed == 1 else "s"
            return f"{first}  ({self.files_changed} file{plural} changed)"
        return first

    def actions(self) -> list[Action]:
        """What may be done with this prompt, in the menu's order: the code actions only
        when restoring code to it would change a file."""
        return [a for a in ACTIONS if self.restorable or a not in _CODE_ACTIONS]


def _differs(before: FileBackup | None, after: FileBackup | None) -> bool:
    """A file tracked at both checkpoints and backed up anew (a file first tracked later
    was not changed by this turn: its first edit would have added it to this one)."""
    if before is None or after is None:
        return False
    return before.backup_file_name != after.backup_file_name


def changed_between(before: Checkpoint, after: Checkpoint) -> set[str]:
    """The tracked files that differ between two checkpoints (a file is the same while its
    backup is: the client backs up a new version only when the file changed)."""
    paths = set(before.files) | set(after.files)
    return {p for p in paths if _differs(before.files.get(p), after.files.get(p))}


def bash_changes(transcript: Transcript) -> dict[str, set[str]]:
    """The files Bash commands changed, by the turn that ran them (its prompt's uuid, as
    ``sessiontree chat`` records it beside the transcript: ``checkpoints.bash_capture``)."""
    found: dict[str, set[str]] = {}
    for record in read_capture_log(transcript.path):
        found.setdefault(record.prompt_id, set()).update(f.path for f in record.files)
    return found


def changed_since(
    layout: Layout,
    transcript: Transcript,
    project: Path,
    checkpoints: list[Checkpoint],
    prompt_uuid: str,
) -> int | None:
    """How many files restoring code to ``prompt_uuid`` would write or delete now (the
    tracked ones, and those Bash changed); None when that cannot be planned."""
    try:
        if any(c.message_id == prompt_uuid for c in checkpoints):
            plan = plan_restore(layout, transcript.session_id, project, checkpoints, prompt_uuid)
            plan_bash_restore(plan, transcript.path, checkpoints)
        else:  # a prompt a fork copied: only what Bash changed is known
            prompts = conversation_prompts(transcript, prompt_uuid)
            if prompts is None or not project.is_dir():
                return None
            plan = RestorePlan(transcript.session_id, prompt_uuid, project)
            plan_bash_restore(plan, transcript.path, checkpoints, prompts=prompts)
    except (SessionTreeError, OSError):
        return None
    return len(plan.by_action("restore")) + len(plan.by_action("delete"))


def rewind_items(
    layout: Layout, transcript: Transcript, tip: str | None, *, project: Path
) -> list[RewindItem]:
    """The prompts on the path to ``tip`` (the record the session's next one hangs on),
    oldest first, each with the files its turn changed: the difference from its
    checkpoint to the next prompt's and the files its Bash commands changed; for the last
    prompt, what a code restore to it would change on disk now."""
    if tip is None or tip not in transcript.tree.nodes:
        return []
    path = transcript.tree.path_to(tip)
    on_path = set(path)
    records = [r for r in transcript.records(path) if r.is_prompt and r.uuid]
    checkpoints = fold_checkpoints(
        transcript.metadata("file-history-snapshot", "file-history-delta"), conversation=on_path
    )
    by_prompt = {c.message_id: c for c in checkpoints}
    by_bash = bash_changes(transcript)
    items: list[RewindItem] = []
    for index, record in enumerate(records):
        uuid = str(record.uuid)
        checkpoint = by_prompt.get(uuid)
        changed: int | None = None
        restorable = 0
        if checkpoint is None and by_bash:  # a fork's copied prompt: Bash's changes only
            restorable = changed_since(layout, transcript, project, checkpoints, uuid) or 0
            changed = len(by_bash.get(uuid, set()))
        if checkpoint is not None:
            restorable = changed_since(layout, transcript, project, checkpoints, uuid) or 0
            later = next(
                (by_prompt[str(r.uuid)] for r in records[index + 1 :] if str(r.uuid) in by_prompt),
                None,
            )
            if later is None:
                changed = restorable
            else:
                # the capture log names the turn by its prompt's uuid or its promptId
                prompt_id = record.get("promptId")
                ran = by_bash.get(uuid, set()) | (
                    by_bash.get(prompt_id, set()) if isinstance(prompt_id, str) else set()
                )
                changed = len(changed_between(checkpoint, later) | ran)
        items.append(
            RewindItem(
                number=index + 1,
                uuid=uuid,
                text=record.text(),
                timestamp=record.timestamp,
                has_checkpoint=checkpoint is not None,
                files_changed=changed,
                restorable=restorable,
            )
        )
    return items
