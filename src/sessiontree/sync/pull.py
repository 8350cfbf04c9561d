"""``pull``: a session of the store written where the client looks for it, on this
machine: its transcript, its subagents' transcripts and ``.meta.json``, its
``tool-results/`` and the file-history backups its checkpoints name.

Each file is written safely (a temporary file, fsync, rename; transcripts 0600 in
folders 0700, the files beside them with their stored modes), the transcript's mtime
the time of its last record. Moved to another project folder (``project``), every
path its lines name under the old folder names the new one (:mod:`~sessiontree.model.relocate`):
the rewritten lines are the only difference, and counted. A transcript already here is
never overwritten with less: the same bytes is nothing to do, a file the store's version
goes on from is fast-forwarded, one that went on beyond the store's is left (sync it),
and one that went another way (both machines went on) is refused.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from sessiontree.conversation.fork import ForkPlan, apply_fork, plan_fork
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.model.relocate import Relocation
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.jsonl import append_lines
from sessiontree.storage.layout import Layout, encode_cwd
from sessiontree.storage.store.archive import SharedHead
from sessiontree.storage.store.reads import (
    StoredSource,
    current_sources,
    iter_source_lines,
    read_blob,
    session_artifacts,
)

if TYPE_CHECKING:
    import psycopg

Action = Literal["new", "fast-forward", "up-to-date", "local-ahead", "diverged", "forked"]
#: Lines at the end of a transcript looked at for its last record's time.
LAST_LINES = 64


class PulledFile(msgspec.Struct, frozen=True):
    """One file a pull writes (or would): where, and what it is."""

    path: str
    kind: str  # transcript, subagent, tool-result, agent-meta, file-history
    bytes: int
    action: Action


class PullPlan(msgspec.Struct):
    """What pulling a stored session would do here."""

    session_id: str
    machine: str  # the machine that synced it
    original_project: str | None
    project: str | None
    transcript: Path
    action: Action
    lines: int = 0
    rewritten: int = 0
    bytes: int = 0
    files: list[PulledFile] = msgspec.field(default_factory=list)
    #: The new session id the store's version was written under (``forked``).
    forked_as: str | None = None

    def relocation(self) -> Relocation:
        """How the store's lines are moved to where the session goes here."""
        return Relocation(self.original_project or self.project or "/", self.project or "/")

    def as_json(self) -> dict[str, Any]:
        return {
            "forkedAs": self.forked_as,
            "sessionId": self.session_id,
            "machine": self.machine,
            "path": str(self.transcript),
            "project": self.project,
            "originalProject": self.original_project,
            "action": self.action,
            "lines": self.lines,
            "rewritten": self.rewritten,
            "bytes": self.bytes,
            "files": [f.path for f in self.files if f.action in ("new", "fast-forward")],
        }


class _Fields(msgspec.Struct):
    """What pull reads of a line: when (a transcript's), whose (a history line's)."""

    timestamp: Any = None
    sessionId: Any = None


_fields = msgspec.json.Decoder(_Fields)


def plan_pull(
    conn: psycopg.Connection[Any],
    source: StoredSource,
    layout: Layout,
    *,
    cwd: str | None,
    project: str | None = None,
    target: Path | None = None,
) -> PullPlan:
    """What pulling ``source`` (a stored transcript whose session ran in ``cwd``) into
    ``layout``'s root would do: into ``project``'s folder (default: ``cwd``'s), at
    ``target`` when a copy of it is already here."""
    assert source.session_id is not None
    where = project or cwd
    if where is None:
        raise Refused(f"{source.session_id} names no project folder: give --project PATH")
    relocation = Relocation(cwd or where, where)
    if target is None:
        target = layout.projects_dir / encode_cwd(where) / f"{source.session_id}.jsonl"
    plan = PullPlan(source.session_id, source.machine, cwd, where, target, "new")
    plan.lines, plan.rewritten, plan.bytes, plan.action = _against_local(
        conn, source.source_id, target, relocation
    )
    plan.files.append(PulledFile(str(target), "transcript", plan.bytes, plan.action))
    for sub in _subagents(conn, source):
        path = target.with_suffix("") / "subagents" / Path(sub.rel_path).name
        _, _, size, action = _against_local(conn, sub.source_id, path, relocation)
        plan.files.append(PulledFile(str(path), "subagent", size, action))
    for artifact in session_artifacts(conn, source.machine_id, source.root, source.session_id):
        place = _artifact_path(layout, artifact.rel_path, target)
        if place is not None:
            plan.files.append(PulledFile(str(place), artifact.kind, -1, _blob_action(place)))
    return plan


def apply_pull(
    conn: psycopg.Connection[Any], source: StoredSource, layout: Layout, plan: PullPlan
) -> dict[str, SharedHead]:
    """Write what ``plan`` says is new or goes on; every file safely, nothing shortened.
    What each transcript written begins with (by its path under the root): a sync from
    here links a file new to the store that still begins so to the lines it came from
    (:func:`~sessiontree.storage.store.archive.link_head`), not storing them again."""
    if plan.action == "diverged":
        raise Refused(f"{plan.transcript} and the store's copy both went on")
    relocation = plan.relocation()
    heads: dict[str, SharedHead] = {}
    if plan.action in ("new", "fast-forward"):
        heads[_under(layout, plan.transcript)] = _write_transcript(
            conn, source.source_id, plan.transcript, relocation
        )
    going_on = {f.path for f in plan.files if f.action in ("new", "fast-forward")}
    for sub in _subagents(conn, source):
        path = plan.transcript.with_suffix("") / "subagents" / Path(sub.rel_path).name
        if str(path) in going_on:  # (one here that went on, either way, is left as it is)
            heads[_under(layout, path)] = _write_transcript(conn, sub.source_id, path, relocation)
    assert source.session_id is not None
    for artifact in session_artifacts(conn, source.machine_id, source.root, source.session_id):
        place = _artifact_path(layout, artifact.rel_path, plan.transcript)
        if place is None or place.exists():
            continue  # (a backup's name is its content's: one here is the same)
        data = read_blob(conn, artifact.sha256)
        if data is None:
            continue
        if artifact.kind == "agent-meta":
            data = relocation.line(data)
        write_atomically(place, data, mode=artifact.mode & 0o777 or 0o600, folder_mode=0o700)
        os.utime(place, ns=(artifact.mtime_ns, artifact.mtime_ns))
    return heads


def _under(layout: Layout, path: Path) -> str:
    """``path`` as a sync names it: relative to the root, ``/``-separated."""
    return path.relative_to(layout.root).as_posix()


def _write_transcript(
    conn: psycopg.Connection[Any], source_id: int, path: Path, relocation: Relocation
) -> SharedHead:
    """A stored transcript written to ``path`` (moved by ``relocation``), 0600, its mtime
    its last record's time; what its whole lines are (a torn last line is no part of
    it: the client may complete it otherwise)."""
    last: collections.deque[bytes] = collections.deque(maxlen=LAST_LINES)
    digest = hashlib.sha256()
    head = SharedHead(source_id=source_id, size=0, lines=0, sha256=b"")
    if relocation.old != relocation.new:
        head = msgspec.structs.replace(head, move_from=relocation.old, move_to=relocation.new)
    size = lines = 0

    def chunks() -> Iterator[bytes]:
        nonlocal size, lines
        for raw in iter_source_lines(conn, source_id):
            moved = relocation.line(raw)
            last.append(moved)
            if moved.endswith(b"\n"):
                digest.update(moved)
                size, lines = size + len(moved), lines + 1
            yield moved

    write_atomically(path, chunks(), mode=0o600, folder_mode=0o700)
    stamp = _last_time(last)
    if stamp is not None:
        os.utime(path, (stamp, stamp))
    return msgspec.structs.replace(head, size=size, lines=lines, sha256=digest.digest())


def _last_time(lines: collections.deque[bytes]) -> float | None:
    for raw in reversed(lines):
        try:
            value = _fields.decode(raw).timestamp
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


class _Compared:
    """The store's lines, fed in order, against the file here (its bytes): whether the
    file is absent, the same, a start of the store's, ahead of it, or neither."""

    def __init__(self, local: bytes | None) -> None:
        self.local = local
        self.at = 0
        self.differs = False

    def feed(self, raw: bytes) -> None:
        if self.local is None or self.differs:
            return
        if self.at < len(self.local):
            mine = self.local[self.at : self.at + len(raw)]
            self.differs = raw[: len(mine)] != mine
        self.at += len(raw)

    def action(self) -> Action:
        if self.local is None:
            return "new"
        if self.differs:
            return "diverged"
        if self.at == len(self.local):
            return "up-to-date"
        return "fast-forward" if self.at > len(self.local) else "local-ahead"


def _against_local(
    conn: psycopg.Connection[Any], source_id: int, path: Path, relocation: Relocation
) -> tuple[int, int, int, Action]:
    """A stored file's lines (moved by ``relocation``) against the file at ``path``:
    (lines, lines rewritten, bytes, what pulling it would do)."""
    compared = _Compared(_read_local(path))
    lines = rewritten = size = 0
    for raw in iter_source_lines(conn, source_id):
        moved = relocation.line(raw)
        lines += 1
        rewritten += moved != raw
        size += len(moved)
        compared.feed(moved)
    return lines, rewritten, size, compared.action()


def _read_local(path: Path) -> bytes | None:
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            raise Refused(f"{path} is not a regular file; pull replaces only files")
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _blob_action(path: Path) -> Action:
    return "up-to-date" if path.exists() else "new"


def _subagents(conn: psycopg.Connection[Any], source: StoredSource) -> list[StoredSource]:
    """The subagent transcripts the store holds of ``source``'s session, from its machine
    and root, in its session's folder."""
    assert source.session_id is not None
    folder = Path(source.rel_path).with_suffix("") / "subagents"
    return [
        sub
        for sub in current_sources(conn, kinds=("subagent",), session_ids=[source.session_id])
        if sub.machine_id == source.machine_id
        and sub.root == source.root
        and Path(sub.rel_path).parent == folder
    ]


def _artifact_path(layout: Layout, rel_path: str, transcript: Path) -> Path | None:
    """Where a stored file beside a session goes here: a file-history backup under this
    root's ``file-history/``, a tool result or subagent ``.meta.json`` in the pulled
    session's folder. None for a name that would leave those folders."""
    parts = rel_path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    if parts[0] == "file-history" and len(parts) == 3:
        return layout.file_history_dir / parts[1] / parts[2]
    if parts[0] == "projects" and len(parts) == 5 and parts[3] in ("tool-results", "subagents"):
        return transcript.with_suffix("") / parts[3] / parts[4]
    return None


def merge_history(
    conn: psycopg.Connection[Any],
    layout: Layout,
    pulled: dict[str, PullPlan],
    *,
    dry_run: bool = False,
) -> int:
    """Append to this root's ``history.jsonl`` the store's history lines typed in the
    ``pulled`` sessions that it lacks (each once; a moved session's lines moved too, as
    its transcript); how many."""
    from sessiontree.storage.store.reads import history_lines

    if not pulled:
        return 0
    path = layout.root / "history.jsonl"
    try:
        have = set(path.read_bytes().splitlines())
    except FileNotFoundError:
        have = set()
    wanted = []
    for raw in history_lines(conn):
        try:
            sid = _fields.decode(raw).sessionId
        except (msgspec.DecodeError, RecursionError):
            continue
        plan = pulled.get(sid) if isinstance(sid, str) else None
        if plan is None:
            continue
        line = plan.relocation().line(raw.rstrip(b"\n"))
        if line not in have:
            have.add(line)
            wanted.append(line + b"\n")
    if wanted and not dry_run:
        append_lines(path, wanted)
    return len(wanted)


def pull_as_fork(
    conn: psycopg.Connection[Any],
    source: StoredSource,
    plan: PullPlan,
    *,
    new_session_id: str,
    title: str | None,
) -> ForkPlan:
    """The store's version of a session that went another way here, written beside it as
    a fork (a new session id, ``forkedFrom``, a "(Branch)" title, as ``fork`` writes
    one): both lines of work kept, neither overwritten. Returns what was written."""
    relocation = plan.relocation()
    with tempfile.TemporaryDirectory(prefix="sessiontree-pull-") as scratch:
        copy = Path(scratch) / plan.transcript.name
        write_atomically(
            copy, (relocation.line(raw) for raw in iter_source_lines(conn, source.source_id))
        )
        transcript = Transcript.open(copy)
        made = plan_fork(transcript, new_session_id=new_session_id, original_title=title)
    made = dataclasses.replace(made, path=plan.transcript.with_name(made.path.name))
    apply_fork(made)
    return made


_heads = msgspec.msgpack.Decoder(dict[str, SharedHead])


def heads_file(state_dir: Path, store: str, root: Path) -> Path:
    """Where the heads pulls wrote under ``root`` from ``store`` are kept (sessiontree's
    state folder, one file per store and root), for a sync from here to link."""
    key = hashlib.sha256(f"{store}\n{root.resolve()}".encode()).hexdigest()[:16]
    return state_dir / f"pulled-{key}.msgpack"


def load_heads(path: Path) -> dict[str, SharedHead]:
    """The heads kept in ``path`` (none when it is missing or unreadable: a sync then
    stores those files whole, as before any pull)."""
    try:
        return _heads.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError, RecursionError):
        return {}


def keep_heads(path: Path, heads: dict[str, SharedHead]) -> None:
    """Add ``heads`` to those kept in ``path`` (a file pulled again replaces its own)."""
    if not heads:
        return
    kept = {**load_heads(path), **heads}
    with contextlib.suppress(OSError, Refused):
        write_atomically(path, msgspec.msgpack.encode(kept), mode=0o600, folder_mode=0o700)
