"""JSON Lines on disk: phase two of reading, and the locked, append-only writer.

Phase one, the skeleton scan, is :mod:`sessiontree.storage.scan` (its names are also here,
as they always were). Phase two, :func:`read_records` and :func:`iter_path_records`, seeks
to the lines a command needs and decodes them whole, or only the fields a pass reads. A
bad line never stops a read: it becomes a :class:`~sessiontree.model.records.Problem`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import msgspec

from sessiontree.errors import Refused
from sessiontree.model.records import (
    ContextFields,
    FactFields,
    Line,
    Problem,
    ProblemKind,
    Record,
    fields_as_dict,
)
from sessiontree.storage.scan import BLOCK as BLOCK
from sessiontree.storage.scan import LINE_ERRORS as LINE_ERRORS
from sessiontree.storage.scan import LONE_SURROGATE
from sessiontree.storage.scan import PRESENT as PRESENT
from sessiontree.storage.scan import LineSink as LineSink
from sessiontree.storage.scan import Scan as Scan
from sessiontree.storage.scan import parse_line as parse_line
from sessiontree.storage.scan import parse_line_leniently as parse_line_leniently
from sessiontree.storage.scan import scan_handle as scan_handle
from sessiontree.storage.scan import scan_range as scan_range
from sessiontree.storage.scan import scan_transcript as scan_transcript

_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


@runtime_checkable
class LineSource(Protocol):
    """Lines phase two reads from somewhere other than a local file (a transcript in the
    store): each line's exact bytes, given its place from phase one."""

    @property
    def name(self) -> str:
        """The path its problems name (where the file is, or was, on its machine)."""
        ...

    def line_bytes(self, lines: Sequence[Line]) -> Iterator[bytes]:
        """The bytes of ``lines`` (newline included), in the order given."""
        ...


def repair_text(body: bytes) -> bytes:
    """Make a line msgspec can decode without losing it: lone surrogate escapes become
    U+FFFD, invalid UTF-8 bytes become U+FFFD. Only called after a decode failed."""
    body = LONE_SURROGATE.sub(rb"\\ufffd", body)
    return body.decode("utf-8", errors="replace").encode("utf-8")


def _fallback_decode(body: bytes) -> Any:
    """The stdlib's reading of a line msgspec refused: it takes numbers out of a double's
    range (``1e999`` becomes ``inf``), after the repairs of :func:`repair_text`."""
    import json  # (here: only a line msgspec refused needs it)

    try:
        return json.loads(repair_text(body))
    except (ValueError, RecursionError):
        return None


def _decode_record(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The record on a line, and the problem kind if it had to be repaired to be read
    (``bad-utf8``: text replaced by U+FFFD; ``bad-number``: read by the fallback decoder)."""
    # A view, not a copy, unless NUL bytes must go: a line may be tens of megabytes.
    end = len(raw) - 1 if raw.endswith(b"\n") else len(raw)
    body: bytes | memoryview = memoryview(raw)[:end]
    if b"\x00" in raw:
        body = bytes(body).replace(b"\x00", b"")
    repaired: str | None = None
    try:
        value = _any_decoder.decode(body)
    except RecursionError:
        return None, None
    except msgspec.DecodeError:
        try:
            value = _any_decoder.decode(repair_text(bytes(body)))
            repaired = "bad-utf8"
        except RecursionError:
            return None, None
        except msgspec.DecodeError:
            # A line the skeleton scan kept must not vanish here: 1e999 is valid JSON
            # that msgspec refuses ("Number out of range") only when it decodes the field.
            value = _fallback_decode(bytes(body))
            if value is None:
                return None, None
            repaired = "bad-number"
    return (value if isinstance(value, dict) else None), repaired


_REPAIRED = {
    "bad-utf8": "invalid text replaced by U+FFFD",
    "bad-number": "a number out of range (such as 1e999) read as infinity",
}


def read_records(
    path: Path | LineSource, lines: Iterable[Line], problems: list[Problem] | None = None
) -> list[Record]:
    """Phase two: decode whole records for ``lines``, in the order given.

    A line the skeleton scan kept always comes back: invalid UTF-8 in fields the scan
    skipped is replaced (U+FFFD) and, with ``problems``, reported as ``bad-utf8``; a
    number out of a double's range is read as infinity and reported as ``bad-number``.
    """
    wanted = list(lines)
    out: dict[int, Record] = {}
    ordered = sorted(wanted, key=lambda ln: ln.offset)
    for line, data in zip(ordered, _line_bytes(path, ordered), strict=True):
        raw, repaired = _decode_record(data)
        if raw is None:
            continue
        out[line.offset] = Record(raw, line.number)
        if repaired is not None and problems is not None:
            kind: ProblemKind = "bad-number" if repaired == "bad-number" else "bad-utf8"
            problems.append(Problem(kind, _name(path), line.number, _REPAIRED[kind]))
    return [out[line.offset] for line in wanted if line.offset in out]


def _name(path: Path | LineSource) -> str:
    return path.name if isinstance(path, LineSource) else str(path)


def _line_bytes(path: Path | LineSource, lines: Sequence[Line]) -> Iterator[bytes]:
    """The bytes of ``lines`` in the order given, read one by one (few, scattered lines)."""
    if isinstance(path, LineSource):
        yield from path.line_bytes(lines)
        return
    with path.open("rb") as handle:
        for line in lines:
            handle.seek(line.offset)
            yield handle.read(line.length)


_field_decoders: dict[object, msgspec.json.Decoder[Any]] = {}


def _decoder_for(fields: object) -> msgspec.json.Decoder[Any]:
    decoder = _field_decoders.get(fields)
    if decoder is None:
        decoder = _field_decoders[fields] = msgspec.json.Decoder(fields)
    return decoder


def decode_as(line: bytes, fields: type[msgspec.Struct]) -> dict[str, Any] | None:
    """The record on one line (newline or not) as :func:`iter_path_records` reads it
    with ``fields``: only those fields when the line decodes as them, else the whole
    record as :func:`read_records` reads it (repairs not reported); None when the line
    holds no record."""
    end = len(line) - 1 if line.endswith(b"\n") else len(line)
    if line.find(b"\x00", 0, end) < 0:
        try:
            return fields_as_dict(_decoder_for(fields).decode(memoryview(line)[:end]))
        except LINE_ERRORS:
            pass
    return _decode_record(line)[0]


def iter_path_records(
    path: Path | LineSource,
    lines: Iterable[Line],
    *,
    fields: type[FactFields] | type[ContextFields] | type[msgspec.Struct] | None = None,
    problems: list[Problem] | None = None,
    read_ahead: bool = True,
) -> Iterator[Record]:
    """Phase two, streamed: the records of ``lines`` in the order given, one line in
    memory at a time (:func:`read_records` holds them all). ``read_ahead``: read on from
    a line (a path's next lines come out of the same read); without it, each line alone
    (a few lines scattered over a file).

    With ``fields``, a record holds only those of its fields
    (:func:`~sessiontree.model.records.fields_as_dict`) when its line decodes as them; a
    line that does not (damage, another shape) comes back whole, read as
    :func:`read_records` reads it, which reports repairs in ``problems`` (a line that
    decodes as ``fields`` is not checked for damage in the fields it skips)."""
    decoder = None if fields is None else _decoder_for(fields)
    if isinstance(path, LineSource):
        yield from _iter_source_records(path, lines, decoder, problems)
        return
    with path.open("rb", buffering=0) as handle:
        fd = handle.fileno()
        block, start = b"", 0  # the bytes last read, and where in the file they begin
        wanted = read = 0  # bytes of the lines so far, bytes read for them
        for line in lines:
            wanted += line.length
            at = line.offset - start
            if at < 0 or at + line.length > len(block):
                # Read on from this line: a path mostly runs forward through the file, so
                # its lines come out of a few big reads, not one read each. A path that
                # jumps about (never seen) is read line by line once reading ahead has
                # cost more than twice what it found.
                ahead = read_ahead and read <= 2 * wanted + BLOCK
                size = max(BLOCK, line.length) if ahead else line.length
                block = b""  # let the old block go before the next is read
                block, start, at = os.pread(fd, size, line.offset), line.offset, 0
                read += len(block)
            end = at + line.length
            if end > at and block[end - 1 : end] == b"\n":
                end -= 1
            if decoder is not None and block.find(b"\x00", at, end) < 0:
                try:
                    value = decoder.decode(memoryview(block)[at:end])
                except LINE_ERRORS:
                    pass
                else:
                    yield Record(fields_as_dict(value), line.number)
                    continue
            record, repaired = _decode_record(block[at : at + line.length])
            if record is None:
                continue
            if repaired is not None and problems is not None:
                kind: ProblemKind = "bad-number" if repaired == "bad-number" else "bad-utf8"
                problems.append(Problem(kind, str(path), line.number, _REPAIRED[kind]))
            yield Record(record, line.number)


def _iter_source_records(
    source: LineSource,
    lines: Iterable[Line],
    decoder: msgspec.json.Decoder[Any] | None,
    problems: list[Problem] | None,
) -> Iterator[Record]:
    """:func:`iter_path_records` of lines a :class:`LineSource` gives, decoded alike."""
    wanted = list(lines)
    for line, data in zip(wanted, source.line_bytes(wanted), strict=True):
        end = len(data) - 1 if data.endswith(b"\n") else len(data)
        if decoder is not None and data.find(b"\x00", 0, end) < 0:
            try:
                value = decoder.decode(memoryview(data)[:end])
            except LINE_ERRORS:
                pass
            else:
                yield Record(fields_as_dict(value), line.number)
                continue
        record, repaired = _decode_record(data)
        if record is None:
            continue
        if repaired is not None and problems is not None:
            kind: ProblemKind = "bad-number" if repaired == "bad-number" else "bad-utf8"
            problems.append(Problem(kind, source.name, line.number, _REPAIRED[kind]))
        yield Record(record, line.number)


def decode_record(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The record on one line's bytes (None: not a JSON object), and the repair it needed
    to be read (``bad-utf8``, ``bad-number``), as phase two reads lines."""
    return _decode_record(raw)


def iter_records(path: Path) -> Iterator[Record]:
    """Every decodable record of a JSON Lines file, streamed (bad lines skipped)."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            value, _ = _decode_record(raw)
            if value is not None:
                yield Record(value, number)


def iter_raw_lines(path: Path | LineSource, lines: Iterable[Line]) -> Iterator[bytes]:
    """The stored bytes of ``lines`` (newline stripped), for splicing without re-encoding."""
    for data in _line_bytes(path, list(lines)):
        yield data.rstrip(b"\n")


def read_tail(path: Path, max_bytes: int) -> list[bytes]:
    """Whole lines in the last ``max_bytes`` of a file (the first, partial one dropped)."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        start = max(0, size - max_bytes)
        handle.seek(start)
        data = handle.read()
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]
    return [ln for ln in lines if ln.strip()]


def read_head(path: Path, max_bytes: int) -> list[bytes]:
    """Whole lines in the first ``max_bytes`` of a file (a cut last line dropped)."""
    with path.open("rb") as handle:
        data = handle.read(max_bytes)
    lines = data.split(b"\n")
    if len(data) == max_bytes:
        lines = lines[:-1]
    return [ln for ln in lines if ln.strip()]


def format_line(record: dict[str, Any]) -> bytes:
    """Encode one record as a transcript line (compact JSON, one trailing newline)."""
    body = _encoder.encode(record)
    if b"\n" in body:  # cannot happen with JSON, but a line must never be split
        raise Refused("a record encoded with an embedded newline")
    return body + b"\n"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[int]:
    """Hold an exclusive ``flock`` on ``path`` (created 0600 if missing) for appending.

    Every sessiontree writer takes this lock, so two of them never interleave lines.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)  # read: the tail check
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def _ends_with_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    if size == 0:
        return True
    return os.pread(fd, 1, size - 1) == b"\n"


def append_records(path: Path, records: Sequence[dict[str, Any]], *, fsync: bool = False) -> None:
    """Append whole lines under the file's lock; repair a torn tail by starting a new line."""
    append_lines(path, [format_line(r) for r in records], fsync=fsync)


def append_lines(path: Path, lines: Sequence[bytes], *, fsync: bool = False) -> None:
    """Append ``lines`` (each whole, its newline included) under the file's lock; a torn
    tail is repaired by starting a new line."""
    payload = b"".join(lines)
    with locked(path) as fd:
        if not _ends_with_newline(fd):
            # A crash left half a line: never glue our first record onto it.
            payload = b"\n" + payload
        view = memoryview(payload)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if fsync:
            os.fsync(fd)
