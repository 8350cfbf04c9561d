"""``secrets``: keys, tokens and passwords that tools printed into transcripts, masked."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import click

from sessiontree.cli.main import Env
from sessiontree.cli.output import console, emit_json, get_env, json_option, resolve
from sessiontree.model.secrets import find_secrets


@click.command()
@click.argument("session", metavar="SESSION", required=False)
@json_option
def secrets(session: str | None, as_json: bool) -> None:
    """Secrets in transcripts (every session's, or SESSION's with its subagents): API
    keys, tokens, private keys and password assignments, each masked, with where it is.

    What `sync` would send as it is (--redact masks them); with --store, what the
    store holds."""
    env = get_env(reads_store=True)
    rows = list(_stored(env, session) if env.store is not None else _local(env, session))
    if as_json:
        emit_json(rows)
        return
    out = console(env)
    for row in rows:
        origin = f" ({row['machine']})" if "machine" in row else ""
        out.print(f"{row['path']}:{row['line']}{origin} {row['kind']} {row['masked']}",
                  markup=False)  # fmt: skip
    out.print(f"{len(rows)} secret(s)", markup=False)


def _findings(lines: Iterable[bytes]) -> Iterator[tuple[int, Any]]:
    for number, raw in enumerate(lines, 1):
        for finding in find_secrets(raw):
            yield number, finding


def _local(env: Env, session: str | None) -> Iterator[dict[str, Any]]:
    from sessiontree.catalog.usage import iter_usage_files
    from sessiontree.storage.layout import subagents_dir

    if session is None:
        paths = list(iter_usage_files(env.layout))
    else:
        path = resolve(env, session)
        folder = subagents_dir(path)
        paths = [path, *sorted(folder.glob("*.jsonl"))] if folder.is_dir() else [path]
    for path in paths:
        try:
            with path.open("rb") as handle:
                for number, finding in _findings(handle):
                    yield _row(path, number, finding)
        except OSError as exc:
            click.echo(f"sessiontree: warning: {path}: {exc.strerror or exc}", err=True)


def _stored(env: Env, session: str | None) -> Iterator[dict[str, Any]]:
    from sessiontree.cli.stored import resolve_in_store, run_connection
    from sessiontree.storage.store.connect import failures_as_store_errors
    from sessiontree.storage.store.reads import current_sources, iter_source_lines

    assert env.store is not None
    conn = run_connection(env)
    with failures_as_store_errors(env.store):
        ids = None if session is None else [resolve_in_store(env, session).info.sessionId]
        for source in current_sources(conn, kinds=("transcript", "subagent"), session_ids=ids):
            for number, finding in _findings(iter_source_lines(conn, source.source_id)):
                yield {**_row(source.path, number, finding), "machine": source.machine,
                       "user": source.os_user}  # fmt: skip


def _row(path: Path, number: int, finding: Any) -> dict[str, Any]:
    return {"path": str(path), "line": number, "kind": finding.kind, "masked": finding.masked}
