"""A transcript's API responses read straight from its bytes, and kept for the next run.

Counting usage needs no tree: every assistant record that carries ``message.usage`` counts
on its own, on whatever branch it is (:mod:`sessiontree.catalog.usage`). So a file is not
scanned for its skeleton: the lines that hold the key ``"usage"`` are found with a byte
search (the client and every JSON writer write a key's ASCII letters as they are), and
only those lines are decoded: typed (:class:`_Record`) when they are as the client
writes them, else as :class:`~sessiontree.catalog.usage.UsageFields`. The other lines of
a transcript (prompts, tool results, the bulk of its bytes) are never decoded. A line is
read as the skeleton scan and phase two read it: NUL bytes dropped, invalid UTF-8
replaced, a last line without its newline read too (a write in progress that is whole,
or a torn one that is no record). Many files to read are split between this process and
a forked child (:func:`read_responses`).

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
from typing import Annotated

import ahocorasick_rs
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
    parse_response,
    project_of,
    session_of,
)
from sessiontree.errors import SessionTreeError
from sessiontree.model.records import Problem
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.forked import ChildFailed, ForkedOutput, fork_output, may_fork
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
    the last line without a newline if it has none (:class:`CandidateLines`)."""
    return (bytes(line) for line in CandidateLines(fd, start))


class CandidateLines:
    """The lines of the file open at ``fd`` from ``start`` (a line start) that may hold
    a response: those that hold :data:`USAGE_KEY` or a NUL byte. Once iterated,
    :attr:`end` is just past the last newline read (``start`` if none): where a later
    read picks up. A line is given as a view into the reader's buffer when it is whole
    (its newline included), in one block, and holds no NUL: valid until the next line is
    asked for; else as bytes.

    Reads in blocks into one buffer (a fresh block for each read would cost its pages
    again); the key is found by a vectorised search (Aho-Corasick's ``memmem``, several
    times Python's ``find``), NULs by ``memchr``. A line that runs past its block is not
    held: where it began is, and it is read again whole, in one read, once its end is
    found, only if it holds the key (a 40 MB tool result does not). The file only grows,
    so those bytes are the ones searched."""

    def __init__(self, fd: int, start: int = 0) -> None:
        self.fd, self.start, self.end = fd, start, start

    def __iter__(self) -> Iterator[bytes | memoryview]:
        try:
            buffer = _spare_buffers.pop()
        except IndexError:  # (none, or another thread's reader took it)
            buffer = bytearray(BLOCK)
        if len(buffer) != BLOCK:
            buffer = bytearray(BLOCK)
        try:
            yield from self._lines(buffer)
        finally:
            if not _spare_buffers:
                _spare_buffers.append(buffer)

    def _lines(self, buffer: bytearray) -> Iterator[bytes | memoryview]:
        fd, cut = self.fd, len(USAGE_KEY) - 1
        view = memoryview(buffer)
        at = self.end = self.start
        carried = -1  # where a line that runs past its block began (-1: none)
        holds = False  # whether it holds the key (or a NUL)
        seam = b""  # its last bytes read (the key may be cut between two reads)
        while size := os.preadv(fd, [buffer], at):
            begun, at = at, at + size
            hits, nul = _hits(buffer, view, size)
            position = 0
            if carried >= 0:
                newline = buffer.find(b"\n", 0, size)
                stop = size if newline < 0 else newline + 1
                if not holds:
                    holds = (bool(hits) and hits[0] < stop) or USAGE_KEY in seam + bytes(
                        view[: min(stop, cut)]
                    )
                if newline < 0:
                    if not holds:
                        seam = (seam + bytes(view[max(0, size - cut) : size]))[-cut:]
                    continue
                if holds:
                    yield os.pread(fd, begun + stop - carried, carried)
                carried, holds, seam = -1, False, b""
                position = stop
                self.end = begun + stop
            for hit in hits:
                if hit < position:
                    continue
                first = buffer.rfind(b"\n", position, hit) + 1 or position
                newline = buffer.find(b"\n", hit, size)
                if newline < 0:
                    carried, holds, position = begun + first, True, size
                    break
                if nul and buffer.find(b"\x00", first, newline) >= 0:
                    yield bytes(view[first : newline + 1])
                else:
                    yield view[first : newline + 1]
                position = newline + 1
                self.end = begun + position
            if position < size and carried < 0:
                position = max(position, buffer.rfind(b"\n", position, size) + 1)
                self.end = begun + position
                if position < size:
                    carried, seam = begun + position, bytes(view[max(position, size - cut) : size])
        if carried >= 0 and holds:  # no newline at the end: a write in progress, or torn
            yield os.pread(fd, at - carried, carried)


_key_finder = ahocorasick_rs.BytesAhoCorasick([USAGE_KEY])

#: A block's buffer a reader is done with, for the next one (a fresh one costs its
#: zeroing: 4 MB for each file, a third of the time a cold read of small files took).
_spare_buffers: list[bytearray] = []


def _hits(buffer: bytearray, view: memoryview, size: int) -> tuple[list[int], bool]:
    """Where :data:`USAGE_KEY` and NUL bytes are in the first ``size`` bytes of
    ``buffer``, in order; whether there is a NUL among them."""
    hits = [at for _, at, _ in _key_finder.find_matches_as_indexes(view[:size])]
    nul = first_nul = buffer.find(b"\x00", 0, size)
    if nul >= 0:
        while nul >= 0:
            hits.append(nul)
            nul = buffer.find(b"\x00", nul + 1, size)
        hits.sort()
    return hits, first_nul >= 0


#: A token count as the typed reading takes it: another (a negative count, a float, a
#: string) makes the line one to read as the skeleton reading does, which counts it 0.
_Count = Annotated[int, msgspec.Meta(ge=0)]


class _CacheSplit(msgspec.Struct, gc=False):
    ephemeral_1h_input_tokens: _Count = 0


class _Usage(msgspec.Struct, gc=False):
    input_tokens: _Count = 0
    output_tokens: _Count = 0
    cache_creation_input_tokens: _Count = 0
    cache_read_input_tokens: _Count = 0
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


class _Kept(msgspec.Struct, array_like=True, gc=False):
    """One response as it is read and kept (its path is the file's): made straight from
    a typed record, sent by a forked reader and kept in the cache as it is."""

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


def _typed_kept(record: _Record, *, session_id: str, project: str) -> _Kept | None:
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
    write = usage.cache_creation_input_tokens
    hour = usage.cache_creation.ephemeral_1h_input_tokens if usage.cache_creation else 0
    return _Kept(
        key,
        message.model,
        usage.input_tokens,
        usage.output_tokens,
        write,
        hour if hour < write else write,
        usage.cache_read_input_tokens,
        record.timestamp,
        sent_by or (forked and forked.sessionId) or own or session_id,
        record.cwd or project,
        forked is not None or (bool(sent_by) and sent_by != own),
    )


def _line_kept(
    line: bytes | memoryview, *, session_id: str, project: str, path: str
) -> _Kept | None:
    """The response one line holds (newline or not; a view: a whole line with no NUL),
    or None: typed when it is one as the client writes it (:class:`_Record`), else as
    the skeleton reading does: if a scan keeps the line as an assistant record, its usage
    fields decoded and given to :func:`~sessiontree.catalog.usage.parse_response`, whose
    rules :func:`_typed_kept` follows."""
    if isinstance(line, memoryview):
        try:
            record = _record_decoder.decode(line[:-1])
        except LINE_ERRORS:
            line = bytes(line)
        else:
            return _typed_kept(record, session_id=session_id, project=project)
    end = len(line) - 1 if line.endswith(b"\n") else len(line)
    if line.find(b"\x00", 0, end) < 0:
        try:
            record = _record_decoder.decode(memoryview(line)[:end])
        except LINE_ERRORS:
            pass
        else:
            return _typed_kept(record, session_id=session_id, project=project)
    skeleton = skeleton_of(line)
    if skeleton is None or skeleton.type != "assistant":
        return None
    raw = decode_as(line, UsageFields)
    if raw is None:
        return None
    response = parse_response(raw, session_id=session_id, project=project, path=path)
    return None if response is None else _kept(response)


def line_response(line: bytes, *, session_id: str, project: str, path: str) -> Response | None:
    """The response one line holds (newline or not), or None (:func:`_line_kept`)."""
    kept = _line_kept(line, session_id=session_id, project=project, path=path)
    return None if kept is None else _response(kept, path)


class FileResponses(msgspec.Struct, gc=False):
    """What :func:`read_file_responses` found: the responses of whole lines, in the
    records' order (not merged: :func:`~sessiontree.catalog.usage.merge_response`), where
    those lines end (a later read picks up there), and the response of a last line that
    has no newline yet (a write in progress, read again next time)."""

    whole: list[_Kept]
    end: int
    unfinished: list[_Kept]


def read_file_responses(fd: int, path: Path, start: int = 0) -> FileResponses:
    """The responses of the transcript open at ``fd`` from ``start`` (a line start)."""
    session_id, project, where = session_of(path), project_of(path), str(path)
    found = FileResponses([], start, [])
    lines = CandidateLines(fd, start)
    for line in lines:
        kept = _line_kept(line, session_id=session_id, project=project, path=where)
        if kept is None:
            continue
        whole = isinstance(line, memoryview) or line.endswith(b"\n")
        (found.whole if whole else found.unfinished).append(kept)
    found.end = lines.end
    return found


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


# --- the cache -----------------------------------------------------------------------


class _FileEntry(msgspec.Struct, array_like=True):
    mark: FileMark
    responses: list[_Kept]


class _CacheFile(msgspec.Struct):
    format: int
    files: dict[str, _FileEntry]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_CacheFile)


class _FileRead(msgspec.Struct, array_like=True, gc=False):
    """What reading one transcript gave (:func:`_read_file`), in a form a forked reader
    can send: ``unchanged``, the file is as the cache's entry says (nothing read); else
    ``whole``, the responses of its whole lines from ``start``, which follow the entry's
    own when ``start`` is not 0 (the file only grew), ``unfinished`` those of a last line
    with no newline yet, and ``mark`` what the cache is to keep (None without a cache).
    ``problem``: the file could not be opened or read."""

    unchanged: bool = False
    start: int = 0
    whole: list[_Kept] = []
    unfinished: list[_Kept] = []
    mark: FileMark | None = None
    problem: Problem | None = None


def _read_file(path: Path, entry: _FileEntry | None, *, marked: bool) -> _FileRead:
    """Read the transcript at ``path`` past what ``entry`` (the cache's, if any) says
    was read; ``marked``: with the mark a cache keeps (only a cache needs its digests).
    Raises :class:`OSError` when it cannot be opened or read."""
    with path.open("rb", buffering=0) as handle:
        fd = handle.fileno()
        st = os.fstat(fd)
        if entry is not None and entry.mark.unchanged(st) and entry.mark.end == st.st_size:
            return _FileRead(unchanged=True)
        start = 0
        if entry is not None and entry.mark.only_grew(st, fd):
            start = entry.mark.end
        found = read_file_responses(fd, path, start)
        mark = None
        if marked and entry is not None and start:
            mark = entry.mark.grown_to(fd, st, found.end)
        elif marked:
            mark = FileMark.of(fd, st, found.end, CHECK_BYTES)
        return _FileRead(False, start, found.whole, found.unfinished, mark)


def _read_one(path: Path, entry: _FileEntry | None, *, marked: bool) -> _FileRead:
    """:func:`_read_file`, a file that cannot be opened or read its ``problem``."""
    try:
        return _read_file(path, entry, marked=marked)
    except OSError as exc:  # gone or unreadable since it was listed
        return _FileRead(problem=read_failed(path, exc))


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

    def entry(self, path: Path) -> _FileEntry | None:
        """What the cache keeps of the transcript at ``path``, if anything."""
        return self._entries().get(os.path.abspath(path))

    def responses(self, path: Path) -> list[Response]:
        """The responses of the transcript at ``path`` (:func:`read_file_responses`),
        read only from where the cache stopped when the file only grew since; raises
        :class:`OSError` when it cannot be opened or read."""
        here = str(path)
        found = self.take(path, _read_file(path, self.entry(path), marked=True))
        return [_response(k, here) for k in found]

    def take(self, path: Path, read: _FileRead) -> list[_Kept]:
        """The responses of the transcript at ``path`` that ``read`` found (with this
        cache's entry of it, as it was when read), in the records' order; the entry kept
        in step."""
        entries = self._entries()
        absolute = os.path.abspath(path)
        entry = entries.get(absolute)
        if read.unchanged:
            assert entry is not None  # (an unchanged file is one the cache has)
            return entry.responses
        kept = entry.responses if entry is not None and read.start else []
        assert read.mark is not None  # (a read for a cache is marked)
        whole = [*kept, *read.whole]
        entries[absolute] = _FileEntry(read.mark, whole)
        self._changed = True
        return [*whole, *read.unfinished] if read.unfinished else whole

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
        try:
            data = _encoder.encode(_CacheFile(FORMAT, self._files))
        except OverflowError:  # a count past what msgpack holds: that file is not kept
            self._files = {
                path: entry
                for path, entry in self._files.items()
                if all(_keepable(kept) for kept in entry.responses)
            }
            data = _encoder.encode(_CacheFile(FORMAT, self._files))
        with contextlib.suppress(OSError, SessionTreeError):
            write_atomically(self.file, [data], mode=0o600, fsync=False, folder_mode=0o700)
        self._changed = False


def _keepable(kept: _Kept) -> bool:
    """Whether msgpack holds the counts of ``kept`` (up to 2**64 - 1: no client writes
    more, but a line read as the skeleton reading reads it may say so)."""
    counts = (kept.input, kept.output, kept.cache_write, kept.cache_write_1h, kept.cache_read)
    return max(counts) < 2**64


def file_responses(path: Path, cache: UsageCache | None = None) -> list[Response]:
    """The responses of the transcript at ``path`` in the records' order, through
    ``cache`` when given; raises :class:`OSError` when it cannot be opened or read."""
    if cache is not None:
        return cache.responses(path)
    with path.open("rb", buffering=0) as handle:
        found = read_file_responses(handle.fileno(), path)
    here = str(path)
    return [_response(k, here) for k in (*found.whole, *found.unfinished)]


# --- reading many files --------------------------------------------------------------

#: Bytes left to read from which a read with ``cores`` above 1 splits the files between
#: two processes. The fork, sending the responses back and merging them cost a few
#: milliseconds: on the bench archive's files, 32 MB took 25 ms on one core and 20 on
#: two, 64 MB 49 and 38, 128 MB 98 and 70.
SPLIT_AT = 32 * 1024 * 1024

#: The least a forked child is given to read, as a part of :data:`SPLIT_AT`: less does
#: not pay for the fork and for sending its responses back.
LEAST_PART = 4


def read_responses(
    paths: Iterable[Path],
    *,
    cache: UsageCache | None = None,
    advance: Callable[[], None] | None = None,
    problems: list[Problem] | None = None,
    cores: int = 1,
) -> dict[str, Response]:
    """Every response in ``paths``, each once
    (:func:`~sessiontree.catalog.usage.merge_response`), read as
    :func:`read_file_responses` reads them: only the lines that hold usage are decoded,
    no skeleton is scanned (through ``cache`` when given, saved at the end); ``advance``
    is called after each file. A file gone or unreadable since it was listed counts
    nothing: an ``unreadable`` problem added to ``problems``.

    ``cores`` above 1 lets a big read (:data:`SPLIT_AT` bytes or more to read) be split:
    a forked child reads the later files while this process reads the first ones, then
    this process takes the child's reads as if it had made them, in the same order (if
    the child fails, it reads those files itself). The result is the same."""
    files = list(paths)
    marked = cache is not None
    entry = _no_entry if cache is None else cache.entry
    split = len(files)
    if cores > 1 and may_fork():
        split = _split_at(files, entry)
    later = None
    if split < len(files):
        part = files[split:]
        later = fork_output(lambda: [_part_encoder.encode(_read_part(part, entry, marked))])
    if later is None:
        split = len(files)
    seen: dict[str, Response] = {}
    try:
        for path in files[:split]:
            _take(seen, path, _read_one(path, entry(path), marked=marked), cache, problems)
            if advance is not None:
                advance()
        reads = _received(later, len(files) - split)
    finally:
        if later is not None:
            later.close()
    for at, path in enumerate(files[split:]):
        read = reads[at] if reads is not None else _read_one(path, entry(path), marked=marked)
        _take(seen, path, read, cache, problems)
        if advance is not None:
            advance()
    if cache is not None:
        cache.save()
    return seen


def _no_entry(_path: Path) -> _FileEntry | None:
    return None


def _take(
    seen: dict[str, Response],
    path: Path,
    read: _FileRead,
    cache: UsageCache | None,
    problems: list[Problem] | None,
) -> None:
    """Merge the responses ``read`` found in the transcript at ``path`` into ``seen``."""
    if read.problem is not None:
        if problems is not None:
            problems.append(read.problem)
        return
    found = [*read.whole, *read.unfinished] if cache is None else cache.take(path, read)
    here = str(path)
    for kept in found:
        _merge_kept(seen, kept, here)


def _merge_kept(seen: dict[str, Response], kept: _Kept, path: str) -> None:
    """:func:`~sessiontree.catalog.usage.merge_response` of a response as read (of the
    transcript at ``path``), made a :class:`Response` only when its key is new."""
    known = seen.get(kept.key)
    if known is None:
        seen[kept.key] = _response(kept, path)
        return
    tokens = known.tokens
    if kept.input > tokens.input:
        tokens.input = kept.input
    if kept.output > tokens.output:
        tokens.output = kept.output
    if kept.cache_write > tokens.cache_write:
        tokens.cache_write = kept.cache_write
    if kept.cache_write_1h > tokens.cache_write_1h:
        tokens.cache_write_1h = kept.cache_write_1h
    if kept.cache_read > tokens.cache_read:
        tokens.cache_read = kept.cache_read
    if known.model is None:
        known.model = kept.model
    if (kept.timestamp or "\uffff", kept.copied, path) < known.rank:
        known.timestamp, known.session_id = kept.timestamp, kept.session_id
        known.project, known.path, known.copied = kept.project, path, kept.copied


def _split_at(files: list[Path], entry: Callable[[Path], _FileEntry | None]) -> int:
    """Where the files a forked child reads begin (``len(files)``: none): the later ones,
    as near half of the bytes to read as the files allow (half was quickest on the bench
    archive: the child pays for the fork and for sending, this process for merging),
    when there are :data:`SPLIT_AT` or more (as the files' sizes and the cache say now:
    an estimate), each part no less than a :data:`LEAST_PART` of that, and the
    files are distinct."""
    if len(set(files)) != len(files):
        return len(files)  # (a file read twice: its first read changes its entry)
    left: list[int] = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            left.append(0)
            continue
        known = entry(path)
        done = 0
        if known is not None and (st.st_dev, st.st_ino) == (known.mark.device, known.mark.inode):
            done = min(known.mark.end, st.st_size)
        left.append(st.st_size - done)
    total = sum(left)
    if total < SPLIT_AT:
        return len(files)
    split, child, best = len(files), 0, total  # (best: the most either process reads)
    for at in range(len(files) - 1, 0, -1):
        child += left[at]
        if max(child, total - child) < best:
            split, best = at, max(child, total - child)
        if child >= total - child:
            break  # (more to the child from here on)
    return split if total - best >= SPLIT_AT / LEAST_PART else len(files)


def _read_part(
    files: list[Path], entry: Callable[[Path], _FileEntry | None], marked: bool
) -> list[_FileRead]:
    """In the forked child: :func:`_read_one` of each file."""
    return [_read_one(path, entry(path), marked=marked) for path in files]


_part_encoder = msgspec.msgpack.Encoder()
_part_decoder = msgspec.msgpack.Decoder(list[_FileRead])


def _received(later: ForkedOutput | None, count: int) -> list[_FileRead] | None:
    """The ``count`` reads the forked child sent; None if there is no child, or it
    failed (then this process reads its files itself)."""
    if later is None:
        return None
    with contextlib.suppress(ChildFailed, msgspec.DecodeError):
        reads = _part_decoder.decode(b"".join(later.pieces()))
        if len(reads) == count:
            return reads
    return None


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
