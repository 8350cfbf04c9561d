"""Finding sessions in the store: its listing rows, and what a ``SESSION`` argument names.

A stored session's listing row is the one the engine's listing read from its file when
it was synced (:func:`~sessiontree.catalog.index.read_session_info`), so ``sessions``
from the store prints what it printed on the machine that synced it, plus that machine
and its user. A ``SESSION`` names a stored session as it names a local one: a full id,
a unique id prefix (4+ characters), or an exact title; the same session synced by two
machines is ambiguous unless ``--machine`` says which. Usage counts the store's
transcripts and subagents as it counts the files (:func:`read_stored_responses`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from sessiontree.catalog.index import SessionInfo
from sessiontree.catalog.usage import Response, add_responses
from sessiontree.errors import Ambiguous, NotFound
from sessiontree.storage.store.reads import (
    StoredLines,
    StoredSession,
    StoredSource,
    last_grown,
    read_scan,
    stored_sessions,
)

if TYPE_CHECKING:
    import psycopg

_PREFIX = re.compile(r"[0-9a-fA-F-]{4,}")


class StoredInfo(msgspec.Struct, frozen=True):
    """A listing row of the store: the row, and the machine and user it came from."""

    info: SessionInfo
    machine: str
    user: str
    source: StoredSource


def list_stored_sessions(
    conn: psycopg.Connection[Any], *, machine: str | None = None, user: str | None = None
) -> list[StoredInfo]:
    """Every session the store holds (of that machine, of that user), newest first."""
    rows = [_info(stored) for stored in stored_sessions(conn, machine=machine, user=user)]
    rows.sort(key=lambda r: (r.info.updatedAt or "", r.info.sessionId, r.machine), reverse=True)
    return rows


def _info(stored: StoredSession) -> StoredInfo:
    info = msgspec.msgpack.decode(stored.info, type=SessionInfo)
    return StoredInfo(info, stored.source.machine, stored.source.os_user, stored.source)


def resolve_stored(
    conn: psycopg.Connection[Any],
    ref: str,
    *,
    machine: str | None = None,
    user: str | None = None,
) -> StoredInfo:
    """The stored session ``ref`` names: a full id, a unique id prefix, an exact title.
    A session several machines synced (one pulled it from another and went on) is the
    copy the store took lines of last: the one that went on furthest in time."""
    rows = list_stored_sessions(conn, machine=machine, user=user)
    lowered = ref.lower()
    for matches in (
        [r for r in rows if r.info.sessionId == lowered],
        [r for r in rows if _PREFIX.fullmatch(ref) and r.info.sessionId.startswith(lowered)],
        [r for r in rows if ref in (r.info.customTitle, r.info.aiTitle)],
    ):
        if len(matches) == 1:
            return matches[0]
        if len({r.info.sessionId for r in matches}) == 1:
            return min(matches, key=lambda r: last_grown(conn, r.source))
        if len(matches) > 1:
            raise Ambiguous(
                "session", ref, [f"{r.info.sessionId} (machine {r.machine})" for r in matches]
            )
    raise NotFound("session in the store", ref)


#: The kinds of source usage counts: every transcript and subagent.
USAGE_KINDS = ("transcript", "subagent")


def read_stored_responses(
    conn: psycopg.Connection[Any],
    sources: Iterable[StoredSource],
    *,
    advance: Callable[[], None] | None = None,
) -> dict[str, Response]:
    """:func:`~sessiontree.catalog.usage_files.read_responses` of stored transcripts and
    subagents (:data:`USAGE_KINDS`): each response once; ``advance`` called after each."""
    seen: dict[str, Response] = {}
    for source in sources:
        add_responses(seen, source.path, read_scan(conn, source), StoredLines(conn, source))
        if advance is not None:
            advance()
    return seen
