"""Shared by the commands: how a ``SESSION`` argument becomes an open transcript, and
what a ``PROMPT`` argument may be."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from sessiontree.catalog.index import transcript_no_conversation
from sessiontree.cli.main import Env
from sessiontree.cli.output import (
    command_hint,
    get_env,
    open_to_resume,
    open_transcript,
    resolve,
)
from sessiontree.errors import NotASession
from sessiontree.model.conversation import format_no_conversation

if TYPE_CHECKING:  # (opened by cli.output's functions: a listing imports this module too)
    from sessiontree.conversation.transcript import Transcript

session_argument = click.argument("session", metavar="SESSION")

#: The help of every ``PROMPT`` option: what :meth:`Transcript.resolve_prompt` takes.
PROMPT_HELP = (
    "Prompt number on the active path (1 = the first, -1 = the last; see `prompts`), "
    "or a prompt uuid or unique prefix (4+ characters)."
)


def open_session(ref: str) -> Transcript:
    env = get_env(reads_store=True)
    if env.store is not None:
        from sessiontree.cli.stored import open_stored_session

        transcript = open_stored_session(env, ref)
        warn_problems(env, transcript, ref)
        return transcript
    transcript = open_transcript(env, resolve(env, ref))
    warn_problems(env, transcript, ref)
    return transcript


def warn_problems(env: Env, transcript: Transcript, ref: str) -> None:
    """One line on stderr when the transcript has problems (torn lines, cycles, …), with
    the ``doctor`` command that tells them, runnable as printed."""
    problems = transcript.problems
    if problems:
        kinds = ", ".join(sorted({p.kind for p in problems}))
        click.echo(
            f"sessiontree: warning: {len(problems)} problem(s) in this transcript ({kinds});"
            f" see: {command_hint(env, 'doctor', ref)}",
            err=True,
        )


def open_conversation(ref: str, *, to_resume: bool = False) -> Transcript:
    """:func:`open_session`, refusing a file that holds no conversation (nothing to resume).

    ``to_resume``: only its leaf, active path and context will be read, so its tail may
    stand for it (:meth:`Transcript.open_tail`)."""
    env = get_env(reads_store=True)
    if env.store is not None:
        from sessiontree.cli.stored import open_stored_session

        transcript = open_stored_session(env, ref)
        reason = transcript_no_conversation(transcript)
    else:
        path = resolve(env, ref)
        transcript = open_to_resume(env, path) if to_resume else open_transcript(env, path)
        reason = transcript_no_conversation(transcript)
        if reason is not None and not transcript.whole:  # said by the whole file, to be sure
            transcript = open_transcript(env, path)
            reason = transcript_no_conversation(transcript)
    if reason is not None:
        raise NotASession(str(transcript.path), reason, format_no_conversation(reason))
    warn_problems(env, transcript, ref)
    return transcript


def project_scope(all_projects: bool, project: Path | None) -> list[Path] | None:
    """The project folders a command looks in: every one (``--all``: None), else those
    of ``--project`` or the working folder; from a folder inside a project, that
    project's (the nearest folder above that has sessions)."""
    env = get_env()
    if all_projects:
        return None
    cwd = Path(project.resolve() if project else env.cwd)
    for folder in (cwd, *cwd.parents):
        found = env.layout.find_project_dirs(str(folder))
        if found:
            return found
    return []
