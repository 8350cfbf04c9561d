"""Listing sessions across projects from head and tail reads, kept in an incremental cache.

Transcripts are append-only, so what a listing needs splits in two: the *head* (session
id, cwd, first prompt, start time) never changes once written, and the *tail* (titles,
last prompt, last activity) changes only when the file grows. A listing therefore reads
a few KB at each end of a file, counts messages over the bytes it has not seen yet, and
remembers all of it by ``(inode, size, mtime)`` in a cache file: a second listing of an
unchanged archive is a ``stat`` per file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from sessiontree.model.records import Record, content_text
from sessiontree.storage.jsonl import read_head, read_tail
from sessiontree.storage.layout import Layout

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024
MAX_END_BYTES = 4 * 1024 * 1024  # how far a head or tail read may grow to find a record
CACHE_VERSION = 1

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


class _Entry(msgspec.Struct):
    """What the cache remembers of one file."""

    inode: int
    size: int
    mtime_ns: int
    info: SessionInfo


class _Cache(msgspec.Struct):
    version: int = CACHE_VERSION
    entries: dict[str, _Entry] = msgspec.field(default_factory=dict)


def _decode_lines(lines: Iterable[bytes]) -> list[Record]:
    out = []
    for line in lines:
        try:
            value = msgspec.json.decode(line)
        except msgspec.DecodeError:
            continue
        if isinstance(value, dict):
            out.append(Record(value))
    return out


def _prompt_text(record: Record) -> str | None:
    if not record.is_prompt:
        return None
    text = content_text(record.content).strip()
    if not text or text.startswith(("<command-", "<local-command", "<bash-", "Caveat:")):
        return None
    return " ".join(text.split())[:200]


def _read_end(path: Path, *, tail: bool, want: str) -> list[Record]:
    """Records from one end of a file, growing the read until a record with ``want`` shows."""
    size = HEAD_BYTES if not tail else TAIL_BYTES
    while True:
        raw = read_tail(path, size) if tail else read_head(path, size)
        records = _decode_lines(raw)
        if any(r.get(want) is not None for r in records) or size >= MAX_END_BYTES:
            return records
        if (tail and size >= path.stat().st_size) or (
            not tail and len(raw) < 2 and size > path.stat().st_size
        ):
            return records
        size *= 4


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


def read_session_info(path: Path, *, previous: SessionInfo | None = None) -> SessionInfo:
    """A listing row for one transcript; ``previous`` (same file, shorter) saves the head."""
    stat = path.stat()
    if previous is not None and previous.sizeBytes <= stat.st_size:
        head_cwd, first_prompt, started = previous.cwd, previous.firstPrompt, previous.startedAt
        count = previous.messageCount + _count_messages(path, previous.sizeBytes)
    else:
        head = _read_end(path, tail=False, want="message")
        head_cwd = next((r.get("cwd") for r in head if isinstance(r.get("cwd"), str)), None)
        first_prompt = next((t for r in head if (t := _prompt_text(r))), None)
        started = next((r.timestamp for r in head if r.timestamp), None)
        count = _count_messages(path, 0)
    tail = _read_end(path, tail=True, want="timestamp")
    before = previous or SessionInfo(
        sessionId="",
        cwd=None,
        projectDir="",
        path="",
        title=None,
        firstPrompt=None,
        startedAt=None,
        updatedAt=None,
        messageCount=0,
        sizeBytes=0,
    )
    custom = _last_str(tail, "custom-title", "customTitle") or before.customTitle
    ai = _last_str(tail, "ai-title", "aiTitle") or before.aiTitle
    last_prompt = _last_str(tail, "last-prompt", "lastPrompt") or before.lastPrompt
    updated = next((r.timestamp for r in reversed(tail) if r.timestamp), None) or started
    return SessionInfo(
        sessionId=path.stem,
        cwd=head_cwd,
        projectDir=str(path.parent),
        path=str(path),
        title=custom or ai or first_prompt,
        firstPrompt=first_prompt,
        lastPrompt=last_prompt,
        customTitle=custom or None,
        aiTitle=ai or None,
        startedAt=started,
        updatedAt=updated,
        messageCount=count,
        sizeBytes=stat.st_size,
    )


def _last_str(records: list[Record], kind: str, key: str) -> str | None:
    for record in reversed(records):
        if record.type == kind and isinstance(record.get(key), str) and record.get(key):
            value: str = record.get(key)
            return value
    return None


def cache_path(layout: Layout, env: Mapping[str, str]) -> Path:
    """Where the listing cache of one config root lives (outside the root: it is ours)."""
    base = env.get("SESSIONTREE_CACHE_DIR") or env.get("XDG_CACHE_HOME")
    folder = Path(base) if base else Path(env.get("HOME", str(Path.home()))) / ".cache"
    if not env.get("SESSIONTREE_CACHE_DIR"):
        folder = folder / "sessiontree"
    key = hashlib.sha256(str(layout.root.resolve()).encode()).hexdigest()[:16]
    return folder / f"index-{key}.msgpack"


def _load_cache(path: Path | None) -> _Cache:
    if path is None:
        return _Cache()
    try:
        cache = msgspec.msgpack.decode(path.read_bytes(), type=_Cache)
    except (OSError, msgspec.DecodeError):
        return _Cache()
    return cache if cache.version == CACHE_VERSION else _Cache()


def _save_cache(path: Path | None, cache: _Cache) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".index-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(msgspec.msgpack.encode(cache))
        os.replace(tmp, path)
    except OSError:
        return  # a cache we cannot write is only a slower next listing


def list_sessions(
    layout: Layout,
    *,
    project_dirs: list[Path] | None = None,
    cache_file: Path | None = None,
) -> list[SessionInfo]:
    """Every top-level session under the given project folders (all if None), newest first."""
    dirs = list(layout.iter_project_dirs()) if project_dirs is None else project_dirs
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
                except OSError:
                    continue
            fresh[key] = _Entry(stat.st_ino, stat.st_size, stat.st_mtime_ns, info)
            rows.append(info)
    if project_dirs is None or fresh.keys() != cache.entries.keys():
        merged = {**cache.entries, **fresh} if project_dirs is not None else fresh
        if merged != cache.entries:
            _save_cache(cache_file, _Cache(entries=merged))
    rows.sort(key=lambda r: (r.updatedAt or "", r.sessionId), reverse=True)
    return rows


def info_as_json(info: SessionInfo) -> dict[str, Any]:
    """The ``sessions --json`` object for one row (the contract's keys, in order)."""
    return {
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
