"""``sessions/<pid>.json``: the registry of processes that hold a session open.

What Claude Code 2.1.328 writes (``tests/fixtures/live-session/``, copied from a running
client), one file per process, removed on a clean exit::

    {"pid": 4398, "sessionId": "14b6…", "cwd": "/work/proj", "startedAt": 1795995498953,
     "procStart": "904968", "version": "2.1.328", "peerProtocol": 1, "peerFeatures": […],
     "kind": "interactive", "entrypoint": "cli",
     "pidDomain": "linux:<machine-id>:pid:[4026531836]", "asksForConvertedSkills": null,
     "messagingSocketPath": "…/4398.sock", "name": "proj-3e", "nameSource": "derived",
     "nameSince": 1795995498953, "status": "idle", "updatedAt": 1795995499113,
     "statusUpdatedAt": 1795995499113}

Times are epoch milliseconds. ``procStart`` is field 22 of ``/proc/<pid>/stat`` (the
process start time in clock ticks since boot), kept as a string: with ``pid`` it names
one process, so a pid the kernel has since given to another process is told apart.
``pidDomain`` says which pid numbers ``pid`` belongs to (machine and pid namespace): a
client in a container can share ``~/.claude`` without sharing pids.

An entry is **stale** when its process is gone: the pid is dead (or a zombie), or alive
with another start time (reused). Only files named ``^[0-9]+\\.json$`` are entries; the
client keeps other files there (``<pid>.<hash>.key``) and writes temporary ones.
An entry from another pid domain cannot be checked from here and is taken as live.

sessiontree registers its own processes the same way (:func:`live_session`): its
cleanup never deletes such a session, and its write commands refuse one without
``--force``. (Whether the client's own cleanup sweep honours an entry sessiontree wrote
is not verified: the sweep runs minutes into an idle interactive session.)
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sessiontree.errors import DataError, NotFound, Refused
from sessiontree.model.records import Problem
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.layout import Layout, session_folder_name
from sessiontree.storage.remove import remove_file

#: The only names that are registry entries (ASCII digits: ``\d`` would take ``٣.json``).
LIVE_ENTRY_NAME = re.compile(r"^[0-9]+\.json$")

#: A registry entry is a few hundred bytes; anything far bigger is not one.
_MAX_ENTRY_BYTES = 1 << 20

#: The largest pid Linux hands out is 2**22; anything outside (0, 2**31) is not a pid,
#: and ``os.kill(0, 0)`` would signal our own process group.
_MAX_PID = (1 << 31) - 1

Status = Literal["busy", "idle"]
Clock = Callable[[], float]

#: Why an entry is stale: its process is gone, its pid is another process's now, or the
#: file cannot be read as an entry.
StaleReason = Literal["dead pid", "pid reused", "unreadable"]
#: Why an entry is taken as live without being checked.
UncheckedReason = Literal["another machine or pid namespace: cannot be checked, taken as live"]


def _sessiontree_version() -> str:
    from sessiontree._version import __version__

    return __version__


@dataclass(frozen=True)
class LiveSession:
    """One ``sessions/<pid>.json``: typed accessors over the client's fields.

    A field that is absent, or present with a type the client would not write, is None
    here and (in the second case) kept verbatim in ``extra`` with every unknown field, so
    :func:`format_live_session` writes back what was read.
    """

    pid: int
    session_id: str | None = None
    cwd: str | None = None
    started_at: int | None = None
    version: str | None = None
    kind: str | None = None
    entrypoint: str | None = None
    name: str | None = None
    status: str | None = None
    updated_at: int | None = None
    status_updated_at: int | None = None
    proc_start: str | None = None
    pid_domain: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return format_live_session(self)


# JSON key -> (attribute, type). The order is the client's order in the file.
_FIELDS: tuple[tuple[str, str, type], ...] = (
    ("sessionId", "session_id", str),
    ("cwd", "cwd", str),
    ("startedAt", "started_at", int),
    ("procStart", "proc_start", str),
    ("version", "version", str),
    ("kind", "kind", str),
    ("entrypoint", "entrypoint", str),
    ("pidDomain", "pid_domain", str),
    ("name", "name", str),
    ("status", "status", str),
    ("updatedAt", "updated_at", int),
    ("statusUpdatedAt", "status_updated_at", int),
)
_TRAILING = frozenset({"status", "updatedAt", "statusUpdatedAt"})


def _typed(value: Any, kind: type) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


def parse_live_session(obj: Mapping[str, Any], *, pid: int | None = None) -> LiveSession:
    """A registry entry from its decoded JSON; ``pid`` (from the file name) wins over the
    ``pid`` field. Raises :class:`DataError` when neither gives a pid."""
    raw_pid = obj.get("pid")
    if pid is None:
        if not isinstance(raw_pid, int) or isinstance(raw_pid, bool):
            raise DataError("sessions/<pid>.json", "no pid in the entry")
        pid = raw_pid
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    known = {key: (attr, kind) for key, attr, kind in _FIELDS}
    for key, value in obj.items():
        if key == "pid" and _typed(value, int):
            continue
        if key in known and _typed(value, known[key][1]):
            values[known[key][0]] = value
        else:
            extra[key] = value
    return LiveSession(pid=pid, extra=extra, **values)


def format_live_session(session: LiveSession) -> dict[str, Any]:
    """The JSON object of an entry (pure): known fields in the client's order, then
    unknown ones, then the status fields, as the client's updates leave them."""
    out: dict[str, Any] = {} if "pid" in session.extra else {"pid": session.pid}
    for key, attr, _kind in _FIELDS:
        value = getattr(session, attr)
        if key not in _TRAILING and value is not None:
            out[key] = value
    out.update(session.extra)
    for key, attr, _kind in _FIELDS:
        value = getattr(session, attr)
        if key in _TRAILING and value is not None:
            out[key] = value
    return out


# -- the process side --------------------------------------------------------------------


def read_proc_start(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat`` (start time, clock ticks since boot), as the client
    records it in ``procStart``; None where there is no such file (not Linux, gone)."""
    if not 0 < pid <= _MAX_PID:
        return None
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces and ")": split
    # after the last ")". What follows starts at field 3, so field 22 is index 19.
    fields = text[text.rfind(")") + 2 :].split(" ")
    return fields[19] if len(fields) > 19 and fields[19].isdigit() else None


def _proc_state(pid: int) -> str | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    rest = text[text.rfind(")") + 2 :]
    return rest[:1] or None


def pid_alive(pid: int) -> bool:
    """True while ``pid`` is a running process (a zombie has exited: not alive).

    ``PermissionError`` means the process exists and belongs to someone else: alive.
    """
    if not 0 < pid <= _MAX_PID:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return _proc_state(pid) != "Z"


def current_pid_domain() -> str | None:
    """``linux:<machine-id>:pid:[<pid namespace inode>]``, as the client writes
    ``pidDomain`` (checked against a live client's file); None where it cannot be known."""
    try:
        machine = Path("/etc/machine-id").read_text(encoding="ascii").strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except (OSError, UnicodeDecodeError):
        return None
    return f"linux:{machine}:{namespace}" if machine and namespace else None


# -- the registry ------------------------------------------------------------------------


def _now_ms(clock: Clock) -> int:
    return int(clock() * 1000)


def _write_entry(path: Path, obj: Mapping[str, Any]) -> None:
    # Temp file, fsync, os.replace, fsync the folder: a reader (the client included)
    # sees the old entry or the whole new one. The temp name (".<pid>.json.….tmp") is
    # not an entry name. 0600 in a 0700 folder, as the client makes it.
    import json  # (here and in _read_entry: a listing with no running client needs none)

    data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    write_atomically(path, data, mode=0o600, folder_mode=0o700)


def register_live_session(
    layout: Layout,
    *,
    session_id: str,
    cwd: str,
    kind: str = "interactive",
    entrypoint: str = "sdk-py",
    name: str | None = None,
    pid: int | None = None,
    clock: Clock = time.time,
) -> LiveSession:
    """Write ``sessions/<pid>.json`` for this process (or ``pid``), idle, atomically.

    ``kind`` is what the client calls the process (``interactive``, ``bg``, …) and
    ``entrypoint`` how it was started (``cli``, ``sdk-py``, …): a Python host is
    ``sdk-py``. An entry already there for that pid is replaced.
    """
    pid = os.getpid() if pid is None else pid
    if not 0 < pid <= _MAX_PID:
        raise Refused(f"not a pid: {pid}")
    session_folder_name(session_id)  # the one rule for an id (Refused otherwise)
    now = _now_ms(clock)
    session = LiveSession(
        pid=pid,
        session_id=session_id,
        cwd=cwd,
        started_at=now,
        proc_start=read_proc_start(pid),
        version=_sessiontree_version(),
        kind=kind,
        entrypoint=entrypoint,
        pid_domain=current_pid_domain(),
        name=name,
        status="idle",
        updated_at=now,
        status_updated_at=now,
    )
    layout.sessions_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_entry(layout.live_session_path(pid), format_live_session(session))
    return session


def _read_entry(path: Path) -> dict[str, Any]:
    """The decoded entry; never follows a symlink. Raises OSError or DataError."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(_MAX_ENTRY_BYTES + 1)
    if len(data) > _MAX_ENTRY_BYTES:
        raise DataError(str(path), "too big for a registry entry")
    import json

    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        raise DataError(str(path), f"not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise DataError(str(path), "not a JSON object")
    return obj


def read_live_session(layout: Layout, pid: int) -> LiveSession:
    """The entry of ``pid``; :class:`NotFound` when there is none."""
    path = layout.live_session_path(pid)
    try:
        obj = _read_entry(path)
    except FileNotFoundError as exc:
        raise NotFound("live session", str(pid)) from exc
    except OSError as exc:
        raise DataError(str(path), exc.strerror or "cannot read") from exc
    return parse_live_session(obj, pid=pid)


def set_status(
    layout: Layout, pid: int, status: Status, *, clock: Clock = time.time
) -> LiveSession:
    """Mark ``pid``'s entry busy or idle; ``updatedAt`` and ``statusUpdatedAt`` move with it.

    Every other field, known or not, is written back as it was (the client merges the same
    way). Only the process that owns the entry should call this.
    """
    if status not in ("busy", "idle"):
        raise Refused(f"status must be busy or idle, not {status!r}")
    path = layout.live_session_path(pid)
    try:
        obj = _read_entry(path)
    except FileNotFoundError as exc:
        raise NotFound("live session", str(pid)) from exc
    except OSError as exc:
        raise DataError(str(path), exc.strerror or "cannot read") from exc
    now = _now_ms(clock)
    obj.update(status=status, updatedAt=now, statusUpdatedAt=now)
    _write_entry(path, obj)
    return parse_live_session(obj, pid=pid)


def set_session_id(
    layout: Layout, pid: int, session_id: str, *, clock: Clock = time.time
) -> LiveSession:
    """Point ``pid``'s entry at another session: what the client writes when ``/clear``
    (or a resume inside the process) moves it to a new session. ``updatedAt`` moves;
    every other field is written back as it was. Only the owning process calls this; it
    then unregisters under the new id."""
    path = layout.live_session_path(pid)
    try:
        obj = _read_entry(path)
    except FileNotFoundError as exc:
        raise NotFound("live session", str(pid)) from exc
    except OSError as exc:
        raise DataError(str(path), exc.strerror or "cannot read") from exc
    obj.update(sessionId=session_id, updatedAt=_now_ms(clock))
    _write_entry(path, obj)
    return parse_live_session(obj, pid=pid)


def unregister_live_session(layout: Layout, pid: int, *, session_id: str | None = None) -> bool:
    """Remove ``pid``'s entry; False when there was none. With ``session_id``, only an
    entry naming that session is removed (another registration is left alone)."""
    path = layout.live_session_path(pid)
    if session_id is not None:
        try:
            if _read_entry(path).get("sessionId") != session_id:
                return False
        except FileNotFoundError:
            return False
        except (OSError, DataError):
            pass  # unreadable: ours was written whole, so this is a torn write of ours
    try:
        remove_file(path, missing_ok=False)
    except FileNotFoundError:
        return False
    except Refused:  # not a regular file: not an entry this process wrote
        return False
    return True


@contextlib.contextmanager
def live_session(
    layout: Layout,
    *,
    session_id: str,
    cwd: str,
    kind: str = "interactive",
    entrypoint: str = "sdk-py",
    name: str | None = None,
    clock: Clock = time.time,
) -> Iterator[LiveSession]:
    """Register this process as holding ``session_id`` for the ``with`` block.

    The entry goes when the block is left, by return or by exception (the process no
    longer holds the session either way). A process killed inside the block leaves a
    stale entry, which :func:`iter_live_sessions` recognises by its dead pid.
    """
    session = register_live_session(
        layout,
        session_id=session_id,
        cwd=cwd,
        kind=kind,
        entrypoint=entrypoint,
        name=name,
        clock=clock,
    )
    try:
        yield session
    finally:
        unregister_live_session(layout, session.pid, session_id=session_id)


@dataclass(frozen=True)
class LiveEntry:
    """One registry file and what became of its process.

    ``reason`` says why it is stale (``dead pid``, ``pid reused``, ``unreadable``), or, for
    an entry that could not be checked and is taken as live, why not.
    """

    path: Path
    pid: int
    session: LiveSession | None
    stale: bool
    reason: StaleReason | UncheckedReason | None
    mtime: float

    @property
    def session_id(self) -> str | None:
        return self.session.session_id if self.session is not None else None


def judge_entry(
    session: LiveSession | None, *, our_domain: str | None
) -> tuple[bool, StaleReason | UncheckedReason | None]:
    """``(stale, reason)`` of an entry, by asking the kernel about its process."""
    if session is None:
        return True, "unreadable"
    if session.pid_domain and our_domain and session.pid_domain != our_domain:
        return False, "another machine or pid namespace: cannot be checked, taken as live"
    if not pid_alive(session.pid):
        return True, "dead pid"
    if session.proc_start is not None:
        started = read_proc_start(session.pid)
        if started is not None and started != session.proc_start:
            return True, "pid reused"
    return False, None


def read_live_entry(path: Path, *, our_domain: str | None) -> LiveEntry | None:
    """The entry at ``path`` judged, or None if it is not a regular ``<pid>.json`` file."""
    if LIVE_ENTRY_NAME.match(path.name) is None:
        return None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    pid = int(path.name[: -len(".json")])
    try:
        session: LiveSession | None = parse_live_session(_read_entry(path), pid=pid)
    except FileNotFoundError:
        return None
    except (OSError, DataError):
        session = None
    stale, reason = judge_entry(session, our_domain=our_domain)
    return LiveEntry(path, pid, session, stale, reason, st.st_mtime)


def iter_live_sessions(layout: Layout) -> Iterator[LiveEntry]:
    """Every registry entry, by pid, each judged stale or not. Files with other names,
    and anything that is not a regular file (a symlink is never followed), are skipped."""
    try:
        names = [e.name for e in os.scandir(layout.sessions_dir)]
    except (FileNotFoundError, NotADirectoryError):
        return
    our_domain = current_pid_domain()
    for name in sorted(
        (n for n in names if LIVE_ENTRY_NAME.match(n)), key=lambda n: int(n[: -len(".json")])
    ):
        entry = read_live_entry(layout.sessions_dir / name, our_domain=our_domain)
        if entry is not None:
            yield entry


def live_session_ids(layout: Layout) -> set[str]:
    """Session ids some running process holds (entries that are not stale)."""
    return {
        entry.session_id
        for entry in iter_live_sessions(layout)
        if not entry.stale and entry.session_id is not None
    }


def session_holders(layout: Layout, session_id: str) -> list[LiveEntry]:
    """The running processes (entries not stale) that hold ``session_id`` open, other
    than this one."""
    return [
        entry
        for entry in iter_live_sessions(layout)
        if not entry.stale and entry.session_id == session_id and entry.pid != os.getpid()
    ]


def find_stale_entries(layout: Layout) -> list[Problem]:
    """Registry entries whose process is gone (a client killed without cleaning up)."""
    return [
        Problem(
            "stale-live-entry",
            str(entry.path),
            None,
            f"pid {entry.pid}"
            + (f" (session {entry.session_id})" if entry.session_id else "")
            + f": {entry.reason}; `sessiontree cleanup` removes it once it is old",
        )
        for entry in iter_live_sessions(layout)
        if entry.stale
    ]
