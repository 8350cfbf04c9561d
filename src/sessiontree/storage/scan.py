"""Phase one of reading a transcript: the skeleton scan.

:func:`scan_transcript` reads every line once, in blocks, and decodes only its
:class:`~sessiontree.model.records.Skeleton`, keeping each line's byte offset (phase two,
:func:`~sessiontree.storage.jsonl.read_records`, seeks to the lines a command needs). A bad
line never stops it: it becomes a :class:`~sessiontree.model.records.Problem`.
:func:`scan_range` scans part of a file, into a list or a :class:`LineSink`, on two cores
when the caller allows and the part is big (a forked child scans the later half).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, Protocol, cast, runtime_checkable

import msgspec
from msgspec.structs import replace

from sessiontree.errors import DataError
from sessiontree.model.records import (
    CONTENT_UNREAD,
    BlockRef,
    Line,
    MessageSkeleton,
    Problem,
    Skeleton,
    TreeFields,
)
from sessiontree.storage.forked import may_fork

_skeleton_decoder = msgspec.json.Decoder(Skeleton)


class _BareMessage(msgspec.Struct):
    id: str | None = None


#: A skeleton that does not read ``message.content`` (every other field as the skeleton
#: reads it): for a line whose content the skeleton cannot decode (a string of invalid
#: UTF-8, which the record's reader repairs), and for the lines a :class:`LineFold` takes.
_BareSkeleton = msgspec.defstruct(
    "_BareSkeleton",
    [
        (f.name, _BareMessage | None if f.name == "message" else f.type, f.default)
        for f in msgspec.structs.fields(Skeleton)
    ],
    gc=False,
)
_bare_decoder = msgspec.json.Decoder(_BareSkeleton)
#: Its decode, typed as what it gives: the fields a skeleton has but ``message.content``.
_decode_bare = cast("Callable[[bytes | memoryview], TreeFields]", _bare_decoder.decode)
_any_decoder = msgspec.json.Decoder()

# A \uD800-\uDBFF escape not followed by a low one, or a \uDC00-\uDFFF not preceded by
# a high one. JavaScript writes these when it cuts a string inside an emoji (the client
# cuts lastPrompt and tool output); they are valid JSON that msgspec refuses.
LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


class Scan(msgspec.Struct):
    """Phase one of reading a transcript: every line's place and skeleton.

    ``resume_offset`` and ``resume_number`` say where a later scan of the same file, grown
    since, picks up (:func:`scan_handle`'s ``start``): just past the last line that ended
    in a newline, and how many lines came before that point. A torn last line is after it,
    so it is read again, whole or still torn.
    """

    path: Path
    size: int
    lines: list[Line] = msgspec.field(default_factory=list)
    problems: list[Problem] = msgspec.field(default_factory=list)
    resume_offset: int = 0
    resume_number: int = 0


def _classify(body: bytes, exc: Exception, *, last: bool, ends_with_newline: bool) -> str:
    if isinstance(exc, RecursionError):
        return "too-deep"
    if last and not ends_with_newline:
        return "torn-line"
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return "bad-utf8"
    if isinstance(exc, msgspec.ValidationError):
        return "bad-shape"
    return "bad-json"


#: Read size of the skeleton scan. Lines are found in blocks and decoded from memoryview
#: slices: no per-line read call and no copy (measured: 0.05 s to read 200 MB in blocks
#: against 0.18-0.3 s line by line).
BLOCK = 4 * 1024 * 1024

#: Stands in for a decoded ``toolUseResult``: a ``Raw`` keeps its whole source buffer
#: alive, and the tree only needs to know the field is there. One byte, msgpack's
#: ``true``, so that the skeleton cache writes a skeleton as it is (an absent field is
#: the empty default, which it leaves out).
PRESENT = msgspec.Raw(b"\xc3")


#: What decoding one line may raise: bad JSON, a wrong shape, or nesting deeper than the
#: interpreter's recursion limit (msgspec raises ``RecursionError`` for a line of ten
#: thousand ``[``: a damaged line, not a reason to stop reading the file).
LINE_ERRORS = (msgspec.DecodeError, RecursionError)


def parse_line(body: bytes | memoryview) -> Skeleton:
    """Decode a line's skeleton; raises one of :data:`LINE_ERRORS`."""
    skeleton = _skeleton_decoder.decode(body)
    if skeleton.toolUseResult:
        skeleton.toolUseResult = PRESENT
    message = skeleton.message
    if message is not None and message.content.__class__ is str:
        message.content = ""  # a prompt's text is not kept: it holds no block
    return skeleton


def parse_line_bare(body: bytes | memoryview) -> Skeleton:
    """:func:`parse_line` without reading ``message.content`` (marked
    :data:`~sessiontree.model.records.CONTENT_UNREAD`); raises one of :data:`LINE_ERRORS`."""
    fields = msgspec.structs.asdict(_bare_decoder.decode(body))
    message = fields["message"]
    if message is not None:
        fields["message"] = MessageSkeleton(id=message.id, content=CONTENT_UNREAD)
    if fields["toolUseResult"]:
        fields["toolUseResult"] = PRESENT
    return Skeleton(**fields)


def block_refs(content: Any) -> list[BlockRef] | str | None:
    """:attr:`MessageSkeleton.content` of a decoded ``message.content``: the blocks that
    are objects (the others are damage a record's reader leaves out too)."""
    if isinstance(content, str):
        return ""
    if not isinstance(content, list):
        return None
    return [
        BlockRef(**{name: block[name] for name in _BLOCK_FIELDS if name in block})
        for block in content
        if isinstance(block, dict)
    ]


_BLOCK_FIELDS = ("type", "id", "tool_use_id")


#: Fields without which a line cannot take its place in the tree: of the wrong type, the
#: line is a ``bad-shape`` problem and is not kept.
_IDENTITY = frozenset({"type", "uuid", "parentUuid"})


def parse_line_leniently(body: bytes) -> tuple[Skeleton, list[str]] | None:
    """The skeleton of a line whose fields msgspec refused, each field of the wrong type
    read as absent, and the names of those fields; None when the line is no object or
    its type, uuid or parentUuid is of the wrong type. Only called after a decode failed
    (it decodes the whole line)."""
    try:
        value = _any_decoder.decode(body)
    except (*LINE_ERRORS, UnicodeDecodeError):
        return None
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = {}
    wrong: list[str] = []
    for info in msgspec.structs.fields(Skeleton):
        if info.encode_name not in value:
            continue
        field_value = value[info.encode_name]
        if info.name == "toolUseResult":
            kept[info.name] = PRESENT  # only its presence counts
            continue
        if info.name == "message" and isinstance(field_value, dict):
            # blocks of an odd shape are left out, not the message (its id counts)
            field_value = {k: v for k, v in field_value.items() if k != "content"}
            try:
                message = msgspec.convert(field_value, MessageSkeleton)
            except msgspec.ValidationError:
                wrong.append(info.encode_name)
                continue
            message.content = block_refs(value[info.encode_name].get("content"))
            kept[info.name] = message
            continue
        try:
            kept[info.name] = msgspec.convert(field_value, info.type)
        except msgspec.ValidationError:
            if info.name in _IDENTITY:
                return None
            wrong.append(info.encode_name)
    return Skeleton(**kept), wrong


class _Scanner:
    """Turns lines into :class:`Line` entries and problems, numbering them as it goes.

    :meth:`block` is the hot path: every whole line of a block, decoded from a memoryview
    slice. :meth:`line` handles one line the careful way (NUL bytes, a line that ran past
    its block, any line whose decode failed).
    """

    def __init__(self, scan: Scan, sink: LineSink | None = None) -> None:
        self.scan = scan
        #: Where lines go: ``scan.lines``, or ``sink``.
        self.append: Callable[[Line], None] = scan.lines.append if sink is None else sink.append
        #: A sink that takes most lines bare (:class:`LineFold`), else None.
        self.fold = sink if isinstance(sink, LineFold) else None
        self.number = 0
        self.offset = 0
        self.previous: str | None = None  # the uuid of the last line read in a block

    def block(self, block: bytes, position: int) -> int:
        """Scan the whole lines of ``block`` from ``position``; return where the rest starts."""
        if b"\x00" in block:
            view = memoryview(block)
            while (newline := block.find(b"\n", position)) >= 0:
                self.line(view[position : newline + 1], has_nul=True)
                position = newline + 1
            return position
        if self.fold is not None:
            return self._fold_block(block, position, self.fold)
        decode = _skeleton_decoder.decode
        append = self.append
        find = block.find
        view = memoryview(block)
        number, offset, previous = self.number, self.offset, self.previous
        while (newline := find(b"\n", position)) >= 0:
            try:
                skeleton = decode(view[position:newline])
            except LINE_ERRORS:
                self.number, self.offset = number, offset
                self.line(view[position : newline + 1], has_nul=False)
                number, offset = self.number, self.offset
            else:
                number += 1
                if skeleton.toolUseResult:
                    skeleton.toolUseResult = PRESENT
                message = skeleton.message
                if message is not None and message.content.__class__ is str:
                    message.content = ""
                # Most lines hang on the line before, and a tool result names its call's
                # record twice: one string for each uuid, not three (a tenth of a scan).
                if skeleton.parentUuid is not None:
                    if skeleton.parentUuid == previous:
                        skeleton.parentUuid = previous
                    if skeleton.sourceToolAssistantUUID == skeleton.parentUuid:
                        skeleton.sourceToolAssistantUUID = skeleton.parentUuid
                if skeleton.uuid is not None:
                    previous = skeleton.uuid
                length = newline + 1 - position
                append(Line(number, offset, length, skeleton))
                offset += length
            position = newline + 1
        self.number, self.offset, self.previous = number, offset, previous
        return position

    def _fold_block(self, block: bytes, position: int, fold: LineFold) -> int:
        """:meth:`block` for a :class:`LineFold`: a line it keeps whole, or whose bare
        decode fails, goes the way of any line (its skeleton, or the careful
        :meth:`line`); every other line is decoded bare and given to ``fold.take``.

        The outcome is the whole scan's: a bare skeleton differs from a line's skeleton
        only in ``message.content``, which is skipped. A line whose skeleton fails only
        there (an odd shape, text the skeleton cannot read) is read by :meth:`line` with
        the same fields and no problem, so taking it bare changes nothing."""
        decode = _decode_bare
        take, kept = fold.take, fold.kept_offsets
        find = block.find
        view = memoryview(block)
        number, offset = self.number, self.offset
        while (newline := find(b"\n", position)) >= 0:
            length = newline + 1 - position
            if offset in kept:
                bare = None
            else:
                try:
                    bare = decode(view[position:newline])
                except LINE_ERRORS:
                    bare = None
            if bare is None:
                self.number, self.offset = number, offset
                self.line(view[position : newline + 1], has_nul=False)
                number, offset = self.number, self.offset
            else:
                number += 1
                offset += length
                take(bare)
            position = newline + 1
        self.number, self.offset = number, offset
        return position

    def line(self, raw: bytes | memoryview, *, has_nul: bool) -> None:
        self.number += 1
        start, length = self.offset, len(raw)
        self.offset += length
        ends_with_newline = raw[-1:] == b"\n"
        body: bytes | memoryview = memoryview(raw)[:-1] if ends_with_newline else raw
        if has_nul and b"\x00" in bytes(body):  # (``in`` on a memoryview tests one byte)
            stripped = bytes(body).replace(b"\x00", b"")
            count = len(body) - len(stripped)
            self._problem("nul-bytes", f"{count} NUL bytes")
            body = stripped
        try:
            skeleton = parse_line(body)
        except LINE_ERRORS as exc:
            data = bytes(body)
            if not data.strip():
                return  # a blank line: nothing lost
            if LONE_SURROGATE.search(data):
                try:
                    skeleton = parse_line(LONE_SURROGATE.sub(rb"\\ufffd", data))
                except LINE_ERRORS:
                    pass
                else:
                    self.append(Line(self.number, start, length, skeleton))
                    return
            if not isinstance(exc, msgspec.ValidationError):
                try:  # what could not be decoded may be text the skeleton need not read
                    skeleton = parse_line_bare(data)
                except LINE_ERRORS:
                    pass
                else:
                    self.append(Line(self.number, start, length, skeleton))
                    return
            if isinstance(exc, msgspec.ValidationError):
                lenient = parse_line_leniently(data)
                if lenient is not None:  # a wrong-typed field must not hide the record
                    skeleton, wrong = lenient
                    if wrong:  # (else only blocks of an odd shape, which readers skip)
                        detail = f"{', '.join(wrong)} of the wrong type: {exc}"
                        self._problem("bad-field", detail[:200])
                    self.append(Line(self.number, start, length, skeleton))
                    return
            last = self.offset >= self.scan.size
            kind = _classify(data, exc, last=last, ends_with_newline=ends_with_newline)
            self._problem(kind, str(exc)[:200])
            return
        self.append(Line(self.number, start, length, skeleton))

    def _problem(self, kind: str, detail: str) -> None:
        problem = Problem(kind, str(self.scan.path), self.number, detail)  # type: ignore[arg-type]
        self.scan.problems.append(problem)


def skeleton_of(raw: bytes) -> Skeleton | None:
    """The skeleton a scan keeps for the line ``raw`` (newline or not), with every repair
    it makes; None when a scan keeps no line for it (no object, its type, uuid or
    parentUuid of the wrong type, not JSON)."""
    scan = Scan(path=Path(), size=len(raw))
    _Scanner(scan, None).line(raw, has_nul=True)
    return scan.lines[0].skeleton if scan.lines else None


def scan_transcript(path: Path, *, cores: int = 1) -> Scan:
    """Read a transcript's skeleton: one pass in blocks, only tree fields decoded; on two
    cores when ``cores`` allows and the file is big (:func:`scan_handle`)."""
    try:
        handle = path.open("rb", buffering=0)
    except OSError as exc:
        raise DataError(str(path), exc.strerror or "cannot open") from exc
    with handle:
        return scan_handle(handle, path, cores=cores)


def scan_handle(handle: BinaryIO, path: Path, *, start: Scan | None = None, cores: int = 1) -> Scan:
    """:func:`scan_transcript` of an open file (``rb``; read by offset, its position is
    left alone). With ``start``, a scan of this very file when it was shorter (the
    skeleton cache checks that it is), only the bytes from its ``resume_offset`` on are
    read; its lines and problems come first. ``cores``: see :func:`scan_range`."""
    fd = handle.fileno()
    if start is None:
        return scan_range(fd, path, cores=cores)
    scan = scan_range(fd, path, start=start.resume_offset, number=start.resume_number, cores=cores)
    scan.lines = [*start.lines, *scan.lines]
    scan.problems = [*start.problems, *scan.problems]
    return scan


class LineSink(Protocol):
    """Where :func:`scan_range` puts the lines it reads instead of a list: a fold that
    keeps what it needs of each (:class:`~sessiontree.model.tail.HeadReading`). A scan on
    two cores gives the later part's lines to :meth:`fresh`'s sink in the child process,
    which sends :meth:`to_bytes`; :meth:`merge_bytes` takes them in after this sink's own,
    their line numbers counted from the part's start (``base`` lines before it)."""

    def append(self, line: Line) -> None: ...

    def fresh(self) -> LineSink: ...

    def to_bytes(self) -> bytes: ...

    def merge_bytes(self, data: bytes, base: int) -> None: ...


@runtime_checkable
class LineFold(LineSink, Protocol):
    """A :class:`LineSink` that needs most lines only as their bare skeleton (every
    field of a :class:`~sessiontree.model.records.Skeleton` but ``message.content``,
    which is skipped: a tenth of a head's fold, 2189M -> 1986M instructions on a 200 MB
    file). The scan gives it those through :meth:`take`, in file order, without their
    place; the lines at :attr:`kept_offsets`, and any line the careful reader takes (a
    decode failed), come whole through :meth:`append`."""

    @property
    def kept_offsets(self) -> Collection[int]: ...

    def take(self, skeleton: TreeFields) -> None: ...


def scan_range(
    fd: int,
    path: Path,
    *,
    start: int = 0,
    stop: int | None = None,
    number: int = 0,
    sink: LineSink | None = None,
    cores: int = 1,
) -> Scan:
    """Scan the lines of the file open at ``fd`` from ``start`` (a line start) to
    ``stop`` (a line start; None: the end, where a torn last line is read as such),
    numbered on from ``number`` lines before ``start``. The lines are the scan's, or go
    to ``sink``. The scan's ``resume_offset`` and ``resume_number`` say where it stopped.

    ``cores`` above 1 lets a big range (:data:`SPLIT_AT` bytes or more) be read on two
    (:func:`_scan_in_two`). The result is the same."""
    scan = Scan(path=path, size=os.fstat(fd).st_size)
    scanner = _Scanner(scan, sink)
    scanner.number, scanner.offset = number, start
    end = scan.size if stop is None else stop
    if cores > 1 and end - start >= SPLIT_AT and may_fork():
        _scan_in_two(fd, scanner, stop, _LineList(scan.lines) if sink is None else sink)
    else:
        _scan_to_end(fd, scanner, stop=stop)
    return scan


def _scan_to_end(fd: int, scanner: _Scanner, *, stop: int | None = None) -> None:
    """Scan from the scanner's offset to the end of the file, or to ``stop`` (a line
    start); then note where a later scan picks up.

    A line that runs past the block it began in is read again whole, in one read, once
    its end is found: what it costs to hold is its own length (a 40 MB tool result), not
    twice that (its pieces and their join). The file only grows, so those bytes are the
    ones seen."""
    scan = scanner.scan
    carried: int | None = None  # where a line that runs past its block began
    at = scanner.offset
    while block := os.pread(fd, BLOCK if stop is None else min(BLOCK, stop - at), at):
        begun, at = at, at + len(block)
        position = 0
        if carried is not None:
            newline = block.find(b"\n")
            if newline < 0:
                continue  # (the line goes on)
            _whole_line(fd, scanner, carried, begun + newline + 1)
            carried = None
            position = newline + 1
        position = scanner.block(block, position)
        if position < len(block):
            carried = begun + position
    scan.resume_offset, scan.resume_number = scanner.offset, scanner.number
    if carried is not None:  # no newline at the end: maybe a torn write
        _whole_line(fd, scanner, carried, at)


def _whole_line(fd: int, scanner: _Scanner, start: int, end: int) -> None:
    """Read the line from ``start`` to ``end`` in one piece and give it to the scanner.
    A file cut meanwhile gives less (a damaged line): the lines after it keep their
    places all the same."""
    raw = os.pread(fd, end - start, start)
    scanner.line(raw, has_nul=b"\x00" in raw)
    scanner.offset = end


#: Bytes left to scan from which a scan with ``cores`` above 1 splits the work.
SPLIT_AT = 48 * 1024 * 1024


class _Part(msgspec.Struct, array_like=True):
    """What the forked scanner of the later part sends back: its sink's bytes, its
    problems (numbered from 0 at the part's start), and where it stopped."""

    lines: bytes
    problems: list[Problem]
    resume_offset: int
    resume_number: int


class _LineList:
    """The lines of a scan as a :class:`LineSink` (for a scan on two cores)."""

    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.append = lines.append

    def fresh(self) -> LineSink:
        return _LineList([])

    def to_bytes(self) -> bytes:
        return _lines_encoder.encode(self.lines)

    def merge_bytes(self, data: bytes, base: int) -> None:
        for line in _lines_decoder.decode(data):
            skeleton = line.skeleton
            if skeleton is not None and skeleton.toolUseResult:
                skeleton.toolUseResult = PRESENT  # the scan's stand-in, not a buffer view
            self.lines.append(Line(line.number + base, line.offset, line.length, skeleton))


def _scan_in_two(fd: int, scanner: _Scanner, stop: int | None, sink: LineSink) -> None:
    """Scan on two cores. A forked child scans the later part (from a line start a
    little past the middle when it sends every line it found, else from the middle) into
    a fresh sink and sends it through a pipe with its problems, numbered from its start,
    while this process scans the first part; then the child's lines and problems are
    numbered on from this process's. If the child fails (it died, or sent less), this
    process scans the later part itself. Lines and problems come out as one scan's."""
    scan, begin = scanner.scan, scanner.offset
    end = scan.size if stop is None else stop
    # A child that sends every line it read takes a little less than half; a fold sends
    # little (a head's uuids), so it takes half.
    share = (11, 20) if scanner.fold is None else (1, 2)
    middle = _line_start_after(fd, begin + (end - begin) * share[0] // share[1])
    if middle is None or middle >= end:
        _scan_to_end(fd, scanner, stop=stop)
        return
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        _scan_part_and_exit(fd, scan, middle, stop, sink.fresh(), writer)
    os.close(writer)
    waited = False
    try:
        _scan_to_end(fd, scanner, stop=middle)
        waited = True  # _receive waits for the child, whatever it read
        part = _receive(reader, pid)
    finally:
        os.close(reader)
        if not waited:  # this process failed first: the child is not left behind
            with contextlib.suppress(OSError):
                import signal

                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    if part is None:
        _scan_to_end(fd, scanner, stop=stop)
        return
    base = scanner.number
    sink.merge_bytes(part.lines, base)
    scan.problems.extend(
        p if p.line is None else replace(p, line=p.line + base) for p in part.problems
    )
    scan.resume_offset, scan.resume_number = part.resume_offset, part.resume_number + base


def _scan_part_and_exit(
    fd: int, whole: Scan, start: int, stop: int | None, sink: LineSink, writer: int
) -> NoReturn:
    """In the forked child: scan from ``start`` (a line start) to ``stop`` into ``sink``,
    numbering lines from 0 there, send the part, and leave without running the parent's
    clean-up (``os._exit``)."""
    code = 1
    try:
        part = Scan(path=whole.path, size=whole.size)
        scanner = _Scanner(part, sink)
        scanner.offset = start
        _scan_to_end(fd, scanner, stop=stop)
        found = _Part(sink.to_bytes(), part.problems, part.resume_offset, part.resume_number)
        view = memoryview(_part_encoder.encode(found))
        while view:
            view = view[os.write(writer, view) :]
        code = 0
    finally:
        os._exit(code)


_part_encoder = msgspec.msgpack.Encoder()
_part_decoder = msgspec.msgpack.Decoder(_Part)
_lines_encoder = msgspec.msgpack.Encoder()
_lines_decoder = msgspec.msgpack.Decoder(list[Line])


def _receive(reader: int, pid: int) -> _Part | None:
    """The child's part, read whole, once it exited cleanly; else None."""
    chunks: list[bytes] = []
    while chunk := os.read(reader, 1 << 20):
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    try:
        return _part_decoder.decode(b"".join(chunks))
    except msgspec.DecodeError:
        return None


def _line_start_after(fd: int, offset: int) -> int | None:
    """The offset just past the first newline at or after ``offset`` (None: none)."""
    while chunk := os.pread(fd, 1 << 16, offset):
        newline = chunk.find(b"\n")
        if newline >= 0:
            return offset + newline + 1
        offset += len(chunk)
    return None
