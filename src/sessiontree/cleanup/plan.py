"""Planning: what age-based retention would delete, and what it keeps and why."""

from __future__ import annotations

import json
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from sessiontree.history.log import iter_history_lines
from sessiontree.lifecycle.live import (
    LIVE_ENTRY_NAME,
    LiveEntry,
    iter_live_sessions,
)
from sessiontree.model.records import is_session_id
from sessiontree.storage.jsonl import read_head, read_tail
from sessiontree.storage.layout import Layout

#: The client's default, and what an unusable ``cleanupPeriodDays`` falls back to.
DEFAULT_CLEANUP_DAYS = 30
DAY_SECONDS = 86_400

PASTE_NAME = re.compile(r"^([0-9a-f]{8,64})\.txt$")

#: How much of a kept transcript's head is read for ``forkedFrom`` (grown, up to the
#: cap, while no chain record has been seen: a fork's first chain record is a copy).
_FORK_HEAD_BYTES = 16 * 1024
_FORK_HEAD_MAX = 1024 * 1024

ItemKind = Literal[
    "transcript", "session-folder", "file-history", "session-env", "paste", "live-entry"
]
SESSION_KINDS: tuple[ItemKind, ...] = (
    "transcript",
    "session-folder",
    "file-history",
    "session-env",
)
_KIND_ORDER = {k: i for i, k in enumerate((*SESSION_KINDS, "paste", "live-entry"))}


@dataclass(frozen=True)
class CleanupItem:
    """One file or folder the plan deletes, as it was listed (``lstat``)."""

    path: Path
    kind: ItemKind
    session_id: str | None
    bytes: int
    #: The newest mtime of the file, or of anything in the folder.
    mtime: float
    device: int
    inode: int
    is_dir: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "kind": self.kind,
            "sessionId": self.session_id,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class KeptItem:
    """Something old enough to go that the plan keeps, and why."""

    path: Path
    reason: str
    session_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "reason": self.reason}


@dataclass(frozen=True)
class CleanupPlan:
    """What :func:`apply_cleanup` would delete (changes nothing)."""

    layout: Layout
    days: int
    #: Where ``days`` came from: ``--days``, ``settings.json`` or ``default``.
    days_source: str
    now: float
    cutoff: float
    delete: tuple[CleanupItem, ...]
    kept: tuple[KeptItem, ...]

    @property
    def bytes_planned(self) -> int:
        """Sizes of the regular files to delete (each inode once)."""
        return sum(item.bytes for item in self.delete)

    def sessions(self) -> list[str]:
        return sorted(
            {i.session_id for i in self.delete if i.kind in SESSION_KINDS and i.session_id}
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "deleted": [item.as_json() for item in self.delete],
            "kept": [item.as_json() for item in self.kept],
            "dryRun": True,
            "bytesFreed": self.bytes_planned,
            "days": self.days,
        }


@dataclass(frozen=True)
class CleanupResult:
    """What :func:`apply_cleanup` did."""

    plan: CleanupPlan
    deleted: tuple[CleanupItem, ...]
    #: The plan's kept items, then what apply left because its re-check failed.
    kept: tuple[KeptItem, ...]
    #: Deletions that failed part way or at once: ``(path, reason)``.
    failed: tuple[tuple[Path, str], ...]
    bytes_freed: int

    def as_json(self) -> dict[str, Any]:
        return {
            "deleted": [item.as_json() for item in self.deleted],
            "kept": [item.as_json() for item in self.kept],
            "failed": [{"path": str(p), "reason": r} for p, r in self.failed],
            "dryRun": False,
            "bytesFreed": self.bytes_freed,
            "days": self.plan.days,
        }


# -- settings ----------------------------------------------------------------------------


def _read_setting(layout: Layout, key: str, minimum: int) -> int | None:
    """An integer setting of settings.json, when usable (≥ ``minimum``), else None."""
    try:
        settings = json.loads(layout.settings_path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    value = settings.get(key) if isinstance(settings, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        return None
    return value


def read_cleanup_period_days(layout: Layout) -> int | None:
    """``cleanupPeriodDays`` from settings.json when it is usable (an integer ≥ 1, as the
    client's schema requires), else None."""
    return _read_setting(layout, "cleanupPeriodDays", 1)


def read_desktop_cleanup_days(layout: Layout) -> int | None:
    """``desktopSessionCleanupPeriodDays``: the ceiling on the desktop exemption (0 or
    unset: none, desktop sessions are kept until deleted another way)."""
    return _read_setting(layout, "desktopSessionCleanupPeriodDays", 1)


# -- the desktop exemption -------------------------------------------------------------

#: Entrypoints of the desktop hosts (Claude Desktop, Cowork) whose sessions the client
#: exempts from ``cleanupPeriodDays`` (2.1.328: head's first or tail's last entrypoint).
DESKTOP_ENTRYPOINTS = frozenset(
    {"claude-desktop", "claude-desktop-3p", "local-agent", "local_agent"}
)
#: ``<sid>.desktop-released.json`` beside a transcript: the host let it go (``reason``
#: ``delete``: now; ``archive``: once the marker itself is older than the cutoff).
DESKTOP_RELEASE_SUFFIX = ".desktop-released.json"
_CLASSIFY_BYTES = 65_536
_ENTRYPOINT = re.compile(rb'"entrypoint":\s*"([^"\\]*)"')


def _release(marker: Path, cutoff: float) -> Literal["release-now", "grace", "none"]:
    try:
        st = marker.lstat()
        if not stat.S_ISREG(st.st_mode):
            return "none"
        with marker.open("rb") as handle:
            reason = json.loads(handle.read(4096)).get("reason")
    except (OSError, ValueError, AttributeError, RecursionError):
        return "none"
    if reason == "delete":
        return "release-now"
    if reason == "archive":
        return "release-now" if st.st_mtime < cutoff else "grace"
    return "none"


def desktop_exemption(
    transcript: Path, st: os.stat_result, *, cutoff: float, ceiling: float | None
) -> str | None:
    """Why the client keeps this old transcript although it is past the cutoff — it is a
    desktop host's session — or None. ``ceiling``: the desktop cutoff, if one is set."""
    if ceiling is not None and st.st_mtime < ceiling:
        return None
    release = _release(transcript.with_name(transcript.stem + DESKTOP_RELEASE_SUFFIX), cutoff)
    if release == "release-now":
        return None
    if release == "grace":
        return "desktop session, released to archive: in its grace period"
    if st.st_size == 0:
        return (
            None
            if transcript.with_suffix("").is_dir()
            else "empty transcript: may be a desktop session starting"
        )
    try:
        head = read_head(transcript, _CLASSIFY_BYTES)
        tail = read_tail(transcript, _CLASSIFY_BYTES)
    except OSError:
        return "unreadable transcript: cannot tell whether it is a desktop session"
    first = next((m.group(1) for line in head for m in [_ENTRYPOINT.search(line)] if m), None)
    last = next(
        (m.group(1) for line in reversed(tail) for m in [_ENTRYPOINT.search(line)] if m), None
    )
    for found in (first, last):
        if found is not None and found.decode("utf-8", "replace") in DESKTOP_ENTRYPOINTS:
            return (
                f"desktop session ({found.decode('utf-8', 'replace')}): the client keeps it "
                "past cleanupPeriodDays (bound it with desktopSessionCleanupPeriodDays)"
            )
    return None


# -- listing -----------------------------------------------------------------------------


@dataclass
class _Part:
    path: Path
    kind: ItemKind
    st: os.stat_result

    @property
    def is_link(self) -> bool:
        return stat.S_ISLNK(self.st.st_mode)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)


@dataclass
class _Session:
    session_id: str
    parts: list[_Part] = field(default_factory=list)

    @property
    def transcripts(self) -> list[_Part]:
        return [p for p in self.parts if p.kind == "transcript"]


@dataclass
class Walk:
    newest: float
    newest_path: Path
    bytes: int
    inodes: set[tuple[int, int]]
    link: Path | None = None


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _lstat(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return None  # removed while listed


def walk_part(path: Path, st: os.stat_result, walk: Walk | None = None) -> Walk:
    """Newest mtime, bytes and any symlink under ``path`` (lstat only, never followed)."""
    if walk is None:
        walk = Walk(st.st_mtime, path, 0, set())
    if st.st_mtime > walk.newest:
        walk.newest, walk.newest_path = st.st_mtime, path
    if stat.S_ISLNK(st.st_mode):
        walk.link = walk.link or path
        return walk
    if stat.S_ISREG(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if key not in walk.inodes:
            walk.inodes.add(key)
            walk.bytes += st.st_size
        return walk
    if stat.S_ISDIR(st.st_mode):
        for entry in _scan(path):
            child = _lstat(entry)
            if child is not None:
                walk_part(Path(entry.path), child, walk)
    return walk


def _collect_sessions(layout: Layout) -> tuple[dict[str, _Session], list[_Part]]:
    """Every session part under the root by session id, and symlinks met where parts are."""
    sessions: dict[str, _Session] = {}
    links: list[_Part] = []

    def add(sid: str, part: _Part) -> None:
        if part.is_link:
            links.append(part)
        sessions.setdefault(sid, _Session(sid)).parts.append(part)

    for project in _scan(layout.projects_dir):
        st = _lstat(project)
        if st is None:
            continue
        if stat.S_ISLNK(st.st_mode):
            links.append(_Part(Path(project.path), "session-folder", st))
            continue
        if not stat.S_ISDIR(st.st_mode):
            continue
        for entry in _scan(Path(project.path)):
            name = entry.name
            kind: ItemKind
            if name.endswith(".jsonl") and is_session_id(name[: -len(".jsonl")]):
                sid, kind = name[: -len(".jsonl")], "transcript"
            elif is_session_id(name):
                sid, kind = name, "session-folder"
            else:
                continue  # memory/, temporary files, anything foreign: not ours
            part_st = _lstat(entry)
            if part_st is None:
                continue
            if kind == "transcript" and not (
                stat.S_ISREG(part_st.st_mode) or stat.S_ISLNK(part_st.st_mode)
            ):
                continue
            if kind == "session-folder" and not (
                stat.S_ISDIR(part_st.st_mode) or stat.S_ISLNK(part_st.st_mode)
            ):
                continue
            add(sid, _Part(Path(entry.path), kind, part_st))

    folders: tuple[tuple[Path, ItemKind], ...] = (
        (layout.file_history_dir, "file-history"),
        (layout.session_env_dir, "session-env"),
    )
    for folder, folder_kind in folders:
        for entry in _scan(folder):
            if not is_session_id(entry.name):
                continue
            part_st = _lstat(entry)
            if part_st is None:
                continue
            if stat.S_ISDIR(part_st.st_mode) or stat.S_ISLNK(part_st.st_mode):
                add(entry.name, _Part(Path(entry.path), folder_kind, part_st))
    return sessions, links


# -- forks -------------------------------------------------------------------------------


class _ForkHead(msgspec.Struct):
    sessionId: str | None = None
    messageUuid: str | None = None


class _HeadRecord(msgspec.Struct):
    uuid: str | None = None
    forkedFrom: _ForkHead | None = None


_head_decoder = msgspec.json.Decoder(_HeadRecord)


def read_fork_parents(transcript: Path) -> set[str]:
    """Session ids named by ``forkedFrom`` in the head of a transcript (cheap: the records
    of a fork's file start with the copies, each carrying ``forkedFrom``)."""
    size = _FORK_HEAD_BYTES
    while True:
        try:
            lines = read_head(transcript, size)
            file_size = os.stat(transcript, follow_symlinks=False).st_size
        except OSError:
            return set()
        parents: set[str] = set()
        seen_chain = False
        for line in lines:
            if b'"uuid"' not in line:
                continue
            try:
                record = _head_decoder.decode(line)
            except (msgspec.DecodeError, RecursionError):
                continue
            if record.uuid is None:
                continue
            seen_chain = True
            if record.forkedFrom is not None and record.forkedFrom.sessionId:
                parents.add(record.forkedFrom.sessionId)
        if seen_chain or size >= _FORK_HEAD_MAX or size >= file_size:
            return parents
        size *= 4


# -- pastes ------------------------------------------------------------------------------


def read_recent_paste_refs(layout: Layout, cutoff: float) -> set[str] | None:
    """``contentHash`` values used by history entries at or after ``cutoff`` (an entry
    without a usable timestamp counts as recent). None when history cannot be read."""
    cutoff_ms = cutoff * 1000
    refs: set[str] = set()
    try:
        for line in iter_history_lines(layout):
            if line.timestamp is not None and line.timestamp < cutoff_ms:
                continue
            refs.update(p.content_hash for p in line.pasted.values() if p.content_hash)
    except OSError:
        return None
    return refs


# -- planning ----------------------------------------------------------------------------


def _age(seconds: float) -> str:
    days = seconds / DAY_SECONDS
    return f"{days:.0f} days" if days >= 1 else f"{seconds / 3600:.1f} hours"


def _item(part: _Part, walk: Walk, session_id: str | None) -> CleanupItem:
    return CleanupItem(
        path=part.path,
        kind=part.kind,
        session_id=session_id,
        bytes=walk.bytes,
        mtime=walk.newest,
        device=part.st.st_dev,
        inode=part.st.st_ino,
        is_dir=part.is_dir,
    )


def plan_cleanup(
    layout: Layout, *, days: int | None = None, now: float | None = None
) -> CleanupPlan:
    """What age-based retention would delete under ``layout`` (reads, changes nothing).

    ``days``: the retention period; None reads ``cleanupPeriodDays`` from settings.json
    (unusable or missing: 30). ``now``: epoch seconds (default: the clock).
    """
    if days is not None and days < 1:
        raise ValueError("days must be at least 1")
    if days is not None:
        source = "--days"
    else:
        days = read_cleanup_period_days(layout)
        source = "settings.json" if days is not None else "default"
        days = days or DEFAULT_CLEANUP_DAYS
    now = time.time() if now is None else now
    cutoff = now - days * DAY_SECONDS
    delete: list[CleanupItem] = []
    kept: list[KeptItem] = []

    entries = list(iter_live_sessions(layout))
    live: dict[str, int] = {
        e.session_id: e.pid for e in entries if not e.stale and e.session_id is not None
    }

    desktop_days = read_desktop_cleanup_days(layout)
    ceiling = now - desktop_days * DAY_SECONDS if desktop_days is not None else None
    sessions, links = _collect_sessions(layout)
    for part in links:
        if part.st.st_mtime < cutoff:
            kept.append(KeptItem(part.path, "symlink: never followed, never deleted"))

    # Which sessions are wholly old; the rest are kept as they are.
    old: dict[str, list[CleanupItem]] = {}
    for sid, session in sorted(sessions.items()):
        newest_top = max(p.st.st_mtime for p in session.parts)
        if newest_top >= cutoff:
            # Recent at the top (a transcript appended to, a new backup): list the parts
            # that look old on their own, so "why is this still here" has an answer.
            fresh = max(session.parts, key=lambda p: p.st.st_mtime)
            for part in session.parts:
                if part.st.st_mtime < cutoff and not part.is_link:
                    why = (
                        f"session {sid} is in use: {fresh.path.name} modified "
                        f"{_age(now - fresh.st.st_mtime)} ago"
                    )
                    kept.append(KeptItem(part.path, why, sid))
            continue
        link = next((p.path for p in session.parts if p.is_link), None)
        walks = [(part, walk_part(part.path, part.st)) for part in session.parts]
        link = link or next((w.link for _p, w in walks if w.link is not None), None)
        newest = max(walks, key=lambda pw: pw[1].newest)[1]
        reason: str | None = None
        if sid in live:
            reason = f"live session (pid {live[sid]})"
        elif link is not None:
            reason = f"session {sid} has a symlink ({link}): never followed"
        elif newest.newest >= cutoff:
            reason = (
                f"session {sid} has a recent file: {newest.newest_path} modified "
                f"{_age(now - newest.newest)} ago"
            )
        for candidate in session.transcripts if reason is None else ():
            reason = desktop_exemption(candidate.path, candidate.st, cutoff=cutoff, ceiling=ceiling)
            if reason is not None:
                break
        if reason is not None:
            kept.extend(KeptItem(p.path, reason, sid) for p in session.parts if not p.is_link)
            continue
        old[sid] = [_item(part, walk, sid) for part, walk in walks]

    # A kept fork keeps the session it was forked from, and that one its own parent.
    if old:
        queue = [
            t.path
            for sid, s in sessions.items()
            if sid not in old
            for t in s.transcripts
            if not t.is_link
        ]
        while queue:
            transcript = queue.pop()
            child = transcript.stem
            for parent in sorted(read_fork_parents(transcript)):
                if parent not in old or parent == child:
                    continue
                items = old.pop(parent)
                kept.extend(KeptItem(i.path, f"fork parent of {child}", parent) for i in items)
                queue.extend(i.path for i in items if i.kind == "transcript")
    for items in old.values():
        delete.extend(items)

    delete.extend(_plan_pastes(layout, cutoff, kept))
    delete.extend(_plan_live_entries(layout, entries, cutoff, kept))
    # A session's parts together, sessions by id; then pastes, then registry entries.
    delete.sort(
        key=lambda i: (
            i.kind not in SESSION_KINDS,
            i.session_id or "" if i.kind in SESSION_KINDS else "",
            _KIND_ORDER[i.kind],
            str(i.path),
        )
    )
    return CleanupPlan(
        layout=layout,
        days=days,
        days_source=source,
        now=now,
        cutoff=cutoff,
        delete=tuple(delete),
        kept=tuple(kept),
    )


def _plan_pastes(layout: Layout, cutoff: float, kept: list[KeptItem]) -> Iterator[CleanupItem]:
    old: list[tuple[Path, str, os.stat_result]] = []
    for entry in _scan(layout.paste_cache_dir):
        match = PASTE_NAME.match(entry.name)
        st = _lstat(entry) if match else None
        if match is None or st is None or st.st_mtime >= cutoff:
            continue
        if stat.S_ISLNK(st.st_mode):
            kept.append(KeptItem(Path(entry.path), "symlink: never followed, never deleted"))
        elif stat.S_ISREG(st.st_mode):
            old.append((Path(entry.path), match.group(1), st))
    if not old:
        return
    refs = read_recent_paste_refs(layout, cutoff)
    for path, content_hash, st in sorted(old):
        if refs is None:
            kept.append(KeptItem(path, "history.jsonl cannot be read: its pastes are kept"))
        elif content_hash in refs:
            kept.append(KeptItem(path, "referenced by recent history"))
        else:
            yield CleanupItem(
                path=path,
                kind="paste",
                session_id=None,
                bytes=st.st_size,
                mtime=st.st_mtime,
                device=st.st_dev,
                inode=st.st_ino,
                is_dir=False,
            )


def _plan_live_entries(
    layout: Layout, entries: Iterable[LiveEntry], cutoff: float, kept: list[KeptItem]
) -> Iterator[CleanupItem]:
    for link in _scan(layout.sessions_dir):
        st = _lstat(link) if LIVE_ENTRY_NAME.match(link.name) else None
        if st is not None and stat.S_ISLNK(st.st_mode) and st.st_mtime < cutoff:
            kept.append(KeptItem(Path(link.path), "symlink: never followed, never deleted"))
    for entry in entries:
        if entry.mtime >= cutoff:
            continue  # young: the process may still be writing it
        if not entry.stale:
            why = entry.reason or f"process {entry.pid} is running"
            kept.append(KeptItem(entry.path, why, entry.session_id))
            continue
        try:
            st = os.lstat(entry.path)
        except FileNotFoundError:
            continue
        yield CleanupItem(
            path=entry.path,
            kind="live-entry",
            session_id=entry.session_id,
            bytes=st.st_size,
            mtime=st.st_mtime,
            device=st.st_dev,
            inode=st.st_ino,
            is_dir=False,
        )
