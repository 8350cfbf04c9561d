"""Reading a transcript tail first: its last compaction's tail, then its head folded.

A resume of a compacted transcript needs its tail (:mod:`sessiontree.model.tail`) and a
few facts about the rest. :func:`read_tail_first` finds the last compact boundary from the
end of the file, scans the tail from it, finds the preserved records just before it,
then reads the head (everything before the boundary) without keeping its lines: a
:class:`~sessiontree.model.tail.HeadReading` keeps the uuids and the few notes the
resume needs, on two cores when allowed. What it holds grows with the tail, not the file.

The result is a scan of the tail's lines (the preserved ones, then the boundary and every
line after it), numbered as a whole scan numbers them, and the tail's facts; whether the
tail answers alone is :func:`~sessiontree.model.tail.stands_alone`'s to say. Every line it
keeps was read by the whole scan's own scanner, so each is the line the whole scan would
give. It answers None (read the whole file) when the boundary is not near the end
(:data:`REACH`), when a line after it is also a boundary (written in a form the search
does not see), or when the head's reading is not exact.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import msgspec
from msgspec.structs import replace

from sessiontree.errors import DataError
from sessiontree.model.records import Line, Skeleton
from sessiontree.model.tail import HeadNames, HeadReading, Tail, is_boundary, preserved_lines
from sessiontree.storage.scan import LINE_ERRORS, Scan, parse_line, scan_range

#: How far back from the end the last compact boundary, and then the records it
#: preserved, are looked for; farther, the tail is no small part of the file.
REACH = 32 * 1024 * 1024

#: What a compact boundary's line holds (its ``subtype``), searched for from the end.
_BOUNDARY = b'"compact_boundary"'
_STEP = 1024 * 1024


class TailFirst(msgspec.Struct):
    """What :func:`read_tail_first` read: the tail's scan, the tail's facts (its
    ``start`` and ``kept`` index that scan's lines), and the head's names as
    collections (what ``tail`` holds joined)."""

    scan: Scan
    tail: Tail
    names: HeadNames


def read_tail_first(path: Path, *, cores: int = 1, reach: int = REACH) -> TailFirst | None:
    """The tail of the transcript at ``path`` and what its head leaves, read tail first
    (see the module docstring); None when the whole file must be read instead. Raises
    :class:`~sessiontree.errors.DataError` when the file cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise DataError(str(path), exc.strerror or "cannot open") from exc
    try:
        return _read(fd, path, cores=cores, reach=reach)
    finally:
        os.close(fd)


def _read(fd: int, path: Path, *, cores: int, reach: int) -> TailFirst | None:
    size = os.fstat(fd).st_size
    found = _last_boundary(fd, size, max(0, size - reach))
    if found is None:
        return None
    start, boundary = found
    tail = scan_range(fd, path, start=start)  # numbered from 0: renumbered below
    if not tail.lines or tail.lines[0].offset != start:
        return None
    if any(line.skeleton is not None and is_boundary(line.skeleton) for line in tail.lines[1:]):
        return None  # a later boundary the search did not see
    kept = preserved_lines(boundary, _lines_before(fd, start, max(0, size - reach)))
    reading = HeadReading.before(boundary, frozenset(line.offset for line in kept))
    head = scan_range(fd, path, stop=start, sink=reading, cores=cores)
    base = head.resume_number  # the lines before the boundary
    lines = [
        *reading.kept,
        *(Line(ln.number + base, ln.offset, ln.length, ln.skeleton) for ln in tail.lines),
    ]
    names = reading.names()
    facts = reading.tail(len(reading.kept), tuple(range(len(reading.kept))), names)
    if facts is None:
        return None
    problems = [
        *head.problems,
        *(p if p.line is None else replace(p, line=p.line + base) for p in tail.problems),
    ]
    scan = Scan(
        path=path,
        size=tail.size,
        lines=lines,
        problems=problems,
        resume_offset=tail.resume_offset,
        resume_number=tail.resume_number + base,
    )
    return TailFirst(scan, facts, names)


def _last_boundary(fd: int, size: int, floor: int) -> tuple[int, Skeleton] | None:
    """The offset and skeleton of the last line starting at or after ``floor`` that holds
    :data:`_BOUNDARY` and decodes as a compact boundary, searched from the end."""
    end = size  # matches starting before here are left to look at
    while end > floor:
        begin = max(floor, end - _STEP)
        block = os.pread(fd, min(size, end + len(_BOUNDARY) - 1) - begin, begin)
        hit = block.rfind(_BOUNDARY, 0, end - begin + len(_BOUNDARY) - 1)
        next_end = begin
        while hit >= 0:
            line_start, body = _line_around(fd, begin + hit, size)
            if line_start < floor:
                return None
            skeleton = _skeleton(body)
            if skeleton is not None and is_boundary(skeleton):
                return line_start, skeleton
            if line_start <= begin:  # the rest of this block is that same line
                next_end = line_start
                break
            hit = block.rfind(_BOUNDARY, 0, line_start - begin)
        end = next_end
    return None


def _skeleton(body: bytes) -> Skeleton | None:
    try:
        return parse_line(body)
    except LINE_ERRORS:
        return None


def _line_around(fd: int, at: int, size: int) -> tuple[int, bytes]:
    """The line holding byte ``at``: its start and its bytes (without the newline)."""
    start = at
    while start > 0:
        step = min(_STEP, start)
        chunk = os.pread(fd, step, start - step)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            start = start - step + newline + 1
            break
        start -= step
    pieces = [os.pread(fd, at - start, start)]
    position = at
    while position < size:
        chunk = os.pread(fd, _STEP, position)
        if not chunk:
            break
        newline = chunk.find(b"\n")
        if newline >= 0:
            pieces.append(chunk[:newline])
            break
        pieces.append(chunk)
        position += len(chunk)
    return start, b"".join(pieces)


def _lines_before(fd: int, end: int, floor: int) -> Iterator[Line]:
    """The whole lines before ``end`` (a line start), from the nearest back, those that
    start at or after ``floor``; each with its offset, length and skeleton (None for a
    line that does not decode; its number, unknown here, is 0)."""
    pending = b""  # the bytes from the current block's end to the last line start yielded
    position = end
    while position > floor:
        begin = max(floor, position - _STEP)
        data = os.pread(fd, position - begin, begin) + pending
        first = data.find(b"\n")  # data ends with a newline: the end of a whole line
        whole_from = first + 1 if begin > 0 else 0  # at the file's start, a line starts
        rest = data[whole_from:]
        offset = begin + whole_from + len(rest)
        for body in reversed(rest.split(b"\n")[:-1]):
            offset -= len(body) + 1
            yield Line(0, offset, len(body) + 1, _skeleton(body))
        pending = data[:whole_from]
        position = begin
        if begin == floor and begin > 0:
            return  # the line straddling the floor is not read
