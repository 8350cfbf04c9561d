"""A transcript's API responses read straight from its bytes, and kept for the next run.

Counting usage needs no tree: every assistant record that carries ``message.usage`` counts
on its own, on whatever branch it is (:mod:`sessiontree.catalog.usage`). So a file is not
scanned for its skeleton: the lines that hold the key ``"usage"`` are found with a byte
search (the client and every JSON writer write a key's ASCII letters as they are), and
only those lines are decoded, as :class:`~sessiontree.catalog.usage.UsageFields`. The
other lines of a transcript (prompts, tool results, the bulk of its bytes) are never
decoded. A line is read as the skeleton scan and phase two read it: NUL bytes dropped,
invalid UTF-8 replaced, a last line without its newline read too (a write in progress
that is whole, or a torn one that is no record).

:class:`UsageCache` keeps each file's responses, in the records' order, with the
:class:`~sessiontree.storage.skeleton_cache.FileMark` of what was read: a file that only
grew since is read from where the last run stopped, an unchanged one not at all, any other
(replaced, truncated, rewritten) whole again. One cache file per config root, in the
cache folder (never in the root); it cannot be read or written: slower, never wrong.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime, tzinfo
from pathlib import Path

import msgspec

from sessiontree.catalog.usage import (
    SYNTHETIC_MODEL,
    PriceTable,
    Response,
    Tokens,
    UsageBy,
    UsageFields,
    UsageReport,
    build_usage_report,
    default_prices,
    iter_usage_files,
    merge_response,
    parse_response,
    project_of,
    session_of,
)
from sessiontree.errors import SessionTreeError
from sessiontree.model.records import Problem
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.jsonl import decode_as
from sessiontree.storage.layout import Layout
from sessiontree.storage.scan import BLOCK, LINE_ERRORS, skeleton_of
from sessiontree.storage.skeleton_cache import FileMark
from sessiontree.storage.unreadable import read_failed

#: The bytes every line that may hold an API response has.
USAGE_KEY = b'"usage"'

#: Bytes hashed at a file's head and before where its read stopped (the store's sync
#: checks as many).
CHECK_BYTES = 4096

#: Bumped when the cache file's layout or meaning changes; another version is rebuilt.
FORMAT = 2


def iter_candidate_lines(fd: int, start: int = 0) -> Iterator[bytes]:
    """Each line from ``start`` (a line start) that holds :data:`USAGE_KEY` (or a NUL
    byte, which the scan drops: it may cut the key), newline included, in file order;
    the last line without a newline if it has none. Reads in blocks into one buffer (a
    fresh block for each read would cost its pages again); a line that runs past its
    block is held in pieces, joined only if it holds the key (a 40 MB tool result is
    not)."""
    pieces = _Pieces()
    buffer = bytearray(BLOCK)
    view = memoryview(buffer)
    at = start
    while size := os.preadv(fd, [buffer], at):
        at += size
        position = 0
        if pieces:
            newline = buffer.find(b"\n", 0, size)
            if newline < 0:
                pieces.add(bytes(view[:size]))
                continue
            pieces.add(bytes(view[: newline + 1]))
            if pieces.has_key:
                yield pieces.join()
            pieces.clear()
            position = newline + 1
        nul = buffer.find(b"\x00", position, size)
        while True:
            found = buffer.find(USAGE_KEY, position, size)
            if 0 <= nul < position:
                nul = buffer.find(b"\x00", position, size)
            if nul >= 0 and (found < 0 or nul < found):
                found = nul  # (a NUL may cut the key: the line is read as the scan reads it)
            if found < 0:
                position = max(position, buffer.rfind(b"\n", position, size) + 1)
                break
            first = buffer.rfind(b"\n", position, found) + 1 or position
            newline = buffer.find(b"\n", found, size)
            if newline < 0:
                position = first
                break
            yield bytes(view[first : newline + 1])
            position = newline + 1
        if position < size:
            pieces.add(bytes(view[position:size]))
    if pieces and pieces.has_key:  # no newline at the end: a write in progress, or torn
        yield pieces.join()


class _Pieces:
    """A line read in pieces, and whether it holds :data:`USAGE_KEY` (within a piece or
    across two)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.has_key = False

    def __bool__(self) -> bool:
        return bool(self.parts)

    def add(self, piece: bytes) -> None:
        if not self.has_key and b"\x00" in piece:
            self.has_key = True  # (a NUL may cut the key: the line is read whole)
        if not self.has_key:
            seam = self.parts[-1][1 - len(USAGE_KEY) :] if self.parts else b""
            self.has_key = USAGE_KEY in seam + piece[: len(USAGE_KEY) - 1] or USAGE_KEY in piece
        self.parts.append(piece)

    def join(self) -> bytes:
        return b"".join(self.parts)

    def clear(self) -> None:
        self.parts, self.has_key = [], False


class _CacheSplit(msgspec.Struct, gc=False):
    ephemeral_1h_input_tokens: int = 0


class _Usage(msgspec.Struct, gc=False):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation: _CacheSplit | None = None


class _Message(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None


class _Forked(msgspec.Struct, gc=False):
    sessionId: str | None = None


class _Record(msgspec.Struct, gc=False):
    """An assistant record as the client writes it, typed: what a response is read from
    without making a dict of it (a scan keeps every line that is one: its type, uuid and
    parentUuid are strings or null). A line whose fields have other types (a count that
    is a string, ``forkedFrom`` that is no object) is not one: it is read as usage read
    it after a skeleton scan (:func:`line_response`)."""

    type: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    timestamp: str | None = None
    requestId: str | None = None
    sessionId: str | None = None
    requestSessionId: str | None = None
    forkedFrom: _Forked | None = None
    cwd: str | None = None
    message: _Message | None = None


_record_decoder = msgspec.json.Decoder(_Record)


def _typed_response(
    record: _Record, *, session_id: str, project: str, path: str
) -> Response | None:
    """:func:`~sessiontree.catalog.usage.parse_response` of a typed record."""
    message = record.message
    if record.type != "assistant" or message is None:
        return None
    usage = message.usage
    if usage is None or message.model == SYNTHETIC_MODEL:
        return None
    key = (
        f"message:{message.id}"
        if message.id
        else f"request:{record.requestId}"
        if record.requestId
        else f"record:{record.uuid}"
        if record.uuid
        else None
    )
    if key is None:
        return None
    forked = record.forkedFrom
    sent_by, own = record.requestSessionId, record.sessionId
    write = max(usage.cache_creation_input_tokens, 0)
    hour = max(usage.cache_creation.ephemeral_1h_input_tokens, 0) if usage.cache_creation else 0
    return Response(
        key=key,
        model=message.model,
        tokens=Tokens(
            input=max(usage.input_tokens, 0),
            output=max(usage.output_tokens, 0),
            cache_write=write,
            cache_write_1h=min(hour, write),
            cache_read=max(usage.cache_read_input_tokens, 0),
        ),
        timestamp=record.timestamp,
        session_id=sent_by or (forked and forked.sessionId) or own or session_id,
        project=record.cwd or project,
        path=path,
        copied=forked is not None or (bool(sent_by) and sent_by != own),
    )


def line_response(line: bytes, *, session_id: str, project: str, path: str) -> Response | None:
    """The response one line holds (newline or not), or None: typed when it is one as
    the client writes it (:class:`_Record`), else as the skeleton reading does: if a
    scan keeps the line as an assistant record, its usage fields decoded and given to
    :func:`~sessiontree.catalog.usage.parse_response`, whose rules :func:`_typed_response`
    follows."""
    end = len(line) - 1 if line.endswith(b"\n") else len(line)
    if line.find(b"\x00", 0, end) < 0:
        try:
            record = _record_decoder.decode(memoryview(line)[:end])
        except LINE_ERRORS:
            pass
        else:
            return _typed_response(record, session_id=session_id, project=project, path=path)
    skeleton = skeleton_of(line)
    if skeleton is None or skeleton.type != "assistant":
        return None
    raw = decode_as(line, UsageFields)
    if raw is None:
        return None
    return parse_response(raw, session_id=session_id, project=project, path=path)


class FileResponses(msgspec.Struct, gc=False):
    """What :func:`read_file_responses` found: the responses of whole lines, in the
    records' order (not merged: :func:`~sessiontree.catalog.usage.merge_response`), where
    those lines end (a later read picks up there), and the response of a last line that
    has no newline yet (a write in progress, read again next time)."""

    whole: list[Response]
    end: int
    unfinished: list[Response]


def read_file_responses(fd: int, path: Path, start: int = 0) -> FileResponses:
    """The responses of the transcript open at ``fd`` from ``start`` (a line start)."""
    session_id, project, where = session_of(path), project_of(path), str(path)
    found = FileResponses([], start, [])
    for line in iter_candidate_lines(fd, start):
        response = line_response(line, session_id=session_id, project=project, path=where)
        if response is not None:
            (found.whole if line.endswith(b"\n") else found.unfinished).append(response)
    found.end = _whole_lines_end(fd, start, os.fstat(fd).st_size)
    return found


def _whole_lines_end(fd: int, start: int, size: int) -> int:
    """Just past the last newline in ``[start, size)``, else ``start``."""
    end = size
    while end > start:
        begin = max(start, end - BLOCK)
        newline = os.pread(fd, end - begin, begin).rfind(b"\n")
        if newline >= 0:
            return begin + newline + 1
        end = begin
    return start


# --- the cache -----------------------------------------------------------------------


class _Kept(msgspec.Struct, array_like=True, gc=False):
    """One response as the cache keeps it (its path is the file's)."""

    key: str
    model: str | None
    input: int
    output: int
    cache_write: int
    cache_write_1h: int
    cache_read: int
    timestamp: str | None
    session_id: str
    project: str
    copied: bool


class _FileEntry(msgspec.Struct, array_like=True):
    mark: FileMark
    responses: list[_Kept]


class _CacheFile(msgspec.Struct):
    format: int
    files: dict[str, _FileEntry]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_CacheFile)


def _kept(response: Response) -> _Kept:
    t = response.tokens
    return _Kept(
        response.key,
        response.model,
        t.input,
        t.output,
        t.cache_write,
        t.cache_write_1h,
        t.cache_read,
        response.timestamp,
        response.session_id,
        response.project,
        response.copied,
    )


def _response(kept: _Kept, path: str) -> Response:
    tokens = Tokens(kept.input, kept.output, kept.cache_write, kept.cache_write_1h, kept.cache_read)
    return Response(
        kept.key,
        kept.model,
        tokens,
        kept.timestamp,
        kept.session_id,
        kept.project,
        path,
        kept.copied,
    )


class UsageCache:
    """Each transcript's responses as last read, in ``file`` (one per config root)."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self._files: dict[str, _FileEntry] | None = None
        self._changed = False

    def _entries(self) -> dict[str, _FileEntry]:
        if self._files is None:
            self._files = {}
            with contextlib.suppress(OSError, msgspec.DecodeError, RecursionError):
                cached = _decoder.decode(self.file.read_bytes())
                if cached.format == FORMAT:
                    self._files = cached.files
        return self._files

    def responses(self, path: Path) -> list[Response]:
        """The responses of the transcript at ``path`` (:func:`read_file_responses`),
        read only from where the cache stopped when the file only grew since; raises
        :class:`OSError` when it cannot be opened or read."""
        absolute = os.path.abspath(path)
        entries = self._entries()
        entry = entries.get(absolute)
        here = str(path)
        with path.open("rb", buffering=0) as handle:
            fd = handle.fileno()
            st = os.fstat(fd)
            if entry is not None and entry.mark.unchanged(st) and entry.mark.end == st.st_size:
                return [_response(k, here) for k in entry.responses]
            kept: list[_Kept] = []
            start = 0
            if entry is not None and entry.mark.only_grew(st, fd):
                kept, start = entry.responses, entry.mark.end
            found = read_file_responses(fd, path, start)
            mark = entry.mark.grown_to(fd, st, found.end) if entry and start else None
            mark = mark or FileMark.of(fd, st, found.end, CHECK_BYTES)
            entries[absolute] = _FileEntry(mark, [*kept, *map(_kept, found.whole)])
            self._changed = True
            return [*(_response(k, here) for k in kept), *found.whole, *found.unfinished]

    def forget_others(self, paths: set[str]) -> None:
        """Leave out of the cache every file not in ``paths`` (absolute): after a read of
        every transcript of the root, those are gone."""
        entries = self._entries()
        for gone in entries.keys() - paths:
            del entries[gone]
            self._changed = True

    def save(self) -> None:
        """Write the cache file if anything changed (atomically, no fsync: a cache lost
        to a crash is rebuilt)."""
        if not self._changed or self._files is None:
            return
        data = _encoder.encode(_CacheFile(FORMAT, self._files))
        with contextlib.suppress(OSError, SessionTreeError):
            write_atomically(self.file, [data], mode=0o600, fsync=False, folder_mode=0o700)
        self._changed = False


def file_responses(path: Path, cache: UsageCache | None = None) -> list[Response]:
    """The responses of the transcript at ``path`` in the records' order, through
    ``cache`` when given; raises :class:`OSError` when it cannot be opened or read."""
    if cache is not None:
        return cache.responses(path)
    with path.open("rb", buffering=0) as handle:
        found = read_file_responses(handle.fileno(), path)
    return [*found.whole, *found.unfinished]


def read_responses(
    paths: Iterable[Path],
    *,
    cache: UsageCache | None = None,
    advance: Callable[[], None] | None = None,
    problems: list[Problem] | None = None,
) -> dict[str, Response]:
    """Every response in ``paths``, each once
    (:func:`~sessiontree.catalog.usage.merge_response`), read as
    :func:`read_file_responses` reads them: only the lines that hold usage are decoded,
    no skeleton is scanned (through ``cache`` when given, saved at the end); ``advance``
    is called after each file. A file gone or unreadable since it was listed counts
    nothing: an ``unreadable`` problem added to ``problems``."""
    seen: dict[str, Response] = {}
    for path in paths:
        try:
            found = file_responses(path, cache)
        except OSError as exc:  # gone or unreadable since it was listed
            if problems is not None:
                problems.append(read_failed(path, exc))
            found = []
        for response in found:
            merge_response(seen, response)
        if advance is not None:
            advance()
    if cache is not None:
        cache.save()
    return seen


def read_usage(
    layout: Layout,
    *,
    by: UsageBy = "day",
    prices: PriceTable | None = None,
    tz: tzinfo | None,
    project_dirs: Iterable[Path] | None = None,
    since: date | None = None,
    until: date | None = None,
    cache: UsageCache | None = None,
    first_weekday: int = 0,
    now: datetime | None = None,
) -> UsageReport:
    """The usage report of ``layout``'s projects (``project_dirs``; None: all of them):
    :func:`~sessiontree.catalog.usage.iter_usage_files`, :func:`read_responses`,
    :func:`~sessiontree.catalog.usage.build_usage_report`."""
    responses = read_responses(iter_usage_files(layout, project_dirs), cache=cache)
    return build_usage_report(
        responses.values(),
        by=by,
        prices=default_prices() if prices is None else prices,
        tz=tz,
        since=since,
        until=until,
        first_weekday=first_weekday,
        now=now,
    )
