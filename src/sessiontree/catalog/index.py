"""Listing sessions across projects from head and tail reads, kept in an incremental cache.

Transcripts are append-only, so what a listing needs splits in two: the *head* (session
id, cwd, first prompt, start time) never changes once written, and the *tail* (titles,
last prompt, last activity) changes only when the file grows. A listing therefore reads
a few KB at each end of a file, counts messages over the bytes it has not seen yet, and
remembers all of it by ``(inode, size, mtime)`` in a cache file: a second listing of an
unchanged archive is a ``stat`` per file.

A file that holds no conversation (empty, only summaries, only snapshots or metadata,
only sidechain records: :mod:`sessiontree.model.conversation`) is not a session: the
client refuses to resume it, so a listing leaves it out unless asked. The head read
settles it for every real session (its first prompt, or any main-chain record, is a
conversation); only a file whose head shows none is scanned whole, to be sure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from sessiontree.catalog import ends
from sessiontree.errors import DataError, Refused
from sessiontree.model.conversation import (
    NoConversation,
    find_no_conversation,
    find_sidechain_leaf,
    is_subagent_name,
)
from sessiontree.model.records import Problem
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.layout import Layout, StrPath
from sessiontree.storage.scan import Scan, scan_transcript
from sessiontree.storage.unreadable import read_failed

if TYPE_CHECKING:
    from sessiontree.conversation.transcript import Transcript

CACHE_VERSION = 4


class SessionInfo(msgspec.Struct, kw_only=True):
    """One row of ``sessiontree sessions``; field names are the ``--json`` keys."""

    sessionId: str
    cwd: str | None
    projectDir: str
    path: str
    title: str | None
    firstPrompt: str | None
    lastPrompt: str | None = None
    customTitle: str | None = None
    aiTitle: str | None = None
    startedAt: str | None
    updatedAt: str | None
    messageCount: int
    sizeBytes: int
    countedBytes: int = 0  # how much of the file the message count scanned (0: client's count)
    #: Why the file is not a session (the client finds no conversation in it); None if it is.
    noConversation: NoConversation | None = None


class _Entry(msgspec.Struct, array_like=True):
    """What the cache remembers of one file (stored as an array: no field names to match)."""

    inode: int
    size: int
    mtime_ns: int
    info: SessionInfo


class _Cache(msgspec.Struct):
    version: int = CACHE_VERSION
    entries: dict[str, _Entry] = msgspec.field(default_factory=dict)


_USER = b'"type":"user"'
_ASSISTANT = b'"type":"assistant"'


def _count_messages(path: Path, start: int) -> int:
    """user + assistant records in the bytes from ``start`` on (a byte count, no parsing).

    Each chunk is counted on its own; a window of ``len - 1`` bytes either side of each
    chunk boundary catches exactly the matches that straddle it.
    """
    patterns = (_USER, _ASSISTANT)
    count = 0
    previous = b""
    with path.open("rb") as handle:
        handle.seek(start)
        while chunk := handle.read(8 * 1024 * 1024):
            for pattern in patterns:
                edge = len(pattern) - 1
                count += chunk.count(pattern) + (previous[-edge:] + chunk[:edge]).count(pattern)
            previous = chunk
    return count


def read_session_info(
    path: StrPath, *, previous: SessionInfo | None = None, size: int | None = None
) -> SessionInfo:
    """A listing row for one transcript; ``previous`` (same file, shorter) saves the head.
    ``size``: the file's size, if the caller has just read it (saves a ``stat``).

    ``messageCount`` is the client's own count of the conversation at its last turn end
    (``turn_duration.messageCount``, read from the tail). A session without one (headless
    ``-p`` runs write none) is counted instead: its user and assistant records, by a byte
    scan that later listings continue from where it stopped.
    """
    path = Path(path)
    absent: NoConversation | None = None
    fd = os.open(path, os.O_RDONLY)
    try:
        if size is None:
            size = os.fstat(fd).st_size
        if previous is not None and previous.sizeBytes <= size and previous.noConversation is None:
            head_cwd, first_prompt, started = previous.cwd, previous.firstPrompt, previous.startedAt
        else:
            previous = None
            head = ends.read_head(fd, size, subagent=_subagent(path))
            head_cwd, first_prompt, started = head.cwd, head.first_prompt, head.started
            if not head.has_conversation:
                absent = scan_no_conversation(scan_transcript(path))
        tail = ends.read_tail(fd, size)
    finally:
        os.close(fd)
    if tail.message_count is not None:
        count, counted = tail.message_count, 0
    elif previous is not None and previous.countedBytes == previous.sizeBytes:
        count = previous.messageCount + _count_messages(path, previous.sizeBytes)
        counted = size
    else:
        count, counted = _count_messages(path, 0), size
    custom = tail.custom_title or (previous.customTitle if previous else None)
    ai = tail.ai_title or (previous.aiTitle if previous else None)
    last_prompt = tail.last_prompt or (previous.lastPrompt if previous else None)
    if absent is None and tail.names_sidechain:
        # The newest bookmark names a sidechain record: whether the client finds a leaf
        # takes the tree (rare: only then is the whole file read).
        from sessiontree.conversation.transcript import Transcript

        absent = transcript_no_conversation(Transcript.open(path))
    return SessionInfo(
        sessionId=path.stem,
        cwd=head_cwd,
        projectDir=str(path.parent),
        path=str(path),
        title=custom or ai or first_prompt,
        firstPrompt=first_prompt,
        lastPrompt=last_prompt,
        customTitle=custom,
        aiTitle=ai,
        startedAt=started,
        updatedAt=tail.updated or started,
        messageCount=count,
        sizeBytes=size,
        countedBytes=counted,
        noConversation=absent,
    )


def _subagent(path: Path) -> bool:
    return is_subagent_name(path.name)


def scan_no_conversation(scan: Scan) -> NoConversation | None:
    """Why a scanned transcript holds no conversation the client resumes (None if it does)."""
    return find_no_conversation(
        (line.skeleton for line in scan.lines if line.skeleton is not None),
        unreadable_lines=bool(scan.problems),
        subagent=_subagent(scan.path),
    )


def transcript_no_conversation(transcript: Transcript) -> NoConversation | None:
    """Why a transcript already read holds no conversation the client resumes: its records
    (:func:`scan_no_conversation`), then its leaf (a sidechain leaf finds none)."""
    reason = scan_no_conversation(transcript.scan)
    tree = transcript.tree
    if reason is not None or tree.sidechain_only or not tree.sidechain_records:
        return reason  # without sidechain records the client always finds a leaf
    return find_sidechain_leaf(tree, transcript.leaf)


def read_no_conversation(path: Path) -> NoConversation | None:
    """:func:`scan_no_conversation` for a file, cheaply: a head read finds the first
    main-chain record of any session; only a file without one is scanned whole. (A
    sidechain leaf is not looked for: :func:`transcript_no_conversation` does.)"""
    fd = os.open(path, os.O_RDONLY)
    try:
        head = ends.read_head(
            fd, os.fstat(fd).st_size, subagent=_subagent(path), enough="conversation"
        )
    finally:
        os.close(fd)
    return None if head.has_conversation else scan_no_conversation(scan_transcript(path))


def _load_cache(path: Path | None) -> _Cache:
    if path is None:
        return _Cache()
    try:
        cache = msgspec.msgpack.decode(path.read_bytes(), type=_Cache)
    except (OSError, msgspec.DecodeError, RecursionError):
        return _Cache()
    return cache if cache.version == CACHE_VERSION else _Cache()


def _save_cache(path: Path | None, cache: _Cache) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, msgspec.msgpack.encode(cache), fsync=False)
    except (OSError, Refused):
        return  # a cache we cannot write is only a slower next listing


def list_sessions(
    layout: Layout,
    *,
    project_dirs: Iterable[StrPath] | None = None,
    cache_file: StrPath | None = None,
    include_empty: bool = False,
    problems: list[Problem] | None = None,
) -> list[SessionInfo]:
    """Every top-level session under the given project folders (all if None), newest first.

    Files that hold no conversation are left out, as the client leaves them out; with
    ``include_empty`` they are listed too, each with its ``noConversation`` reason.

    ``cache_file``: where to remember what was read (a later listing of unchanged files
    is a ``stat`` each); None reads every file and writes nothing. The CLI keeps one per
    config root under the user's cache folder.

    A transcript that cannot be read (a folder or a link named as one, a file gone or
    unreadable since the folder was listed) is left out: each an ``unreadable`` problem
    added to ``problems``.
    """
    dirs = (
        list(layout.iter_project_dirs())
        if project_dirs is None
        else [Path(d) for d in project_dirs]
    )
    cache_file = None if cache_file is None else Path(cache_file)
    cache = _load_cache(cache_file)
    fresh: dict[str, _Entry] = {}
    rows: list[SessionInfo] = []
    changed = False
    for project_dir in dirs:
        for dir_entry in layout.iter_transcript_entries(project_dir, problems):
            try:
                stat = dir_entry.stat(follow_symlinks=False)
            except OSError as exc:
                _note(problems, read_failed(dir_entry.path, exc))
                continue
            key = dir_entry.path
            entry = cache.entries.get(key)
            if (
                entry is None
                or entry.size != stat.st_size
                or entry.mtime_ns != stat.st_mtime_ns
                or entry.inode != stat.st_ino
            ):
                grown = (
                    entry is not None and entry.inode == stat.st_ino and entry.size <= stat.st_size
                )
                try:
                    info = read_session_info(
                        key, previous=entry.info if grown and entry else None, size=stat.st_size
                    )
                except (OSError, DataError) as exc:  # gone or unreadable since the scandir
                    _note(problems, read_failed(key, exc))
                    continue
                entry = _Entry(stat.st_ino, stat.st_size, stat.st_mtime_ns, info)
                changed = True
            fresh[key] = entry
            if include_empty or entry.info.noConversation is None:
                rows.append(entry.info)
    if project_dirs is None:
        if changed or fresh.keys() != cache.entries.keys():  # a file came, changed or went
            _save_cache(cache_file, _Cache(entries=fresh))
    elif changed:  # a listing of some projects keeps what the cache knows of the others
        _save_cache(cache_file, _Cache(entries={**cache.entries, **fresh}))
    rows.sort(key=lambda r: (r.updatedAt or "", r.sessionId), reverse=True)
    return rows


def _note(problems: list[Problem] | None, problem: Problem) -> None:
    if problems is not None:
        problems.append(problem)


def info_as_json(info: SessionInfo, *, with_reason: bool = False) -> dict[str, Any]:
    """The ``sessions --json`` object for one row (the contract's keys, in order);
    ``with_reason`` adds ``noConversation`` (``sessions --include-empty``): why the file is
    not a session, or null."""
    row = {
        "sessionId": info.sessionId,
        "cwd": info.cwd,
        "projectDir": info.projectDir,
        "path": info.path,
        "title": info.title,
        "firstPrompt": info.firstPrompt,
        "startedAt": info.startedAt,
        "updatedAt": info.updatedAt,
        "messageCount": info.messageCount,
        "sizeBytes": info.sizeBytes,
    }
    if with_reason:
        row["noConversation"] = info.noConversation
    return row
