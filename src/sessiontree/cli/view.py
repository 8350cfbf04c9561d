"""``show``, ``tree``, ``context`` and ``prompts``: one session, read.

``--json`` output never loads rich: the text renderings (:mod:`sessiontree.views.terminal`)
are imported by the branch that prints for people."""

from __future__ import annotations

from collections.abc import Iterator

import click

from sessiontree.cli.main import leave_quickly
from sessiontree.cli.output import (
    console,
    emit_json,
    emit_pieces,
    get_env,
    json_option,
    no_cycle_collection,
    paged,
    usable_cores,
)
from sessiontree.cli.read import open_conversation, open_session, session_argument
from sessiontree.conversation.transcript import Transcript
from sessiontree.storage.forked import ChildFailed, ForkedOutput, fork_output
from sessiontree.views.shapes import (
    iter_context_json,
    iter_messages_json,
    prompts_json,
    show_json,
    tree_json,
)


@click.command()
@session_argument
@click.option("--all-branches", is_flag=True, help="Every branch, rewound ones included.")
@click.option("--full", is_flag=True, help="Tool results, thoughts and call inputs unfolded.")
@click.option("--no-pager", is_flag=True, help="Never page the output on a terminal.")
@json_option
def show(session: str, all_branches: bool, full: bool, no_pager: bool, as_json: bool) -> None:
    """Show the conversation along the active path (or every branch).

    Prompts and replies in full, tool calls as what they act on, results and thoughts
    folded (--full unfolds them); paged through $PAGER (else less -R) on a terminal."""
    # The active path is read as a resume reads it: from the tail, when that answers alone.
    transcript = open_conversation(session, to_resume=not all_branches)
    if as_json:
        emit_json(show_json(transcript, all_branches=all_branches))
        return
    from sessiontree.views.reader import render_reader
    from sessiontree.views.terminal import render_tree

    out = console(get_env(reads_store=True))
    with paged(out, enabled=not no_pager):
        if all_branches:
            render_tree(out, transcript, only_turns=False)
        else:
            render_reader(out, transcript.active_records(), full=full)


@click.command()
@session_argument
@json_option
def tree(session: str, as_json: bool) -> None:
    """Show the session's tree: branches, fork points, the active path."""
    transcript = open_session(session)
    if as_json:
        emit_json(tree_json(transcript))
        return
    from sessiontree.views.terminal import render_tree

    render_tree(console(get_env(reads_store=True)), transcript)


@click.command()
@session_argument
@json_option
def context(session: str, as_json: bool) -> None:
    """The Messages API `messages` that resuming this session sends."""
    with no_cycle_collection():
        transcript = open_conversation(session, to_resume=True)
        # Streamed: a long path is never held whole, nor its messages, nor their JSON.
        if as_json:
            emit_pieces(_context_json(transcript))
            leave_quickly()
            return
        messages = transcript.iter_context()
        from sessiontree.views.terminal import render_context  # rich: only for people

        render_context(console(get_env(reads_store=True)), messages)


def _context_json(transcript: Transcript) -> Iterator[bytes | memoryview | ForkedOutput]:
    """``context --json``'s pieces; a long path's second part made by a forked child
    meanwhile (:meth:`~sessiontree.conversation.transcript.Transcript.context_in_two`),
    given whole, or made here if the child failed."""
    parts = transcript.context_in_two() if usable_cores() > 1 else None
    if parts is None:
        yield from iter_context_json(transcript.session_id, transcript.iter_context())
        return
    first, rest = parts
    forked = fork_output(lambda: iter_messages_json(rest(), first=False))

    def then() -> Iterator[bytes | memoryview | ForkedOutput]:
        if forked is not None:
            try:
                forked.wait()
            except ChildFailed:
                pass
            else:
                yield forked  # (all of it made: emit_pieces sends it on)
                return
        yield from iter_messages_json(rest(), first=False)

    try:
        yield from iter_context_json(transcript.session_id, first, then=then)
    finally:
        if forked is not None:
            forked.close()


@click.command()
@session_argument
@json_option
def prompts(session: str, as_json: bool) -> None:
    """The rewind list: every prompt typed in the session, oldest first; those of the
    active path numbered (what a PROMPT argument may be: 3, or -1 for the last)."""
    # (context need not load checkpoints)
    from sessiontree.checkpoints.read import checkpoints_gone, read_checkpoints

    transcript = open_session(session)
    checkpoints = read_checkpoints(transcript)
    env = get_env(reads_store=True)
    if env.store is not None:
        from sessiontree.cli.stored import stored_backups

        gone = checkpoints_gone(stored_backups(env, transcript), transcript.session_id, checkpoints)
    else:
        gone = checkpoints_gone(env.layout, transcript.session_id, checkpoints)
    rows = prompts_json(transcript, {c.message_id for c in checkpoints}, gone)
    if as_json:
        emit_json(rows)
        return
    from sessiontree.model.branches import summarized
    from sessiontree.views.terminal import render_prompts

    away = summarized(transcript.tree, transcript.active_path)
    render_prompts(console(get_env(reads_store=True)), rows, away)
