"""The skeleton cache: a transcript read before is read again only from where it ended.

Transcripts only grow, so a scan (:class:`~sessiontree.storage.scan.Scan`: every line's
place and skeleton, and the problems found) stays true of the bytes it read. The cache
keeps one file per transcript, ``skeleton-<hash of its absolute path>.msgpack``, in a
folder the caller names (the CLI's cache folder; never inside a config root: the cache is
ours, not the client's). On the next open it is trusted only if the file is the same file
and only grew since:

- the same device and inode (a file replaced by a rename is another file);
- no smaller than it was, and if it is the same size, the same mtime (a file rewritten in
  place to the same length is read again);
- the same first bytes, and the same bytes just before where the cached scan stopped (a
  file truncated and written again past its old size is caught here).

Then only the bytes after the last whole line it read are scanned (a line that was torn
then, completed since, is read whole now) and the result is the cold scan's, line for
line. Anything else (no cache file, a corrupt or foreign one, another format version or
skeleton shape, a file that fails a check) means a full scan, and the cache file is
written again. A cache that cannot be read or written is never an error: it is only slower.

A cache file keeps the transcript's *tail* apart (:mod:`sessiontree.model.tail`: the
lines since its last compaction, and what the lines before leave), so that a resume reads
only that and what was appended (:meth:`SkeletonCache.scan_tail`); a resume that read the
whole file keeps only the tail (a fraction to write), a whole read keeps every line. The
folder is bounded (:attr:`SkeletonCache.max_bytes`): a write past it removes the least
recently used files.
"""

import contextlib
import os
import re
import stat
import struct
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from sessiontree.errors import DataError, SessionTreeError
from sessiontree.model.records import Line, Problem, Skeleton
from sessiontree.model.tail import Tail
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.forked import fork_task, wait_task
from sessiontree.storage.layout import StrPath
from sessiontree.storage.scan import PRESENT, Scan, scan_handle, scan_transcript

try:  # hashlib's blake2b without the OpenSSL that importing hashlib loads (3-4 ms a start)
    from _blake2 import blake2b
except ImportError:  # a Python that has no such module
    from hashlib import blake2b

#: Bumped when the cache file's layout or meaning changes; another version is rebuilt.
FORMAT = 5

#: What a cache folder holds at most by default (a skeleton is ~6% of its transcript).
MAX_BYTES = 1024 * 1024 * 1024

#: Bytes hashed at the head of the file and just before where the cached scan stopped.
CHECK_BYTES = 64 * 1024

#: A cache file starts with the length of its front part, then the front, then the rest.
_LENGTH = struct.Struct("<Q")


class _Entry(msgspec.Struct, array_like=True):
    """A cache file's front part: which file it describes, as what, and its scan up to
    ``end``: where its tail starts (:mod:`sessiontree.model.tail`) and the tail's lines,
    when it has one. The rest of the file (a list of :class:`Line`) holds the lines
    before the tail (the kept ones too), all of them without one; a tail read never
    decodes it. A cache written for tail reads only has no rest."""

    format: int
    shape: str  # the skeleton's shape when written (a changed Skeleton reads as foreign)
    path: str  # the transcript's absolute path (a hash collision reads as foreign)
    device: int
    inode: int
    size: int
    mtime_ns: int
    end: int  # Scan.resume_offset: just past the last whole line
    number: int  # Scan.resume_number: lines before ``end``
    head: bytes  # digest of the bytes [0, min(end, CHECK_BYTES))
    tail: bytes  # digest of the bytes [max(0, end - CHECK_BYTES), end)
    problems: list[Problem]
    resume_tail: Tail | None
    kept: list[Line]  # the lines at resume_tail.kept
    lines: list[Line]  # the lines from resume_tail.start on (none without a tail)
    split: int  # how many lines the rest of the file holds (0 if it was left out)


class TailScan(msgspec.Struct):
    """A tail read (:meth:`SkeletonCache.scan_tail`): the scan of a transcript's tail
    (the cached tail's lines, then every line appended since) and where it came from."""

    scan: Scan
    tail: Tail


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Entry)
_rest_decoder = msgspec.msgpack.Decoder(list[Line])

#: Skeleton fields kept as ``msgspec.Raw``: only their presence counts. The scan keeps
#: :data:`~sessiontree.storage.scan.PRESENT` (valid msgpack) for a present one and the
#: empty default (left out) for an absent one, so they are written as they are; read back,
#: a present one is the scan's own value again (a decoded ``Raw`` would keep the whole
#: cache buffer alive).
_RAW_FIELDS = tuple(
    info.name for info in msgspec.structs.fields(Skeleton) if info.type is msgspec.Raw
)


def _shape() -> str:
    """A fingerprint of what a cache file holds: the fields of :class:`Line`,
    :class:`Skeleton` (and the structs inside it), :class:`Problem` and :class:`Tail`
    (and the structs inside it), with their types and defaults. Cheap: it runs at
    import (``msgspec.inspect`` costs tens of ms)."""
    parts: list[str] = []
    todo: list[Any] = [Line, Problem, Tail]
    seen: set[Any] = set()
    while todo:
        kind = todo.pop()
        if kind in seen:
            continue
        seen.add(kind)
        if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
            for info in msgspec.structs.fields(kind):
                parts.append(
                    f"{kind.__name__}.{info.encode_name}: {info.type!r} = {info.default!r}"
                )
                todo.append(info.type)
        else:
            todo.extend(typing.get_args(kind))
    described = re.sub(r" at 0x[0-9a-fA-F]+", "", "\n".join(parts))  # object addresses vary
    return blake2b(described.encode(), digest_size=8).hexdigest()


_SHAPE = _shape()
#: What a skeleton, a line and a problem are made of, as a short digest: a store's
#: skeletons made in another shape are not read as this program's.
SKELETON_SHAPE = _SHAPE


def _digest(fd: int, start: int, stop: int) -> bytes:
    data = os.pread(fd, stop - start, start) if stop > start else b""
    return blake2b(data, digest_size=16).digest()


class FileMark(msgspec.Struct, frozen=True):
    """What a reader keeps of a file it read up to ``end`` (just past its last whole
    line) to tell later whether the file only grew since (:meth:`only_grew`): then the
    bytes before ``end`` are the ones it read, and only what follows is new. The rule of
    this cache's own files, for any reader of an append-only file (the search index)."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    end: int
    head: bytes  # digest of the bytes [0, min(end, check))
    tail: bytes  # digest of the bytes [max(0, end - check), end)
    #: The bytes hashed at the head and before ``end`` (a reader of many small files,
    #: usage, hashes fewer: 128 KiB a file was a tenth of its cold read).
    check: int = CHECK_BYTES

    @classmethod
    def of(cls, fd: int, st: os.stat_result, end: int, check: int = CHECK_BYTES) -> "FileMark":
        """The mark of the file open at ``fd`` (``st``: its ``fstat``), read up to ``end``."""
        head = _digest(fd, 0, min(end, check))
        return msgspec.structs.replace(cls.of_tail(fd, st, end, check), head=head)

    def grown_to(self, fd: int, st: os.stat_result, end: int) -> "FileMark":
        """The mark of the file this one marks, read on to ``end`` since it only grew
        (:meth:`only_grew`): its head is hashed again only if it was shorter than the
        bytes a head check covers."""
        if self.end < self.check or end < self.end:
            return FileMark.of(fd, st, end, self.check)
        return msgspec.structs.replace(FileMark.of_tail(fd, st, end, self.check), head=self.head)

    @classmethod
    def of_tail(cls, fd: int, st: os.stat_result, end: int, check: int = CHECK_BYTES) -> "FileMark":
        """:meth:`of` without the head's digest (left empty)."""
        return cls(
            device=st.st_dev,
            inode=st.st_ino,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            end=end,
            head=b"",
            tail=_digest(fd, max(0, end - check), end),
            check=check,
        )

    def unchanged(self, st: os.stat_result) -> bool:
        """Whether ``st`` is the marked file's own stat: the same file, the same size and
        mtime (nothing written since: nothing to read, no bytes hashed)."""
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == (
            self.device,
            self.inode,
            self.size,
            self.mtime_ns,
        )

    def only_grew(self, st: os.stat_result, fd: int) -> bool:
        """Whether the file open at ``fd`` (``st``: its ``fstat``) is the marked one,
        only grown since: the same device and inode (a file replaced by a rename is
        another file); no smaller (truncated), and if the same size, the same mtime (a
        file rewritten in place to the same length); the same first bytes and the same
        bytes just before ``end`` (a file truncated and written again past its old size)."""
        if (st.st_dev, st.st_ino) != (self.device, self.inode):
            return False
        if st.st_size < max(self.size, self.end):
            return False  # truncated
        if st.st_size == self.size and st.st_mtime_ns != self.mtime_ns:
            return False  # written to without growing: rewritten in place
        head = _digest(fd, 0, min(self.end, self.check))
        tail = _digest(fd, max(0, self.end - self.check), self.end)
        return head == self.head and tail == self.tail


class SkeletonCache:
    """Scans kept in ``folder`` (created 0700 on the first write), one file per transcript.

    :meth:`scan` is :func:`~sessiontree.storage.scan.scan_transcript` that reads only
    what was appended since the last scan it kept. ``folder`` is a parameter: the library
    reads no environment (the CLI uses ``$SESSIONTREE_CACHE_DIR`` or
    ``$XDG_CACHE_HOME/sessiontree``).
    """

    def __init__(
        self,
        folder: StrPath,
        *,
        rewrite_after: int | None = None,
        cores: int = 1,
        max_bytes: int = MAX_BYTES,
        background: bool = False,
    ) -> None:
        self.folder = Path(folder)
        #: Write cache files in a forked child while this process goes on (a CLI
        #: command: it calls :meth:`finish` before it ends); else as :meth:`keep` is called.
        self.background = background
        #: The children writing cache files (:attr:`background`).
        self._writing: list[int] = []
        #: What the folder's cache files may hold in all: past it, a write removes the
        #: least recently used ones (:meth:`_make_room`).
        self.max_bytes = max_bytes
        #: How many cores a big scan may use (:func:`~sessiontree.storage.scan.scan_handle`).
        self.cores = cores
        #: Whole-line bytes appended since the cache file was written that make it be
        #: written again; None: :func:`rewrite_after`.
        self.rewrite_after = rewrite_after
        #: Scans read but not yet kept (:meth:`keep`), by absolute path.
        self._pending: dict[str, tuple[Scan, _Entry]] = {}

    def _worth_rewriting(self, cached_end: int, appended: int) -> bool:
        if appended <= 0:
            return False
        limit = rewrite_after(cached_end) if self.rewrite_after is None else self.rewrite_after
        return appended >= limit

    def file_for(self, path: StrPath) -> Path:
        """The cache file of the transcript at ``path``."""
        key = blake2b(os.path.abspath(path).encode("utf-8", "surrogateescape"), digest_size=12)
        return self.folder / f"skeleton-{key.hexdigest()}.msgpack"

    def scan(self, path: StrPath) -> Scan:
        """The transcript's scan: from the cache and the bytes appended since, when the
        cache is of this file as it was before it grew; else a full scan. Raises
        :class:`~sessiontree.errors.DataError` as a full scan does.

        What it read is kept for next time by :meth:`keep`, which the caller calls once it
        knows the scan's tail (or :func:`scan_cached`, which knows none)."""
        path = Path(path)
        absolute = os.path.abspath(path)
        file = self.file_for(path)
        entry = self._load(file, absolute, whole=True)
        with _open(path) as handle:
            fd = handle.fileno()
            st = os.fstat(fd)
            start = None
            if entry is not None and _still_valid(entry, st, fd):
                start = _as_scan(entry, path, entry.lines)
            scan = scan_handle(handle, path, start=start, cores=self.cores)
            grown = scan.resume_offset - entry.end if entry is not None and start else 0
            if start is None or self._worth_rewriting(entry.end if entry else 0, grown):
                self._pending[absolute] = (scan, _identity(scan, absolute, st, fd))
        return scan

    def keep(
        self,
        path: StrPath,
        tail: Callable[[], Tail | None] | None = None,
        *,
        head_lines: bool = True,
    ) -> None:
        """Write the cache file of the transcript :meth:`scan` just read, if that scan is
        worth keeping, with its tail (``tail()`` is asked only then). Without
        ``head_lines`` (and with a tail), the lines before the tail are left out: the
        file then serves tail reads (:meth:`scan_tail`) only, and costs a fraction to
        write."""
        pending = self._pending.pop(os.path.abspath(path), None)
        if pending is None:
            return
        if self.background:
            writer = fork_task(lambda: self._write(path, pending, tail, head_lines=head_lines))
            if writer is not None:
                self._writing.append(writer)
                return
        self._write(path, pending, tail, head_lines=head_lines)

    def finish(self) -> None:
        """Wait for the cache files being written in the background (:attr:`background`)."""
        while self._writing:
            wait_task(self._writing.pop())

    def _write(
        self,
        path: StrPath,
        pending: tuple[Scan, _Entry],
        tail: Callable[[], Tail | None] | None,
        *,
        head_lines: bool,
    ) -> None:
        scan, identity = pending
        found = tail() if tail is not None else None
        lines = [line for line in scan.lines if line.offset < identity.end]
        if found is not None and found.start >= len(lines):
            found = None  # its boundary is on a torn last line: read again next time
        split = found.start if found is not None else len(lines)
        rest = head_lines or found is None
        entry = msgspec.structs.replace(
            identity,
            resume_tail=found,
            kept=[lines[i] for i in found.kept] if found is not None else [],
            lines=lines[split:],
            split=split if rest else 0,
        )
        try:
            front = _encoder.encode(entry)
        except UnicodeEncodeError:
            return  # a file name that is not UTF-8 (in the path, and so in problems)

        def chunks() -> Iterator[bytes]:  # one encoded part held at a time
            yield _LENGTH.pack(len(front)) + front
            if rest:
                yield _encoder.encode(lines[:split])

        # No fsync: a cache file lost or torn by a crash is read as foreign and rebuilt.
        file = self.file_for(path)
        with contextlib.suppress(OSError, SessionTreeError):
            write_atomically(file, chunks(), mode=0o600, fsync=False, folder_mode=0o700)
            self._make_room(keep=file)

    def _make_room(self, *, keep: Path) -> None:
        """Remove the least recently used cache files (by mtime: a read touches its file)
        until the folder holds at most 3/4 of :attr:`max_bytes`, when it holds more; never
        ``keep``. A cache of a transcript deleted since ages out so. Only this cache's own
        files are removed: ``skeleton-*.msgpack`` in its folder."""
        files: list[tuple[float, int, Path]] = []
        total = 0
        for entry in os.scandir(self.folder):
            if entry.name.startswith("skeleton-") and entry.name.endswith(".msgpack"):
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        files.append((st.st_mtime, st.st_size, Path(entry.path)))
                        total += st.st_size
        if total <= self.max_bytes:
            return
        for _, size, file in sorted(files):
            if total <= self.max_bytes * 3 // 4:
                break
            if file != keep:
                with contextlib.suppress(OSError):
                    file.unlink()  # ours, not the user's: no plan, no undo
                    total -= size

    def keep_tail(self, path: StrPath, scan: Scan, tail: Tail) -> None:
        """Write the cache file of a transcript whose tail alone was read (``scan``, its
        lines the tail's: :func:`~sessiontree.storage.tail_read.read_tail_first`), for
        tail reads only."""
        absolute = os.path.abspath(path)
        with contextlib.suppress(OSError, DataError), _open(Path(path)) as handle:
            fd = handle.fileno()
            self._pending[absolute] = (scan, _identity(scan, absolute, os.fstat(fd), fd))
        self.keep(path, lambda: tail, head_lines=False)

    def scan_tail(self, path: StrPath) -> TailScan | None:
        """The scan of the transcript's tail (:mod:`sessiontree.model.tail`): the cached
        tail's lines and the lines appended since, without reading the cached head. None
        when the cache has no tail of this file as it was before it grew, or so much was
        appended that the cache file is due to be written again (then :meth:`scan`)."""
        path = Path(path)
        absolute = os.path.abspath(path)
        entry = self._load(self.file_for(path), absolute, whole=False)
        if entry is None or entry.resume_tail is None:
            return None
        with _open(path) as handle:
            fd = handle.fileno()
            if not _still_valid(entry, os.fstat(fd), fd):
                return None
            start = _as_scan(entry, path, [*entry.kept, *entry.lines])
            scan = scan_handle(handle, path, start=start, cores=self.cores)
        if self._worth_rewriting(entry.end, scan.resume_offset - entry.end):
            return None
        return TailScan(scan, entry.resume_tail)

    def _load(self, file: Path, absolute: str, *, whole: bool) -> _Entry | None:
        """The cache file's front; with ``whole``, its lines are all the scan's lines.
        A file read is touched: :meth:`_make_room` removes the least recently used."""
        try:
            data = file.read_bytes()
        except OSError:
            return None
        with contextlib.suppress(OSError):
            os.utime(file)
        try:
            (length,) = _LENGTH.unpack_from(data)
            front = memoryview(data)[_LENGTH.size : _LENGTH.size + length]
            entry = _decoder.decode(front)
            if entry.format != FORMAT or entry.shape != _SHAPE or entry.path != absolute:
                return None
            if whole and entry.resume_tail is not None and not entry.split:
                return None  # written for tail reads only
            if whole:
                rest = _rest_decoder.decode(memoryview(data)[_LENGTH.size + length :])
                if len(rest) != entry.split:
                    return None
                entry.lines = [*rest, *entry.lines]
        except (msgspec.DecodeError, RecursionError, struct.error):
            return None  # corrupt, foreign, or of another version: rebuilt
        for line in entry.lines if _RAW_FIELDS else ():  # the scan's values, not views
            _own_raw_fields(line)
        for line in entry.kept if _RAW_FIELDS and not whole else ():
            _own_raw_fields(line)
        return entry


def _own_raw_fields(line: Line) -> None:
    skeleton = line.skeleton
    if skeleton is not None:
        for name in _RAW_FIELDS:
            if getattr(skeleton, name):
                setattr(skeleton, name, PRESENT)


@contextlib.contextmanager
def _open(path: Path) -> Iterator[BinaryIO]:
    try:
        handle = path.open("rb", buffering=0)
    except OSError as exc:
        raise DataError(str(path), exc.strerror or "cannot open") from exc
    with handle:
        yield handle


#: The least :func:`rewrite_after` asks for.
REWRITE_MIN = 4 * 1024 * 1024


def rewrite_after(cached_end: int) -> int:
    """Appended bytes after which a cache file that holds ``cached_end`` bytes' scan is
    written again: 1/16 of them, at least :data:`REWRITE_MIN`.

    Writing it costs in proportion to what it holds (encoding every line: ~70 ms for a
    200 MB transcript), scanning what it lacks in proportion to that (~1.3 ms a MB); so
    a few appended MB are scanned again on each open rather than the cache rewritten."""
    return max(REWRITE_MIN, cached_end // 16)


def scan_cached(path: StrPath, cache: SkeletonCache | None) -> Scan:
    """:meth:`SkeletonCache.scan` (kept without a tail) with a cache,
    :func:`scan_transcript` without one."""
    if cache is None:
        return scan_transcript(Path(path))
    scan = cache.scan(path)
    cache.keep(path)
    return scan


def _still_valid(entry: _Entry, st: os.stat_result, fd: int) -> bool:
    """Whether the file open at ``fd`` is the one ``entry`` scanned, only grown since."""
    mark = FileMark(
        entry.device, entry.inode, entry.size, entry.mtime_ns, entry.end, entry.head, entry.tail
    )
    return mark.only_grew(st, fd)


def _as_scan(entry: _Entry, path: Path, lines: list[Line]) -> Scan:
    problems = entry.problems
    if problems and problems[0].path != str(path):  # the same file, named another way
        problems = [msgspec.structs.replace(p, path=str(path)) for p in problems]
    return Scan(
        path=path,
        size=entry.size,
        lines=lines,
        problems=problems,
        resume_offset=entry.end,
        resume_number=entry.number,
    )


def _identity(scan: Scan, absolute: str, st: os.stat_result, fd: int) -> _Entry:
    """The cache entry of ``scan`` without its lines (:meth:`SkeletonCache.keep` adds them)."""
    mark = FileMark.of(fd, st, scan.resume_offset)
    return _Entry(
        format=FORMAT,
        shape=_SHAPE,
        path=absolute,
        device=mark.device,
        inode=mark.inode,
        size=mark.size,
        mtime_ns=mark.mtime_ns,
        end=mark.end,
        number=scan.resume_number,
        head=mark.head,
        tail=mark.tail,
        # Problems of the torn last line (after ``end``) are found again next time.
        problems=[p for p in scan.problems if p.line is None or p.line <= scan.resume_number],
        resume_tail=None,
        kept=[],
        lines=[],
        split=0,
    )
