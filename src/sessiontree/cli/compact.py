"""``sessiontree compact SESSION --summary TEXT|-|--summary-file PATH``: full compaction,
originals kept. Also the summary options ``summarize`` shares."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from sessiontree.cli.guard import force_option, refuse_if_live
from sessiontree.cli.output import (
    emit_json,
    exclusive,
    get_env,
    json_option,
    resolve,
    resume_hint,
)
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.session.session import Session

F = TypeVar("F", bound=Callable[..., object])


def summary_options(command: F) -> F:
    """``--summary TEXT`` (``-``: read it from stdin) and ``--summary-file PATH``."""
    command = click.option(
        "--summary-file",
        metavar="PATH",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Read the summary from PATH (UTF-8; - is stdin).",
    )(command)
    return click.option(
        "--summary",
        metavar="TEXT",
        help="The summary text; - reads it from stdin.",
    )(command)


def read_summary(summary: str | None, summary_file: str | None) -> str:
    """The summary the options give: exactly one of them, never empty. Read from stdin or
    a file, its trailing newlines are dropped (as ``$(cat FILE)`` drops them)."""
    exclusive({"--summary": summary, "--summary-file": summary_file})
    if summary is None and summary_file is None:
        raise click.UsageError(
            "the summary is required: --summary TEXT, --summary - (stdin) or --summary-file PATH"
        )
    where = summary_file if summary_file is not None else summary
    if where == "-":
        if sys.stdin.isatty():
            click.echo("reading the summary from stdin (end it with Ctrl-D)", err=True)
        text = _decode(sys.stdin.buffer.read(), "stdin")
    elif summary_file is not None:
        try:
            data = Path(summary_file).read_bytes()
        except OSError as exc:
            raise Refused(f"{summary_file}: {exc.strerror or exc}") from exc
        text = _decode(data, summary_file)
    else:
        assert summary is not None
        return _not_empty(summary)
    return _not_empty(text.rstrip("\r\n"))


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"the summary from {where} is not UTF-8 text") from exc


def _not_empty(text: str) -> str:
    if not text.strip():
        raise Refused(
            "the summary is empty: give the text that stands for the history "
            "(--summary TEXT, --summary - or --summary-file PATH)"
        )
    return text


@click.command()
@click.argument("session", metavar="SESSION")
@summary_options
@click.option("--dry-run", is_flag=True, help="Say what would be appended; write nothing.")
@force_option
@json_option
def compact(
    session: str,
    summary: str | None,
    summary_file: str | None,
    dry_run: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Compact: a boundary and the summary; the next resume sends the summary and what
    follows it. Nothing is deleted: the history stays in the file."""
    text = read_summary(summary, summary_file)
    env = get_env()
    path = resolve(env, session)
    writer = Session.open(path)
    if writer.tip is None:
        raise Refused(f"{path.name} holds no conversation to compact")
    refuse_if_live(env.layout, writer.session_id, force=force, dry_run=dry_run)
    if dry_run:
        writer.plan_compact(text)  # what would be written; refuses what compact refuses
        summary_uuid = None
    else:
        summary_uuid = writer.compact(text)
    if as_json:
        emit_json({"sessionId": writer.session_id, "summaryUuid": summary_uuid, "dryRun": dry_run})
    else:
        verb = "would append" if dry_run else "appended"
        click.echo(
            f"{verb} a compact boundary and the summary ({len(text)} characters) to"
            f" {path.name}: the next resume sends the summary and what follows it;"
            " the history stays in the file"
        )
        if not dry_run:
            hint = resume_hint(env, writer.session_id, Transcript.open(path).cwd)
            click.echo(f"continue in the client: {hint}")
