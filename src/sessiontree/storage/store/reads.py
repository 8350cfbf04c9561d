"""Reading the store: its sources, a transcript's phase one (the skeletons its sync made
with the engine's own scan) and phase two (the lines a command needs, by offset), the
listing rows, history, and the files beside the transcripts.

A source's skeletons are read only when they were made in this program's skeleton shape
(:data:`~sessiontree.storage.skeleton_cache.SKELETON_SHAPE`); otherwise its lines are
fetched and scanned here, by the same scanner, so a read never depends on how old the
program that synced was.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from sessiontree.model.records import Line, Problem, Skeleton
from sessiontree.model.relocate import Relocation
from sessiontree.storage.scan import PRESENT, Scan, scan_range
from sessiontree.storage.skeleton_cache import SKELETON_SHAPE

if TYPE_CHECKING:
    import psycopg

_skeleton = msgspec.msgpack.Decoder(Skeleton)
_problems = msgspec.msgpack.Decoder(list[Problem])

#: Lines fetched by one query of phase two.
BATCH_LINES = 2000
#: Bytes of lines one query of phase two fetches at most (a line longer goes alone).
BATCH_BYTES = 8 * 1024 * 1024


class StoredSource(msgspec.Struct, frozen=True):
    """One file of one machine as the store holds it (its current generation)."""

    source_id: int
    machine_id: str
    machine: str  # the machine's label
    os_user: str
    root: str
    rel_path: str
    generation: int
    kind: str
    session_id: str | None
    synced_bytes: int
    synced_lines: int
    open_tail: bool
    shape: str

    @property
    def path(self) -> Path:
        """Where the file is (or was) on its machine."""
        return Path(self.root) / self.rel_path

    @property
    def project_dir(self) -> str | None:
        """The name of its project's folder under ``projects/`` (None: not in one)."""
        parts = self.rel_path.split("/")
        return parts[1] if len(parts) > 2 and parts[0] == "projects" else None


_SOURCE_COLUMNS = (
    "s.source_id, s.machine_id::text, m.label, m.os_user, s.root, s.rel_path, s.generation,"
    " s.kind, s.session_id, s.synced_bytes, s.synced_lines, s.open_tail, s.shape"
)


def of_origin(params: dict[str, Any], machine: str | None, user: str | None) -> list[str]:
    """The conditions (on ``m``, the machine's row) that keep what one machine (its
    label or id) or OS user synced; their values put in ``params``."""
    where = []
    if machine is not None:
        where.append("(m.label = %(machine)s OR m.machine_id::text = %(machine)s)")
        params["machine"] = machine
    if user is not None:
        where.append("m.os_user = %(user)s")
        params["user"] = user
    return where


def current_sources(
    conn: psycopg.Connection[Any],
    *,
    kinds: Sequence[str] = ("transcript",),
    session_ids: Sequence[str] | None = None,
    machine: str | None = None,
    user: str | None = None,
) -> list[StoredSource]:
    """The current generation of every source of these kinds (of these sessions, of the
    machine with this label or id, of this OS user), in a stable order."""
    where = ["s.superseded_by IS NULL", "s.kind = ANY(%(kinds)s)"]
    params: dict[str, Any] = {"kinds": list(kinds)}
    if session_ids is not None:
        where.append("s.session_id = ANY(%(sessions)s)")
        params["sessions"] = list(session_ids)
    where += of_origin(params, machine, user)
    sql = (
        f"SELECT {_SOURCE_COLUMNS} FROM sessiontree.source s"
        " JOIN sessiontree.machine m USING (machine_id)"
        f" WHERE {' AND '.join(where)} ORDER BY s.rel_path, m.label, s.source_id"
    )
    return [StoredSource(*row) for row in conn.execute(sql.encode(), params)]


def current_size(conn: psycopg.Connection[Any], source: StoredSource) -> tuple[int, int] | None:
    """The current generation of ``source``'s file (the same machine, root and path): its
    source id and the bytes synced of it; None when the store has it no more."""
    row = conn.execute(
        "SELECT source_id, synced_bytes FROM sessiontree.source"
        " WHERE machine_id = %s AND root = %s AND rel_path = %s AND superseded_by IS NULL"
        " ORDER BY generation DESC LIMIT 1",
        (source.machine_id, source.root, source.rel_path),
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]))


def source_by_id(conn: psycopg.Connection[Any], source_id: int) -> StoredSource | None:
    row = conn.execute(
        f"SELECT {_SOURCE_COLUMNS} FROM sessiontree.source s"
        " JOIN sessiontree.machine m USING (machine_id) WHERE s.source_id = %s".encode(),
        (source_id,),
    ).fetchone()
    return None if row is None else StoredSource(*row)


def sources_by_id(
    conn: psycopg.Connection[Any], source_ids: Sequence[int]
) -> dict[int, StoredSource]:
    """:func:`source_by_id` of many, in one query (those the store has)."""
    rows = conn.execute(
        f"SELECT {_SOURCE_COLUMNS} FROM sessiontree.source s"
        " JOIN sessiontree.machine m USING (machine_id) WHERE s.source_id = ANY(%s)".encode(),
        (list(source_ids),),
    )
    return {source.source_id: source for source in (StoredSource(*row) for row in rows)}


def read_scan(conn: psycopg.Connection[Any], source: StoredSource) -> Scan:
    """Phase one of a stored transcript: the skeletons its sync made, as the cold scan of
    the file gives them (lines, problems, where a later scan would pick up)."""
    path = source.path
    if source.shape != SKELETON_SHAPE:
        return _scan_stored(conn, source)
    scan = Scan(path=path, size=source.synced_bytes)
    decode, problems_of = _skeleton.decode, _problems.decode
    resume = source.synced_bytes
    with conn.cursor() as cursor:
        cursor.execute(
            "SELECT line_no, byte_offset, length, skeleton, problems FROM sessiontree.line"
            " WHERE source_id = %s ORDER BY byte_offset",
            (source.source_id,),
        )
        for number, offset, length, skeleton, problems in cursor:
            if skeleton is not None:
                parsed = decode(skeleton)
                if parsed.toolUseResult:
                    parsed.toolUseResult = PRESENT  # (not a view of the row's buffer)
                scan.lines.append(Line(number, offset, length, parsed))
            if problems is not None:
                scan.problems.extend(problems_of(problems))
            resume = offset + length
    if source.open_tail and scan.lines:
        resume = scan.lines[-1].offset
    scan.resume_offset = resume
    scan.resume_number = source.synced_lines - (1 if source.open_tail else 0)
    return scan


def _scan_stored(conn: psycopg.Connection[Any], source: StoredSource) -> Scan:
    """The engine's scan of a source's stored bytes (its skeletons were made by a program
    of another shape): the bytes laid out in memory as the file was, then scanned."""
    fd = os.memfd_create("sessiontree-source", os.MFD_CLOEXEC)
    try:
        for raw in iter_source_bytes(conn, source.source_id):
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
        return scan_range(fd, source.path)
    finally:
        os.close(fd)


class _Base(msgspec.Struct, frozen=True):
    """A source's shared head (migration 0006): its lines before ``size`` are the first
    ``lines`` lines of source ``source_id``, moved by ``relocation`` (None: as they are)."""

    source_id: int
    size: int
    lines: int
    relocation: Relocation | None


def _base_of(conn: psycopg.Connection[Any], source_id: int) -> _Base | None:
    row = conn.execute(
        "SELECT base_source_id, base_bytes, base_lines, move_from, move_to"
        " FROM sessiontree.source WHERE source_id = %s AND base_source_id IS NOT NULL",
        (source_id,),
    ).fetchone()
    if row is None:
        return None
    base_id, size, lines, move_from, move_to = row
    moved = None if move_from is None or move_to is None else Relocation(move_from, move_to)
    return _Base(int(base_id), int(size), int(lines), moved)


def iter_source_bytes(conn: psycopg.Connection[Any], source_id: int) -> Iterator[bytes]:
    """Every stored line of a source, in file order, as stored (newline included), a
    block of lines at a time; a shared head (the lines of the source it was pulled
    from) first, moved as it was when pulled, a line at a time."""
    base = _base_of(conn, source_id)
    if base is not None:
        yield from _base_lines(conn, base)
    with conn.cursor() as cursor:
        sql = (
            "COPY (SELECT raw FROM sessiontree.line_block WHERE source_id = %s"
            " ORDER BY byte_offset) TO STDOUT (FORMAT BINARY)"
        )
        with cursor.copy(sql.encode(), (source_id,)) as copy:
            copy.set_types(["bytea"])
            for row in copy.rows():
                yield bytes(row[0])


def _base_lines(conn: psycopg.Connection[Any], base: _Base) -> Iterator[bytes]:
    """The base's first ``base.lines`` lines, moved."""
    for raw in itertools.islice(iter_source_lines(conn, base.source_id), base.lines):
        yield raw if base.relocation is None else base.relocation.line(raw)


def iter_source_lines(conn: psycopg.Connection[Any], source_id: int) -> Iterator[bytes]:
    """Every stored line of a source, in file order, as stored (newline included), one
    line at a time (a line never holds a newline but its last byte)."""
    for block in iter_source_bytes(conn, source_id):
        start = 0
        while start < len(block):
            newline = block.find(b"\n", start)
            end = len(block) if newline < 0 else newline + 1
            yield block[start:end]
            start = end


def line_bytes(
    conn: psycopg.Connection[Any], source_id: int, lines: Sequence[Line]
) -> Iterator[bytes]:
    """Phase two: the stored bytes of ``lines``, in the order given, fetched in batches
    (a line the store does not hold gives empty bytes)."""
    batch: list[Line] = []
    size = 0
    for line in lines:
        if batch and (len(batch) >= BATCH_LINES or size + line.length > BATCH_BYTES):
            yield from _fetch(conn, source_id, batch)
            batch, size = [], 0
        batch.append(line)
        size += line.length
    if batch:
        yield from _fetch(conn, source_id, batch)


def lines_of_sources(
    conn: psycopg.Connection[Any], wanted: Mapping[int, Sequence[Line]]
) -> dict[tuple[int, int], bytes]:
    """:func:`line_bytes` of the lines of many sources (by source id), by (source id,
    offset): in three queries whatever the number of sources (a search's hits are spread
    over dozens; a round trip each was most of a store search), a source with a shared
    head through :func:`line_bytes`. A line the store does not hold gives empty bytes."""
    ids = list(wanted)
    with_base = {
        int(source_id)
        for (source_id,) in conn.execute(
            "SELECT source_id FROM sessiontree.source"
            " WHERE source_id = ANY(%s) AND base_source_id IS NOT NULL",
            (ids,),
        )
    }
    found: dict[tuple[int, int], bytes] = {}
    for source_id in with_base:
        lines = wanted[source_id]
        for line, raw in zip(lines, line_bytes(conn, source_id, lines), strict=True):
            found[source_id, line.offset] = raw
    keys = sorted(
        {(sid, line.offset) for sid in ids if sid not in with_base for line in wanted[sid]}
    )
    for start in range(0, len(keys), BATCH_LINES):
        found.update(_fetch_many(conn, keys[start : start + BATCH_LINES]))
    return found


def _fetch_many(
    conn: psycopg.Connection[Any], keys: list[tuple[int, int]]
) -> dict[tuple[int, int], bytes]:
    """The bytes of lines named by (source id, offset), none with a shared head: where
    each is, then each block they are in once, cut."""
    places = conn.execute(
        "SELECT l.source_id, l.byte_offset, l.block_offset, l.block_at, l.stored_length"
        " FROM sessiontree.line l JOIN unnest(%s::bigint[], %s::bigint[]) AS w(s, o)"
        " ON l.source_id = w.s AND l.byte_offset = w.o",
        ([k[0] for k in keys], [k[1] for k in keys]),
    ).fetchall()
    block_keys = sorted({(int(sid), int(block)) for sid, _, block, _, _ in places})
    blocks: dict[tuple[int, int], bytes] = {
        (int(sid), int(offset)): bytes(raw)
        for sid, offset, raw in conn.execute(
            "SELECT b.source_id, b.byte_offset, b.raw"
            " FROM sessiontree.line_block b JOIN unnest(%s::bigint[], %s::bigint[]) AS w(s, o)"
            " ON b.source_id = w.s AND b.byte_offset = w.o",
            ([k[0] for k in block_keys], [k[1] for k in block_keys]),
        )
    }
    found = dict.fromkeys(keys, b"")
    for sid, offset, block, at, length in places:
        raw = blocks.get((int(sid), int(block)))
        if raw is not None:
            found[int(sid), int(offset)] = raw[at : at + length]
    return found


def _fetch(conn: psycopg.Connection[Any], source_id: int, lines: list[Line]) -> Iterator[bytes]:
    """The bytes of ``lines``: where each is (its block, and where in it), then each
    block they are in once, cut; a line of a shared head is its base's line, moved."""
    base = _base_of(conn, source_id)
    if base is not None and any(line.offset < base.size for line in lines):
        yield from _fetch_over_base(conn, source_id, base, lines)
        return
    found = _fetch_many(conn, [(source_id, line.offset) for line in lines])
    for line in lines:
        yield found[source_id, line.offset]


def _fetch_over_base(
    conn: psycopg.Connection[Any], source_id: int, base: _Base, lines: list[Line]
) -> Iterator[bytes]:
    """:func:`_fetch` of a source with a shared head: the head's lines fetched from the
    base (where each is there: its row's ``block_offset``), moved; the others its own."""
    head = sorted({line.offset for line in lines if line.offset < base.size})
    there: dict[int, tuple[int, int]] = {
        offset: (int(at), int(length))
        for offset, at, length in conn.execute(
            "SELECT byte_offset, block_offset, stored_length FROM sessiontree.line"
            " WHERE source_id = %s AND byte_offset = ANY(%s)",
            (source_id, head),
        )
    }
    wanted = [Line(0, at, length, None) for at, length in there.values()]
    got = dict(zip([line.offset for line in wanted], _fetch(conn, base.source_id, wanted),
                   strict=True))  # fmt: skip
    own = [line for line in lines if line.offset >= base.size]
    mine = (
        dict(zip([line.offset for line in own], _fetch(conn, source_id, own), strict=True))
        if own
        else {}
    )
    for line in lines:
        if line.offset >= base.size:
            yield mine[line.offset]
            continue
        place = there.get(line.offset)
        raw = got.get(place[0], b"") if place is not None else b""
        yield raw if base.relocation is None or not raw else base.relocation.line(raw)


class StoredSession(msgspec.Struct, frozen=True):
    """A listing row as its sync read it (``info``: msgpack), and where it came from."""

    source: StoredSource
    info: bytes
    info_bytes: int
    git_remote: str | None
    client_version: str | None


def stored_sessions(
    conn: psycopg.Connection[Any], *, machine: str | None = None, user: str | None = None
) -> list[StoredSession]:
    """Every stored session's listing row, with its current source."""
    where = ["s.superseded_by IS NULL"]
    params: dict[str, Any] = {}
    where += of_origin(params, machine, user)
    sql = (
        f"SELECT {_SOURCE_COLUMNS}, f.info, f.info_bytes, f.git_remote, f.client_version"
        " FROM sessiontree.session f JOIN sessiontree.source s USING (source_id)"
        " JOIN sessiontree.machine m ON m.machine_id = s.machine_id"
        f" WHERE {' AND '.join(where)}"
    )
    found = []
    for row in conn.execute(sql.encode(), params):
        *source, info, info_bytes, remote, version = row
        found.append(StoredSession(StoredSource(*source), bytes(info), info_bytes, remote, version))
    return found


def history_lines(conn: psycopg.Connection[Any]) -> list[bytes]:
    """Every line of every machine's ``history.jsonl``, each once, in the order typed."""
    rows = conn.execute(
        "SELECT raw FROM sessiontree.history_line ORDER BY ts NULLS FIRST, seq"
    ).fetchall()
    return [bytes(row[0]) for row in rows]


class StoredArtifact(msgspec.Struct, frozen=True):
    rel_path: str
    kind: str
    session_id: str | None
    sha256: bytes
    mode: int
    mtime_ns: int


def session_artifacts(
    conn: psycopg.Connection[Any], machine_id: str, root: str, session_id: str
) -> list[StoredArtifact]:
    """The files a machine's root kept beside one session (its checkpoints' backups, its
    tool results, its subagents' metadata)."""
    rows = conn.execute(
        "SELECT rel_path, kind, session_id, sha256, mode, mtime_ns FROM sessiontree.artifact"
        " WHERE machine_id = %s AND root = %s AND session_id = %s ORDER BY rel_path",
        (machine_id, root, session_id),
    )
    return [StoredArtifact(r[0], r[1], r[2], bytes(r[3]), r[4], r[5]) for r in rows]


def last_grown(conn: psycopg.Connection[Any], source: StoredSource) -> float:
    """How many seconds ago the store last took lines of ``source`` (by the server's
    clock)."""
    row = conn.execute(
        "SELECT extract(epoch FROM now() - updated_at) FROM sessiontree.source"
        " WHERE source_id = %s",
        (source.source_id,),
    ).fetchone()
    return float(row[0]) if row and row[0] is not None else float("inf")


class HeldOpen(msgspec.Struct, frozen=True):
    """A machine whose registry said, when it last synced, that a client holds a session
    open there: its label, and how many seconds ago that was (the server's clock)."""

    machine_id: str
    machine: str
    seconds_ago: float


def held_open(conn: psycopg.Connection[Any], session_id: str) -> list[HeldOpen]:
    """The machines whose last sync said a client held ``session_id`` open."""
    rows = conn.execute(
        "SELECT h.machine_id::text, m.label, extract(epoch FROM now() - h.seen_at)"
        " FROM sessiontree.held_open h JOIN sessiontree.machine m USING (machine_id)"
        " WHERE h.session_id = %s ORDER BY h.seen_at DESC",
        (session_id,),
    ).fetchall()
    return [HeldOpen(str(mid), str(label), float(ago)) for mid, label, ago in rows]


def session_backups(
    conn: psycopg.Connection[Any], source: StoredSource, session_id: str
) -> dict[str, bytes]:
    """The file-history backups the store keeps of a session, from the machine and root
    ``source`` came from: each backup's file name, and its blob's sha256."""
    artifacts = session_artifacts(conn, source.machine_id, source.root, session_id)
    return {a.rel_path.rsplit("/", 1)[-1]: a.sha256 for a in artifacts if a.kind == "file-history"}


def stored_title(conn: psycopg.Connection[Any], source: StoredSource) -> str | None:
    """The title of a stored transcript's session, as its listing row had it when synced
    (``sessions``' title: custom, else AI title, else first prompt)."""
    row = conn.execute(
        "SELECT title FROM sessiontree.session WHERE source_id = %s", (source.source_id,)
    ).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def read_blob(conn: psycopg.Connection[Any], sha256: bytes) -> bytes | None:
    row = conn.execute("SELECT data FROM sessiontree.blob WHERE sha256 = %s", (sha256,)).fetchone()
    return None if row is None else bytes(row[0])


def read_named_artifact(conn: psycopg.Connection[Any], rel_path: str) -> bytes | None:
    """The bytes of a file any machine kept at ``rel_path`` under its root (a
    content-addressed name, such as ``paste-cache/<hash>.txt``: every copy is the same)."""
    row = conn.execute(
        "SELECT b.data FROM sessiontree.artifact a JOIN sessiontree.blob b USING (sha256)"
        " WHERE a.rel_path = %s LIMIT 1",
        (rel_path,),
    ).fetchone()
    return None if row is None else bytes(row[0])


class StoredLines:
    """A stored transcript's lines for phase two
    (:class:`~sessiontree.storage.jsonl.LineSource`): fetched by offset, in batches."""

    def __init__(self, conn: psycopg.Connection[Any], source: StoredSource) -> None:
        self.conn = conn
        self.source = source

    @property
    def name(self) -> str:
        return str(self.source.path)

    def line_bytes(self, lines: Sequence[Line]) -> Iterator[bytes]:
        return line_bytes(self.conn, self.source.source_id, lines)
