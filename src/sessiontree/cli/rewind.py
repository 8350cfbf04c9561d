"""``sessiontree rewind SESSION --to PROMPT [--conversation | --code | --both]``."""

from __future__ import annotations

from typing import Any

import click

from sessiontree.cli.code_restore import run_code_restore
from sessiontree.cli.guard import force_option, refuse_if_live
from sessiontree.cli.output import (
    emit_json,
    exclusive,
    get_env,
    json_option,
    resolve,
    resume_hint,
)
from sessiontree.cli.read import PROMPT_HELP
from sessiontree.conversation.rewind import apply_rewind, plan_rewind
from sessiontree.conversation.transcript import Transcript
from sessiontree.views.text import printable


@click.command()
@click.argument("session", metavar="SESSION")
@click.option(
    "--to",
    "prompt",
    required=True,
    metavar="PROMPT",
    help=PROMPT_HELP,
)
@click.option(
    "--conversation",
    is_flag=True,
    help="Continue the conversation from just before PROMPT (default).",
)
@click.option("--code", is_flag=True, help="Restore tracked files only.")
@click.option("--both", is_flag=True, help="Conversation and code.")
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
@click.option("--yes", is_flag=True, help="Restore files without asking.")
@click.option(
    "--allow-outside",
    is_flag=True,
    help="Also write files outside the project or behind symlinked folders.",
)
@force_option
@json_option
def rewind(
    session: str,
    prompt: str,
    conversation: bool,
    code: bool,
    both: bool,
    dry_run: bool,
    yes: bool,
    allow_outside: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Rewind a session to just before PROMPT, as the client's /rewind does.

    The conversation rewind appends one explicit last-prompt line: the old branch stays
    in the file and the next `claude -r` (or `sessiontree context`) continues from
    before PROMPT. --code restores tracked files like `restore` (conflicts shown,
    undoable with `restore --undo`).
    """
    exclusive({"--conversation": conversation, "--code": code, "--both": both})
    exclusive({"--dry-run": dry_run, "--yes": yes})
    mode = "code" if code else "both" if both else "conversation"
    env = get_env()
    path = resolve(env, session)
    transcript = Transcript.open(path)
    prompt_uuid = transcript.resolve_prompt(prompt)
    refuse_if_live(env.layout, transcript.session_id, force=force, dry_run=dry_run)
    result: dict[str, Any] = {
        "sessionId": transcript.session_id,
        "leafUuid": transcript.leaf,
        "promptUuid": prompt_uuid,
        "dryRun": dry_run,
        "code": None,
    }
    if mode in ("code", "both"):
        result["code"], result["conflicts"] = run_code_restore(
            transcript,
            prompt_uuid,
            dry_run=dry_run,
            yes=yes,
            allow_outside=allow_outside,
            as_json=as_json,
        )
    if mode in ("conversation", "both"):
        plan = plan_rewind(transcript, prompt_uuid)
        if not dry_run:
            apply_rewind(path, plan)
            result["leafUuid"] = Transcript.open(path).leaf
        else:
            result["record"] = plan.record
        if not as_json:
            prompt_record = transcript.record(prompt_uuid)
            text = " ".join(printable(prompt_record.text() if prompt_record else "").split())
            shown = text if len(text) <= 60 else text[:59] + "…"
            where = (
                f"the reply {plan.leaf_uuid[:8]} just before it"
                if plan.leaf_uuid
                else "the start (nothing before the first prompt)"
            )
            verb = "would rewind" if dry_run else "rewound"
            click.echo(
                f"{verb} to before prompt {prompt_uuid[:8]} ({shown}): the next resume"
                f" continues from {where}; the old branch stays in the file"
            )
            line = "would append" if dry_run else "appended"
            click.echo(f"{line} one line: an explicit last-prompt")
            if not dry_run:
                hint = resume_hint(env, transcript.session_id, transcript.cwd)
                click.echo(f"continue in the client: {hint}")
    if as_json:
        emit_json(result)
