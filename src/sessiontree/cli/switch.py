"""``sessiontree switch SESSION --to LEAF|PROMPT``: make another branch the one resumed."""

from __future__ import annotations

import json
import re

import click

from sessiontree.cli.guard import force_option, refuse_if_live
from sessiontree.cli.output import (
    command_hint,
    emit_json,
    get_env,
    json_option,
    resolve,
    resume_hint,
)
from sessiontree.conversation.rewind import apply_switch, newest_leaves, plan_switch
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import NotFound, Refused
from sessiontree.model.resume import message_at_or_above
from sessiontree.views.text import printable, printable_line


@click.command()
@click.argument("session", metavar="SESSION")
@click.option(
    "--to",
    "target",
    required=True,
    metavar="LEAF|PROMPT",
    help="A record's uuid or unique prefix (4+ characters): an off-path leaf (`tree` lists "
    "them), a prompt (`prompts` shows them) or any record; not a leaf: its newest leaf.",
)
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
@force_option
@json_option
def switch(session: str, target: str, dry_run: bool, force: bool, as_json: bool) -> None:
    """Switch the branch the client resumes: one appended line, as rewind writes.

    --to names a record: a leaf becomes the end of the conversation the next `claude -r`
    (and `sessiontree show`, `tree`, `context`) resumes; any other record, a prompt
    included, stands for the newest leaf below it. Nothing is removed: switching back
    undoes a switch, a rewind, or a compaction sessiontree wrote (what a compaction
    summarized away with a kept segment, as the client's own do, is no longer loaded:
    fork --at it instead).
    """
    env = get_env()
    path = resolve(env, session)
    transcript = Transcript.open(path)
    if re.fullmatch(r"-?[0-9]+", target):
        to_uuid = _digits_prefix(transcript, target)  # (a short id may be all digits)
        if to_uuid is None:
            raise Refused(
                f"{target!r}: switch takes a uuid or prefix (4+ characters), not a number (a "
                "prompt number counts the active path); `sessiontree tree` and `prompts` "
                "show the ids of the other branches"
            )
    else:
        to_uuid = transcript.resolve_prompt(target, any_record=True)
    plan = plan_switch(transcript, to_uuid)
    if plan.record is not None:  # (nothing to write: nothing to refuse)
        refuse_if_live(env.layout, transcript.session_id, force=force, dry_run=dry_run)
    if not dry_run and plan.record is not None:
        apply_switch(path, plan)
    leaf = plan.leaf_uuid if dry_run else Transcript.open(path).leaf
    if as_json:
        emit_json(
            {
                "sessionId": transcript.session_id,
                "leafUuid": leaf,
                "toUuid": plan.to_uuid,
                "branchLeafUuid": plan.branch_leaf,
                "previousLeafUuid": plan.previous_leaf,
                "record": plan.record,
                "dryRun": dry_run,
                "cwd": transcript.cwd,
            }
        )
        return
    if plan.branch_leaf != plan.to_uuid:
        click.echo(f"{plan.to_uuid[:8]} is not a leaf: its newest leaf is {plan.branch_leaf[:8]}")
    if plan.record is None:
        click.echo(f"{plan.leaf_uuid[:8]} is already the leaf the client resumes: nothing to do")
        return
    resumed = transcript.record(plan.leaf_uuid)
    said = printable_line(resumed.text(), 100) if resumed is not None else ""
    last_prompt = printable_line(str(plan.record.get("lastPrompt") or ""), 100)
    verb = "would resume" if dry_run else "now resumes"
    click.echo(f"the client {verb} from {plan.leaf_uuid[:8]}: {said}")
    click.echo(f"  its last prompt: {last_prompt}")
    line = json.dumps(plan.record, ensure_ascii=False, separators=(",", ":"))
    click.echo(f"{'would append' if dry_run else 'appended'}: {printable(line)}")
    previous = plan.previous_leaf
    if previous is not None:
        back = newest_leaves(transcript.tree).get(previous, previous)
        if message_at_or_above(transcript.tree, back) == previous:
            undo = command_hint(env, "switch", transcript.session_id, "--to", back[:8])
            click.echo(f"{'then undo' if dry_run else 'undo'} with: {undo}")
        else:  # a rewind's leaf: the rewound branch hangs below it
            click.echo(f"(it resumed {previous[:8]}, with a branch below it: rewind back to it)")
    if not dry_run:
        click.echo(
            f"continue in the client: {resume_hint(env, transcript.session_id, transcript.cwd)}"
        )


def _digits_prefix(transcript: Transcript, target: str) -> str | None:
    """The record whose uuid ``target`` (digits) is a prefix of (4+ of them), or None."""
    if len(target) < 4 or target.startswith("-"):
        return None
    try:
        return transcript.tree.resolve_prefix(target)
    except NotFound:
        return None
