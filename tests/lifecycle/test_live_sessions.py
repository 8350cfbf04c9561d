"""``sessions/<pid>.json``: the client's shape, our writes, and telling live from stale."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree.errors import NotFound, Refused
from sessiontree.lifecycle.live import (
    LiveEntry,
    current_pid_domain,
    format_live_session,
    iter_live_sessions,
    live_session,
    live_session_ids,
    parse_live_session,
    pid_alive,
    read_live_session,
    read_proc_start,
    register_live_session,
    set_status,
    unregister_live_session,
)
from sessiontree.storage.layout import Layout

GOLDEN = Path(__file__).parents[1] / "fixtures" / "live-session" / "4398.json"
SID = "11111111-2222-4333-8444-555555555555"
OTHER = "99999999-2222-4333-8444-555555555555"


class Clock:
    def __init__(self, start: float = 1_795_995_498.953) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(tmp_path / "root")


def _stat_field_22(pid: int) -> str:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()[19]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def zombie() -> Iterator[int]:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] != "Z":
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.01)
        yield child.pid
    finally:
        child.wait()


def _write(layout: Layout, pid: int | str, body: object) -> Path:
    layout.sessions_dir.mkdir(parents=True, exist_ok=True)
    path = layout.sessions_dir / f"{pid}.json"
    path.write_text(body if isinstance(body, str) else json.dumps(body))
    return path


def _entries(layout: Layout) -> dict[int, LiveEntry]:
    return {e.pid: e for e in iter_live_sessions(layout)}


# -- the client's shape ------------------------------------------------------------------


def test_golden_file_from_the_real_client_round_trips() -> None:
    raw = json.loads(GOLDEN.read_text())
    session = parse_live_session(raw)
    assert session.pid == 4398
    assert session.session_id == "14b6d0ac-9275-4834-a59f-fb4f6acebdd9"
    assert session.cwd == "/tmp/lsprobe/w/proj"
    assert session.started_at == 1795995498953
    assert session.proc_start == "904968"
    assert session.version == "2.1.328"
    assert (session.kind, session.entrypoint) == ("interactive", "cli")
    assert session.name == "proj-3e"
    assert session.status == "idle"
    assert session.updated_at == session.status_updated_at == 1795995499113
    assert session.pid_domain == "linux:3d1219c7c4c5404aaa1f6d2a48adfda4:pid:[4026531836]"
    # Fields this version adds and sessiontree does not model are kept verbatim.
    assert session.extra["peerFeatures"] == [
        "notify_idle",
        "reply_across_default_dirs",
        "artifact_yield",
    ]
    assert session.extra["asksForConvertedSkills"] is None
    assert session.extra["nameSource"] == "derived"
    assert format_live_session(session) == raw


def test_a_field_of_an_unexpected_type_is_kept_not_dropped() -> None:
    raw = {"pid": 7, "sessionId": 12, "status": "waiting", "waitingFor": "dialog open"}
    session = parse_live_session(raw)
    assert session.session_id is None
    assert session.status == "waiting"
    assert format_live_session(session) == raw


def test_read_proc_start_is_stat_field_22() -> None:
    assert read_proc_start(os.getpid()) == _stat_field_22(os.getpid())
    assert read_proc_start(0) is None
    assert read_proc_start(-1) is None


def test_pid_domain_is_machine_and_pid_namespace() -> None:
    domain = current_pid_domain()
    if not Path("/etc/machine-id").is_file():
        pytest.skip("no /etc/machine-id here")
    machine = Path("/etc/machine-id").read_text().strip()
    assert domain == f"linux:{machine}:{os.readlink('/proc/self/ns/pid')}"
    # The same shape as the real client's.
    assert domain is not None and domain.split(":")[2] == "pid"


# -- writing -----------------------------------------------------------------------------


def test_register_writes_the_clients_fields_atomically_0600(layout: Layout) -> None:
    clock = Clock()
    session = register_live_session(layout, session_id=SID, cwd="/work/p", name="p", clock=clock)
    path = layout.live_session_path(os.getpid())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(layout.sessions_dir.stat().st_mode) == 0o700
    raw = json.loads(path.read_text())
    assert raw["pid"] == os.getpid()
    assert raw["sessionId"] == SID
    assert raw["cwd"] == "/work/p"
    assert raw["startedAt"] == raw["updatedAt"] == raw["statusUpdatedAt"] == 1795995498953
    assert raw["procStart"] == _stat_field_22(os.getpid())
    assert raw["status"] == "idle"
    assert raw["kind"] == "interactive"
    assert raw["entrypoint"] == "sdk-py"
    assert raw["name"] == "p"
    assert isinstance(raw["version"], str)
    assert raw.get("pidDomain") == current_pid_domain()
    assert read_live_session(layout, os.getpid()) == session
    assert [p.name for p in layout.sessions_dir.iterdir()] == [path.name]  # no temp left


def test_set_status_moves_both_times_and_keeps_unknown_fields(layout: Layout) -> None:
    raw = json.loads(GOLDEN.read_text()) | {"pid": os.getpid(), "futureField": {"x": 1}}
    _write(layout, os.getpid(), raw)
    clock = Clock(1_800_000_000.5)
    busy = set_status(layout, os.getpid(), "busy", clock=clock)
    assert busy.status == "busy"
    assert busy.updated_at == busy.status_updated_at == 1_800_000_000_500
    on_disk = json.loads(layout.live_session_path(os.getpid()).read_text())
    assert on_disk == raw | {
        "status": "busy",
        "updatedAt": 1_800_000_000_500,
        "statusUpdatedAt": 1_800_000_000_500,
    }
    assert stat.S_IMODE(layout.live_session_path(os.getpid()).stat().st_mode) == 0o600
    clock.now += 2
    idle = set_status(layout, os.getpid(), "idle", clock=clock)
    assert (idle.status, idle.status_updated_at) == ("idle", 1_800_000_002_500)
    assert idle.started_at == raw["startedAt"]


def test_set_status_refuses_other_states_and_missing_entries(layout: Layout) -> None:
    register_live_session(layout, session_id=SID, cwd="/w")
    with pytest.raises(Refused):
        set_status(layout, os.getpid(), "waiting")  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        set_status(layout, _dead_pid(), "busy")


def test_unregister_removes_only_the_named_session(layout: Layout) -> None:
    register_live_session(layout, session_id=SID, cwd="/w")
    assert unregister_live_session(layout, os.getpid(), session_id=OTHER) is False
    assert layout.live_session_path(os.getpid()).exists()
    assert unregister_live_session(layout, os.getpid(), session_id=SID) is True
    assert not layout.live_session_path(os.getpid()).exists()
    assert unregister_live_session(layout, os.getpid()) is False


def test_live_session_context_registers_and_removes(layout: Layout) -> None:
    with live_session(layout, session_id=SID, cwd="/w") as session:
        assert session.pid == os.getpid()
        assert live_session_ids(layout) == {SID}
    assert not layout.live_session_path(os.getpid()).exists()
    assert live_session_ids(layout) == set()

    with pytest.raises(RuntimeError), live_session(layout, session_id=SID, cwd="/w"):
        raise RuntimeError("boom")
    assert not layout.live_session_path(os.getpid()).exists()


# -- live or stale -----------------------------------------------------------------------


def test_iter_live_sessions_tells_live_from_stale(layout: Layout, zombie: int) -> None:
    me = os.getpid()
    dead = _dead_pid()
    register_live_session(layout, session_id=SID, cwd="/w")
    _write(layout, dead, {"pid": dead, "sessionId": OTHER, "procStart": "1"})
    _write(layout, zombie, {"pid": zombie, "sessionId": OTHER})
    _write(layout, 1, {"pid": 1, "sessionId": OTHER, "procStart": "not-pid-1-start"})
    _write(layout, 4_000_001, "{not json")
    entries = _entries(layout)
    assert set(entries) == {me, dead, zombie, 1, 4_000_001}
    assert (entries[me].stale, entries[me].reason, entries[me].session_id) == (False, None, SID)
    assert (entries[dead].stale, entries[dead].reason) == (True, "dead pid")
    assert (entries[zombie].stale, entries[zombie].reason) == (True, "dead pid")
    assert (entries[1].stale, entries[1].reason) == (True, "pid reused")
    assert (entries[4_000_001].stale, entries[4_000_001].reason) == (True, "unreadable")
    assert entries[4_000_001].session is None
    assert live_session_ids(layout) == {SID}


def test_reused_pid_is_stale_only_when_both_start_times_are_known(layout: Layout) -> None:
    me = os.getpid()
    _write(layout, me, {"pid": me, "sessionId": SID, "procStart": "12"})
    assert _entries(layout)[me].reason == "pid reused"
    _write(layout, me, {"pid": me, "sessionId": SID})  # an older client: no procStart
    assert _entries(layout)[me].stale is False
    assert live_session_ids(layout) == {SID}


def test_entry_from_another_pid_domain_is_taken_as_live(layout: Layout) -> None:
    if current_pid_domain() is None:
        pytest.skip("no pid domain here")
    dead = _dead_pid()
    _write(layout, dead, {"pid": dead, "sessionId": SID, "pidDomain": "linux:other:pid:[1]"})
    entry = _entries(layout)[dead]
    assert entry.stale is False
    assert entry.reason is not None and "cannot be checked" in entry.reason
    assert live_session_ids(layout) == {SID}


def test_only_digit_json_regular_files_are_entries(layout: Layout, tmp_path: Path) -> None:
    me = os.getpid()
    register_live_session(layout, session_id=SID, cwd="/w")
    folder = layout.sessions_dir
    (folder / f"{me}.7c64a1.key").write_text('{"peerToken": "x"}')
    (folder / f".{me}.json.abc.tmp").write_text("{}")
    (folder / "abc.json").write_text(json.dumps({"pid": me, "sessionId": OTHER}))
    (folder / "٣.json").write_text(json.dumps({"pid": me, "sessionId": OTHER}))
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"pid": me, "sessionId": OTHER}))
    (folder / "12345.json").symlink_to(outside)
    assert list(_entries(layout)) == [me]
    assert live_session_ids(layout) == {SID}


def test_pid_alive_edges() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(_dead_pid())
    assert not pid_alive(0)  # os.kill(0, 0) would signal our own group
    assert not pid_alive(-1)
    assert pid_alive(1)  # init: alive, even where signalling it is not permitted


def test_no_registry_folder_means_nothing_live(layout: Layout) -> None:
    assert list(iter_live_sessions(layout)) == []
    assert live_session_ids(layout) == set()
