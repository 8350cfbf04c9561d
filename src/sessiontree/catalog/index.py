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

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from sessiontree.errors import DataError, Refused
from sessiontree.model.conversation import (
    NoConversation,
    find_no_conversation,
    find_sidechain_leaf,
    is_subagent_name,
)
from sessiontree.model.records import Record, is_typed_prompt
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.jsonl import read_head, read_tail
from sessiontree.storage.layout import Layout, StrPath
from sessiontree.storage.scan import Scan, scan_transcript

if TYPE_CHECKING:
    from sessiontree.conversation.transcript import Transcript

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024
MAX_END_BYTES = 4 * 1024 * 1024  # how far a head or tail read may grow to find a record
CACHE_VERSION = 3

_USER = b'"type":"user"'
_ASSISTANT = b'"type":"assistant"'


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


class _Entry(msgspec.Struct):
    """What the cache remembers of one file."""

    inode: int
    size: int
    mtime_ns: int
    info: SessionInfo


class _Cache(msgspec.Struct):
    version: int = CACHE_VERSION
    entries: dict[str, _Entry] = msgspec.field(default_factory=dict)


class _EndRecord(msgspec.Struct, dict=True):
    """The fields a listing row reads from the first and last records of a transcript.
    A ``user`` one also keeps its line (an attribute set after decoding, not a field:
    only the whole record says whether it is a typed prompt)."""

    type: str | None = None
    uuid: str | None = None
    isSidechain: bool | None = None
    cwd: str | None = None
    timestamp: str | None = None
    subtype: str | None = None
    messageCount: int | None = None
    customTitle: str | None = None
    aiTitle: str | None = None
    lastPrompt: str | None = None
    leafUuid: str | None = None
    isMeta: bool = False
    isCompactSummary: bool = False


_end_decoder = msgspec.json.Decoder(_EndRecord)
_LINE = "line"
_PASTE_TAG = re.compile(r"</?pasted_content[^>]*>")
#: Typed prompts a title is not taken from: a bash-mode command, a slash command's rows,
#: an older client's untagged caveat (the first *meaningful* prompt, as the client says).
_NOT_A_TITLE = ("<command-", "<local-command", "<bash-", "Caveat:")


def _decode_lines(lines: Iterable[bytes]) -> list[_EndRecord]:
    out = []
    for line in lines:
        try:
            record = _end_decoder.decode(line)
        except (msgspec.DecodeError, RecursionError):  # a damaged line names no session
            continue
        if record.type == "user":
            setattr(record, _LINE, line)
        out.append(record)
    return out


def _prompt_text(record: _EndRecord) -> str | None:
    """The text of a typed prompt (:func:`is_typed_prompt`), flattened for a title; None
    for any other record, and for a prompt no title is taken from."""
    if record.type != "user":
        return None
    try:
        raw = msgspec.json.decode(getattr(record, _LINE))
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(raw, dict) or not is_typed_prompt(raw):
        return None
    text = Record(raw).text().strip()
    if not text or text.startswith(_NOT_A_TITLE):
        return None
    return " ".join(_PASTE_TAG.sub("", text).split())[:200] or None


def _read_end(path: Path, *, tail: bool, until: Callable[[_EndRecord], bool]) -> list[_EndRecord]:
    """Records from one end of a file, the read growing (up to 4 MiB) until one satisfies
    ``until``, or the whole file has been read."""
    size = TAIL_BYTES if tail else HEAD_BYTES
    file_size = path.stat().st_size
    while True:
        records = _decode_lines(read_tail(path, size) if tail else read_head(path, size))
        if any(until(r) for r in records) or size >= MAX_END_BYTES or size >= file_size:
            return records
        size *= 4


def _is_turn_end(record: _EndRecord) -> bool:
    return (
        record.type == "system"
        and record.subtype == "turn_duration"
        and (record.messageCount is not None)
    )


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


def read_session_info(path: StrPath, *, previous: SessionInfo | None = None) -> SessionInfo:
    """A listing row for one transcript; ``previous`` (same file, shorter) saves the head.

    ``messageCount`` is the client's own count of the conversation at its last turn end
    (``turn_duration.messageCount``, read from the tail). A session without one (headless
    ``-p`` runs write none) is counted instead: its user and assistant records, by a byte
    scan that later listings continue from where it stopped.
    """
    path = Path(path)
    size = path.stat().st_size
    absent: NoConversation | None = None
    if previous is not None and previous.sizeBytes <= size and previous.noConversation is None:
        head_cwd, first_prompt, started = previous.cwd, previous.firstPrompt, previous.startedAt
    else:
        previous = None
        head = _read_end(path, tail=False, until=lambda r: _prompt_text(r) is not None)
        head_cwd = next((r.cwd for r in head if r.cwd), None)
        first_prompt = next((t for r in head if (t := _prompt_text(r))), None)
        started = next((r.timestamp for r in head if r.timestamp), None)
        if find_no_conversation(head, subagent=_subagent(path)) is not None:
            absent = scan_no_conversation(scan_transcript(path))
    tail = _read_end(path, tail=True, until=_is_turn_end)
    turn_end = next((r for r in reversed(tail) if _is_turn_end(r)), None)
    if turn_end is not None and turn_end.messageCount is not None:
        count, counted = turn_end.messageCount, 0
    elif previous is not None and previous.countedBytes == previous.sizeBytes:
        count = previous.messageCount + _count_messages(path, previous.sizeBytes)
        counted = size
    else:
        count, counted = _count_messages(path, 0), size

    def last(field: str) -> str | None:
        value = next((getattr(r, field) for r in reversed(tail) if getattr(r, field)), None)
        return value if value is not None else (getattr(previous, field) if previous else None)

    custom, ai = last("customTitle"), last("aiTitle")
    named = next((r.leafUuid for r in reversed(tail) if r.type == "last-prompt"), None)
    if absent is None and named and any(r.uuid == named and r.isSidechain for r in tail):
        # The newest bookmark names a sidechain record: whether the client finds a leaf
        # takes the tree (rare: only then is the whole file read).
        from sessiontree.conversation.transcript import Transcript

        absent = transcript_no_conversation(Transcript.open(path))
    updated = next((r.timestamp for r in reversed(tail) if r.timestamp), None) or started
    return SessionInfo(
        sessionId=path.stem,
        cwd=head_cwd,
        projectDir=str(path.parent),
        path=str(path),
        title=custom or ai or first_prompt,
        firstPrompt=first_prompt,
        lastPrompt=last("lastPrompt"),
        customTitle=custom,
        aiTitle=ai,
        startedAt=started,
        updatedAt=updated,
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
    if reason is not None or not any(tree.is_sidechain(u) for u in tree.nodes):
        return reason  # without sidechain records the client always finds a leaf
    return find_sidechain_leaf(tree, transcript.leaf)


def read_no_conversation(path: Path) -> NoConversation | None:
    """:func:`scan_no_conversation` for a file, cheaply: a head read finds the first
    main-chain record of any session; only a file without one is scanned whole. (A
    sidechain leaf is not looked for: :func:`transcript_no_conversation` does.)"""
    subagent = _subagent(path)
    head = _read_end(
        path, tail=False, until=lambda r: find_no_conversation([r], subagent=subagent) is None
    )
    if find_no_conversation(head, subagent=subagent) is None:
        return None
    return scan_no_conversation(scan_transcript(path))


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
) -> list[SessionInfo]:
    """Every top-level session under the given project folders (all if None), newest first.

    Files that hold no conversation are left out, as the client leaves them out; with
    ``include_empty`` they are listed too, each with its ``noConversation`` reason.

    ``cache_file``: where to remember what was read (a later listing of unchanged files
    is a ``stat`` each); None reads every file and writes nothing. The CLI keeps one per
    config root under the user's cache folder.
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
    for project_dir in dirs:
        for path in layout.iter_transcripts(project_dir):
            try:
                stat = path.stat()
            except OSError:
                continue
            key = str(path)
            entry = cache.entries.get(key)
            if entry and (entry.inode, entry.size, entry.mtime_ns) == (
                stat.st_ino,
                stat.st_size,
                stat.st_mtime_ns,
            ):
                info = entry.info
            else:
                grown = (
                    entry is not None and entry.inode == stat.st_ino and entry.size <= stat.st_size
                )
                try:
                    info = read_session_info(path, previous=entry.info if grown and entry else None)
                except (OSError, DataError):  # gone or unreadable since the scandir
                    continue
            fresh[key] = _Entry(stat.st_ino, stat.st_size, stat.st_mtime_ns, info)
            if include_empty or info.noConversation is None:
                rows.append(info)
    if project_dirs is None or fresh.keys() != cache.entries.keys():
        merged = {**cache.entries, **fresh} if project_dirs is not None else fresh
        if merged != cache.entries:
            _save_cache(cache_file, _Cache(entries=merged))
    rows.sort(key=lambda r: (r.updatedAt or "", r.sessionId), reverse=True)
    return rows


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
