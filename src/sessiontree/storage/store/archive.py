"""Writing to the store: a file's new lines, blobs, history lines, a session's facts.

A transcript goes up in chunks, each one transaction that also advances the source's
synced offset (:func:`push_chunk`): killed at any point, the store holds whole chunks
and the offset that says so, and a rerun goes on from there (nothing lost, nothing
twice). The source's row is locked (``FOR UPDATE``) before the file is read, so two
syncs of one machine take turns on a file; machines never share a source. Only
complete lines go up, except a last line without its newline that the caller says no
client is still writing (``open_tail``): it is stored as it is, and replaced by the
whole line if the file grows past it.

Before a chunk is stored, the bytes already stored are checked against the file (the
first and the last 4 KiB before the synced offset, and the size): a file truncated or
rewritten since starts a new *generation* of its source, stored from its first byte,
and the old one is kept, marked superseded. Nothing here deletes what a file held.
"""

from __future__ import annotations

import hashlib
import os
import uuid as uuid_module
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from sessiontree.model.records import Line, Problem, Skeleton
from sessiontree.storage.scan import scan_range
from sessiontree.storage.skeleton_cache import SKELETON_SHAPE

if TYPE_CHECKING:
    import psycopg

SourceKind = Literal["transcript", "subagent", "history"]
#: Looks at a chunk of lines before it is stored: given the number of its first line
#: and its bytes, the lines to store otherwise, by where each starts in the chunk.
Inspect = Callable[[int, bytes], dict[int, bytes]]
ArtifactKind = Literal["file-history", "tool-result", "agent-meta", "paste"]

#: The most bytes of a file one chunk transaction stores (a longer line goes whole).
CHUNK_BYTES = 16 * 1024 * 1024
#: Bytes hashed at the head of a file and before its synced offset, to tell a file
#: that only grew from one rewritten.
CHECK_BYTES = 4096

_encoder = msgspec.msgpack.Encoder()


class Machine(msgspec.Struct, frozen=True):
    """Who syncs: a machine's id (identity), its label (for people) and OS user."""

    machine_id: str
    label: str
    os_user: str


class Pushed(msgspec.Struct):
    """What one push added to the store."""

    lines: int = 0
    bytes: int = 0
    #: Whether the file was found truncated or rewritten (a new generation began).
    new_generation: bool = False
    source_id: int | None = None


def register_machine(conn: psycopg.Connection[Any], machine: Machine) -> None:
    """The machine's row, its label and user as they are now."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO sessiontree.machine (machine_id, label, os_user)"
            " VALUES (%s, %s, %s) ON CONFLICT (machine_id) DO UPDATE"
            " SET label = excluded.label, os_user = excluded.os_user, last_seen = now()",
            (machine.machine_id, machine.label, machine.os_user),
        )


def put_held_open(
    conn: psycopg.Connection[Any], machine: Machine, root: str, session_ids: Iterable[str]
) -> None:
    """The sessions a running client holds open under ``root`` on ``machine`` now (its
    registry), in place of what its last sync said."""
    with conn.transaction():
        conn.execute(
            "DELETE FROM sessiontree.held_open WHERE machine_id = %s AND root = %s",
            (machine.machine_id, root),
        )
        conn.cursor().executemany(
            "INSERT INTO sessiontree.held_open (machine_id, root, session_id) VALUES (%s, %s, %s)",
            [(machine.machine_id, root, sid) for sid in sorted(set(session_ids))],
        )


class _Source(msgspec.Struct):
    source_id: int
    generation: int
    synced_bytes: int
    synced_lines: int
    head_sha: bytes | None
    tail_sha: bytes | None
    open_tail: bool
    shape: str


def _lock_source(
    conn: psycopg.Connection[Any],
    machine: Machine,
    root: str,
    rel_path: str,
    kind: SourceKind,
    session_id: str | None,
) -> _Source:
    """The file's current source, locked for this transaction (made when new)."""
    conn.execute(
        "INSERT INTO sessiontree.source (machine_id, root, rel_path, kind, session_id, shape)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (machine.machine_id, root, rel_path, kind, session_id, SKELETON_SHAPE),
    )
    row = conn.execute(
        _SELECT_SOURCE
        + " WHERE machine_id = %s AND root = %s AND rel_path = %s AND superseded_by IS NULL"
        " ORDER BY generation DESC LIMIT 1 FOR UPDATE",
        (machine.machine_id, root, rel_path),
    ).fetchone()
    assert row is not None, "the source was just made"
    return _source_of(row)


_SELECT_SOURCE = (
    "SELECT source_id, generation, synced_bytes, synced_lines, head_sha, tail_sha,"
    " open_tail, shape FROM sessiontree.source"
)


def _source_of(row: tuple[Any, ...]) -> _Source:
    source_id, generation, synced, lines, head, tail, open_tail, shape = row
    return _Source(
        source_id, generation, synced, lines, None if head is None else bytes(head),
        None if tail is None else bytes(tail), open_tail, shape,
    )  # fmt: skip


def _new_generation(
    conn: psycopg.Connection[Any],
    old: _Source,
    machine: Machine,
    root: str,
    rel_path: str,
    kind: SourceKind,
    session_id: str | None,
) -> _Source:
    """A new generation of a file's source, the old one kept and marked superseded."""
    row = conn.execute(
        "INSERT INTO sessiontree.source"
        " (machine_id, root, rel_path, generation, kind, session_id, shape)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING source_id",
        (machine.machine_id, root, rel_path, old.generation + 1, kind, session_id,
         SKELETON_SHAPE),
    ).fetchone()  # fmt: skip
    assert row is not None
    conn.execute(
        "UPDATE sessiontree.source SET superseded_by = %s, updated_at = now() WHERE source_id = %s",
        (row[0], old.source_id),
    )
    return _Source(row[0], old.generation + 1, 0, 0, None, None, False, SKELETON_SHAPE)


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _still_holds(fd: int, size: int, source: _Source) -> bool:
    """Whether the file still begins with what the source stored (only grew since):
    it is no shorter, and the bytes at its head and before the synced offset hash the
    same; its skeletons were made in this program's shape."""
    synced = source.synced_bytes
    if source.shape != SKELETON_SHAPE and synced:
        return False  # (stored again in this shape: a reader trusts one shape a source)
    if synced == 0:
        return True
    if size < synced:
        return False
    head = os.pread(fd, min(CHECK_BYTES, synced), 0)
    tail_start = max(0, synced - CHECK_BYTES)
    tail = os.pread(fd, synced - tail_start, tail_start)
    return _digest(head) == source.head_sha and _digest(tail) == source.tail_sha


def file_holds(conn: psycopg.Connection[Any], source_id: int, fd: int) -> bool:
    """Whether the file open at ``fd`` still begins with what the store holds of the
    source ``source_id`` (:func:`_still_holds`): its bytes may be read for it."""
    row = conn.execute(_SELECT_SOURCE + " WHERE source_id = %s", (source_id,)).fetchone()
    return row is not None and _still_holds(fd, os.fstat(fd).st_size, _source_of(row))


class SharedHead(msgspec.Struct, frozen=True):
    """What a pull wrote at the head of a file: its first ``size`` bytes (``lines``
    whole lines, sha256 ``sha256``) are the first ``lines`` lines of the store's source
    ``source_id``, moved from the project folder ``move_from`` to ``move_to``
    (None: as stored)."""

    source_id: int
    size: int
    lines: int
    sha256: bytes
    move_from: str | None = None
    move_to: str | None = None


def link_head(
    conn: psycopg.Connection[Any],
    machine: Machine,
    *,
    root: str,
    rel_path: str,
    path: Path,
    fd: int,
    kind: SourceKind,
    session_id: str | None,
    head: SharedHead,
) -> int:
    """In the caller's transaction: a file new to the store that begins with ``head``
    (its bytes hash the same, and the base holds as many lines)
    stored as that: each line's row (its offset, skeleton and problems in this file),
    its bytes left in the base; its text counted as indexed (search finds those lines
    in the base). The bytes linked; 0 (nothing done) when the file is not new to the
    store or its head is not that."""
    source = _lock_source(conn, machine, root, rel_path, kind, session_id)
    if source.synced_bytes or source.generation or source.open_tail:
        return 0
    if os.fstat(fd).st_size < head.size or _file_digest(fd, head.size) != head.sha256:
        return 0
    there = conn.execute(
        "SELECT byte_offset, stored_length FROM sessiontree.line"
        " WHERE source_id = %s ORDER BY byte_offset LIMIT %s",
        (head.source_id, head.lines),
    ).fetchall()
    if len(there) != head.lines:
        return 0
    number = 0
    at = 0
    while at < head.size:
        stop = _chunk_end(fd, at, head.size, CHUNK_BYTES, open_tail=False)
        data = os.pread(fd, stop - at, at)
        scan = scan_range(fd, path, start=at, stop=stop, number=number)
        rows = list(_rows(data, at, number, scan.lines, scan.problems, {}))
        _copy_line_rows(conn, source.source_id, rows, there[number : number + len(rows)])
        number += len(rows)
        at = stop
    if number != head.lines:
        raise ValueError("a shared head's lines are not the base's")  # (the digest matched)
    first = os.pread(fd, min(CHECK_BYTES, head.size), 0)
    tail_start = max(0, head.size - CHECK_BYTES)
    conn.execute(
        "UPDATE sessiontree.source SET synced_bytes = %s, synced_lines = %s,"
        " head_sha = %s, tail_sha = %s, open_tail = false, base_source_id = %s,"
        " base_bytes = %s, base_lines = %s, move_from = %s, move_to = %s, updated_at = now()"
        " WHERE source_id = %s",
        (head.size, head.lines, _digest(first),
         _digest(os.pread(fd, head.size - tail_start, tail_start)), head.source_id,
         head.size, head.lines, head.move_from, head.move_to, source.source_id),
    )  # fmt: skip
    conn.execute(
        "INSERT INTO sessiontree.text_state (source_id, indexed_bytes, indexed_lines)"
        " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        (source.source_id, head.size, head.lines),
    )
    return head.size


def _file_digest(fd: int, size: int) -> bytes:
    """sha256 of the file's first ``size`` bytes."""
    digest = hashlib.sha256()
    at = 0
    while at < size and (data := os.pread(fd, min(CHUNK_BYTES, size - at), at)):
        digest.update(data)
        at += len(data)
    return digest.digest()


def push_file(
    conn: psycopg.Connection[Any],
    machine: Machine,
    *,
    root: str,
    rel_path: str,
    path: Path,
    kind: SourceKind,
    session_id: str | None,
    open_tail: bool = False,
    inspect: Inspect | None = None,
    progress: Callable[[int], None] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    head: SharedHead | None = None,
) -> Pushed:
    """Store what ``path`` gained since it was last pushed, chunk by chunk (one
    transaction each). ``open_tail``: a last line without its newline is stored too
    (no client is writing it). ``inspect``: sees every chunk of lines before it is
    stored, and says which lines to store otherwise (a redacted line is no longer the
    file's). ``head``: what a pull wrote at the head of the file; a file new to the
    store that begins so is linked to it (:func:`link_head`), not stored again.
    ``progress`` is given the bytes of each chunk stored (or linked)."""
    total = Pushed()
    fd = os.open(path, os.O_RDONLY)
    try:
        if head is not None:
            with conn.transaction():
                linked = link_head(conn, machine, root=root, rel_path=rel_path, path=path,
                                   fd=fd, kind=kind, session_id=session_id, head=head)  # fmt: skip
            if linked and progress is not None:
                progress(linked)
        while True:
            with conn.transaction():
                done = push_chunk(
                    conn, machine, root=root, rel_path=rel_path, path=path, fd=fd,
                    kind=kind, session_id=session_id, open_tail=open_tail, inspect=inspect,
                    chunk_bytes=chunk_bytes,
                )  # fmt: skip
            total.lines += done.lines
            total.bytes += done.bytes
            total.new_generation |= done.new_generation
            total.source_id = done.source_id
            if progress is not None and done.bytes:
                progress(done.bytes)
            if done.bytes == 0:
                return total
    finally:
        os.close(fd)


def push_chunk(
    conn: psycopg.Connection[Any],
    machine: Machine,
    *,
    root: str,
    rel_path: str,
    path: Path,
    fd: int,
    kind: SourceKind,
    session_id: str | None,
    open_tail: bool = False,
    inspect: Inspect | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Pushed:
    """One chunk of ``path`` (open at ``fd``) stored, in the caller's transaction: the
    lines after the source's synced offset, up to ``chunk_bytes`` (at least one whole
    line), with the offset advanced. Nothing new: nothing stored (``bytes`` 0)."""
    source = _lock_source(conn, machine, root, rel_path, kind, session_id)
    size = os.fstat(fd).st_size
    pushed = Pushed(source_id=source.source_id)
    if not _still_holds(fd, size, source):
        source = _new_generation(conn, source, machine, root, rel_path, kind, session_id)
        pushed.new_generation, pushed.source_id = True, source.source_id
    start, number = source.synced_bytes, source.synced_lines
    replaced = None  # the open tail stored last time, stored again whole now
    if source.open_tail:
        row = conn.execute(
            "SELECT byte_offset, length FROM sessiontree.line WHERE source_id = %s"
            " ORDER BY byte_offset DESC LIMIT 1",
            (source.source_id,),
        ).fetchone()
        assert row is not None
        if size == start:
            return Pushed(source_id=source.source_id)  # (still as it was stored)
        replaced, start, number = row[0], row[0], number - 1
    window = os.pread(fd, min(chunk_bytes, size - start), start) if start < size else b""
    stop = _chunk_end(fd, start, size, chunk_bytes, open_tail=open_tail, window=window)
    if stop <= start:
        return pushed if pushed.new_generation else Pushed(source_id=source.source_id)
    # (the window read holds the chunk but for a line longer than the limit: read once)
    data = (
        window[: stop - start] if stop - start <= len(window) else os.pread(fd, stop - start, start)
    )
    stop = start + len(data)  # (a file cut meanwhile gives less; its next check says so)
    if not data:
        return pushed
    whole = data.endswith(b"\n")
    scan = scan_range(fd, path, start=start, stop=stop if whole else None, number=number)
    stored = {} if inspect is None else inspect(number + 1, data)
    rows = list(_rows(data, start, number, scan.lines, scan.problems, stored))
    if replaced is not None:
        for table in ("line", "line_block"):  # (alone in its block: see _blocks)
            conn.execute(
                f"DELETE FROM sessiontree.{table} WHERE source_id = %s AND byte_offset = %s",
                (source.source_id, replaced),
            )  # (its bytes are the start of the line stored in its place)
    _copy_lines(conn, source.source_id, rows, open_tail=not whole)
    # (the head hashed is the first min(4 KiB, synced) bytes: again while it grows)
    head = data[:CHECK_BYTES] if start == 0 else os.pread(fd, min(CHECK_BYTES, stop), 0)
    tail_start = max(0, stop - CHECK_BYTES)
    tail = (
        data[tail_start - start :]
        if tail_start >= start
        else os.pread(fd, stop - tail_start, tail_start)
    )
    conn.execute(
        "UPDATE sessiontree.source SET synced_bytes = %s, synced_lines = %s,"
        " head_sha = %s, tail_sha = %s, open_tail = %s,"
        " updated_at = now() WHERE source_id = %s",
        (stop, number + len(rows), _digest(head), _digest(tail),
         not whole, source.source_id),
    )  # fmt: skip
    pushed.lines = len(rows) - (1 if replaced is not None else 0)
    pushed.bytes = stop - source.synced_bytes
    return pushed


def _chunk_end(
    fd: int, start: int, size: int, limit: int, *, open_tail: bool, window: bytes | None = None
) -> int:
    """Where the chunk from ``start`` ends: just past the last newline within ``limit``
    bytes (past the first newline, if the line is longer), or the end of the file for
    an open tail; ``start`` when there is no whole line (and no open tail) yet.
    ``window``: those ``limit`` bytes from ``start``, read already."""
    if start >= size:
        return start
    if window is None:
        window = os.pread(fd, min(limit, size - start), start)
    last = window.rfind(b"\n")
    if last >= 0 and (start + len(window) < size or window.endswith(b"\n") or not open_tail):
        return start + last + 1
    at = start + len(window)
    while at < size:  # one line longer than the limit: find where it ends
        block = os.pread(fd, 1 << 20, at)
        if not block:
            break
        newline = block.find(b"\n")
        if newline >= 0:
            return at + newline + 1
        at += len(block)
    return size if open_tail else start


_LINE_COLUMNS = (
    "byte_offset", "line_no", "length", "skeleton", "problems", "type", "uuid",
    "parent_uuid", "block_offset", "block_at", "stored_length",
)  # fmt: skip
#: The types of ``source_id`` and :data:`_LINE_COLUMNS`, as COPY sends them.
_LINE_TYPES = [
    "int8", "int8", "int4", "int4", "bytea", "bytea", "text", "text", "text", "int8", "int4",
    "int4",
]  # fmt: skip
#: The bytes of lines a block gathers before the next line starts another (a longer
#: line is a block alone): big enough that a block's repeats compress away, small
#: enough that reading one line decompresses little else.
BLOCK_BYTES = 32 * 1024


def _rows(
    data: bytes,
    start: int,
    number: int,
    lines: list[Line],
    problems: list[Problem],
    stored: dict[int, bytes],
) -> Iterable[tuple[Any, ...]]:
    """One row per physical line of ``data`` (from offset ``start``, numbered on from
    ``number``), each with the skeleton and problems the scan gave it, its bytes as
    they are or as ``stored`` has them (by offset in ``data``)."""
    by_offset = {line.offset: line for line in lines}
    by_number: dict[int, list[Problem]] = {}
    for problem in problems:
        if problem.line is not None:
            by_number.setdefault(problem.line, []).append(problem)
    position = 0
    while position < len(data):
        newline = data.find(b"\n", position)
        end = len(data) if newline < 0 else newline + 1
        raw = data[position:end]
        number += 1
        offset = start + position
        line = by_offset.get(offset)
        skeleton = line.skeleton if line is not None else None
        found = by_number.get(number)
        yield (
            offset,
            number,
            len(raw),
            stored.get(position, raw),
            None if line is None else _encoder.encode(skeleton),
            None if not found else _encoder.encode(found),
            *_tree_columns(skeleton),
        )
        position = end


def _tree_columns(skeleton: Skeleton | None) -> tuple[str | None, str | None, str | None]:
    if skeleton is None:
        return None, None, None
    return _text(skeleton.type), _text(skeleton.uuid), _text(skeleton.parentUuid)


def _text(value: str | None) -> str | None:
    """A value a ``text`` column takes (no NUL, encodable), else None (the skeleton
    keeps the exact value)."""
    if value is None or "\x00" in value:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def _blocks(
    rows: Sequence[tuple[Any, ...]], *, open_tail: bool
) -> Iterator[tuple[int, list[tuple[Any, ...]]]]:
    """``rows`` (from :func:`_rows`) gathered into blocks of consecutive lines, each with
    the offset of its first line; a last line without its newline (``open_tail``) is
    alone in its block, so that it can be replaced whole when the file grows."""
    block: list[tuple[Any, ...]] = []
    size = 0
    last = len(rows) - 1
    for index, row in enumerate(rows):
        alone = open_tail and index == last
        if block and (size >= BLOCK_BYTES or alone):
            yield block[0][0], block
            block, size = [], 0
        block.append(row)
        size += len(row[3])
    if block:
        yield block[0][0], block


def _copy_lines(
    conn: psycopg.Connection[Any],
    source_id: int,
    rows: Sequence[tuple[Any, ...]],
    *,
    open_tail: bool = False,
) -> None:
    """Store ``rows`` (from :func:`_rows`): their bytes in blocks, each line's row with
    where in its block its bytes are."""
    if not rows:
        return
    lines: list[tuple[Any, ...]] = []
    blocks: list[tuple[int, bytes]] = []
    for block_offset, block in _blocks(rows, open_tail=open_tail):
        at = 0
        for offset, number, length, stored, *rest in block:
            lines.append((source_id, offset, number, length, *rest, block_offset, at, len(stored)))
            at += len(stored)
        blocks.append((block_offset, b"".join(row[3] for row in block)))
    with conn.cursor() as cursor:
        blocks_sql = (
            b"COPY sessiontree.line_block (source_id, byte_offset, raw) FROM STDIN (FORMAT BINARY)"
        )
        with cursor.copy(blocks_sql) as copy:
            copy.set_types(["int8", "int8", "bytea"])
            for block_offset, raw in blocks:
                copy.write_row((source_id, block_offset, raw))
        columns = ", ".join(("source_id", *_LINE_COLUMNS))
        sql = f"COPY sessiontree.line ({columns}) FROM STDIN (FORMAT BINARY)"
        with cursor.copy(sql.encode()) as copy:
            copy.set_types(_LINE_TYPES)
            for row in lines:
                copy.write_row(row)


def _copy_line_rows(
    conn: psycopg.Connection[Any],
    source_id: int,
    rows: Sequence[tuple[Any, ...]],
    there: Sequence[tuple[int, int]],
) -> None:
    """The rows of a shared head's lines (from :func:`_rows`), each pointing at the same
    line in the base (its offset and length there): no bytes stored."""
    with conn.cursor() as cursor:
        columns = ", ".join(("source_id", *_LINE_COLUMNS))
        sql = f"COPY sessiontree.line ({columns}) FROM STDIN (FORMAT BINARY)"
        with cursor.copy(sql.encode()) as copy:
            copy.set_types(_LINE_TYPES)
            for (offset, number, length, _raw, *rest), (base_offset, base_length) in zip(
                rows, there, strict=True
            ):
                copy.write_row((source_id, offset, number, length, *rest, base_offset, 0,
                                base_length))  # fmt: skip


def put_blobs(
    conn: psycopg.Connection[Any], blobs: Iterable[bytes]
) -> tuple[dict[bytes, int], int]:
    """Store each content once (content-addressed by sha256); its digests, and how many
    of them the store did not hold before."""
    digests = {_digest(data): data for data in blobs}
    if not digests:
        return {}, 0
    known = {
        bytes(row[0])
        for row in conn.execute(
            "SELECT sha256 FROM sessiontree.blob WHERE sha256 = ANY(%s)", (list(digests),)
        )
    }
    added = 0
    with conn.cursor() as cursor:
        for digest, data in digests.items():
            if digest in known:
                continue
            cursor.execute(
                "INSERT INTO sessiontree.blob (sha256, size, data) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (digest, len(data), data),
            )
            added += cursor.rowcount
    return {d: len(v) for d, v in digests.items()}, added


class Artifact(msgspec.Struct, frozen=True):
    """A file beside the transcripts, to store: where, what, and its bytes."""

    rel_path: str
    kind: ArtifactKind
    session_id: str | None
    data: bytes
    mode: int
    mtime_ns: int


def put_artifacts(
    conn: psycopg.Connection[Any], machine: Machine, root: str, artifacts: Sequence[Artifact]
) -> tuple[int, int]:
    """Store files beside the transcripts (their bytes as blobs); (files, new blobs)."""
    if not artifacts:
        return 0, 0
    with conn.transaction():
        _, added = put_blobs(conn, (a.data for a in artifacts))
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO sessiontree.artifact"
                " (machine_id, root, rel_path, kind, session_id, sha256, mode, mtime_ns)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (machine_id, root, rel_path) DO UPDATE SET"
                " sha256 = excluded.sha256, mode = excluded.mode, mtime_ns = excluded.mtime_ns",
                [
                    (machine.machine_id, root, a.rel_path, a.kind, a.session_id,
                     _digest(a.data), a.mode, a.mtime_ns)
                    for a in artifacts
                ],
            )  # fmt: skip
    return len(artifacts), added


def known_artifacts(conn: psycopg.Connection[Any], machine: Machine, root: str) -> dict[str, int]:
    """The artifacts of a machine's root the store holds: rel_path -> mtime_ns."""
    rows = conn.execute(
        "SELECT rel_path, mtime_ns FROM sessiontree.artifact WHERE machine_id = %s AND root = %s",
        (machine.machine_id, root),
    ).fetchall()
    return {str(rel): int(mtime) for rel, mtime in rows}


def push_history(
    conn: psycopg.Connection[Any], machine: Machine, *, root: str, path: Path
) -> Pushed:
    """The whole lines ``history.jsonl`` gained since it was last pushed, merged into the
    store's history: a line another machine (or an earlier generation) sent is kept once."""
    pushed = Pushed()
    fd = os.open(path, os.O_RDONLY)
    try:
        with conn.transaction():
            source = _lock_source(conn, machine, root, "history.jsonl", "history", None)
            size = os.fstat(fd).st_size
            pushed.source_id = source.source_id
            if not _still_holds(fd, size, source):
                source = _new_generation(
                    conn, source, machine, root, "history.jsonl", "history", None
                )
                pushed.new_generation, pushed.source_id = True, source.source_id
            start = source.synced_bytes
            stop = _chunk_end(fd, start, size, 1 << 62, open_tail=False)
            if stop <= start:
                return pushed
            data = os.pread(fd, stop - start, start)
            rows = []
            for raw in data.splitlines(keepends=True):
                if raw.strip():
                    rows.append((_digest(raw), raw, _history_time(raw), machine.machine_id))
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO sessiontree.history_line (sha256, raw, ts, machine_id)"
                    " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    rows,
                )
            head = os.pread(fd, min(CHECK_BYTES, stop), 0)
            tail_start = max(0, stop - CHECK_BYTES)
            tail = os.pread(fd, stop - tail_start, tail_start)
            conn.execute(
                "UPDATE sessiontree.source SET synced_bytes = %s, synced_lines = %s,"
                " head_sha = %s, tail_sha = %s, updated_at = now() WHERE source_id = %s",
                (stop, source.synced_lines + len(rows), _digest(head), _digest(tail),
                 source.source_id),
            )  # fmt: skip
            pushed.lines, pushed.bytes = len(rows), stop - start
    finally:
        os.close(fd)
    return pushed


class _Timed(msgspec.Struct):
    timestamp: Any = None


_timed = msgspec.json.Decoder(_Timed)


def _history_time(raw: bytes) -> int | None:
    try:
        value = _timed.decode(raw).timestamp
    except (msgspec.DecodeError, RecursionError):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value) if -(2**62) < value < 2**62 else None
    return None


class SessionFacts(msgspec.Struct, frozen=True):
    """What the store keeps of a session beside its lines: its listing row as the
    engine's listing reads it (msgpack, ``info``), at the file size it was read at, and
    what only its machine knows."""

    session_id: str
    cwd: str | None
    git_remote: str | None
    client_version: str | None
    title: str | None
    updated_at: str | None
    info: bytes
    info_bytes: int


def put_session(
    conn: psycopg.Connection[Any], machine: Machine, source_id: int, facts: SessionFacts
) -> None:
    """A session's facts, as they are now (one row per transcript source)."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO sessiontree.session (source_id, session_id, machine_id, os_user, cwd,"
            " git_remote, client_version, title, updated_at, info, info_bytes)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (source_id) DO UPDATE SET cwd = excluded.cwd,"
            " git_remote = excluded.git_remote, client_version = excluded.client_version,"
            " title = excluded.title, updated_at = excluded.updated_at, info = excluded.info,"
            " info_bytes = excluded.info_bytes, os_user = excluded.os_user",
            (source_id, facts.session_id, machine.machine_id, machine.os_user,
             _text(facts.cwd), _text(facts.git_remote), _text(facts.client_version),
             _text(facts.title), _text(facts.updated_at), facts.info, facts.info_bytes),
        )  # fmt: skip


def new_machine_id() -> str:
    return str(uuid_module.uuid4())
