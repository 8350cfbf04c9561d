"""Capturing checkpoints: backups and records as the real client writes them, reuse by stat,
dedup by hard links, reopening a session, and restore to any prompt (a property)."""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.checkpoints.capture import FileHistory, FileStamp, racy_window
from sessiontree.checkpoints.read import fold_checkpoints, read_checkpoints
from sessiontree.checkpoints.restore import apply_restore, plan_restore
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.model.records import Record
from sessiontree.storage.backups import BackupStore, measure_disk_use, write_backup
from sessiontree.storage.jsonl import append_records, format_line
from sessiontree.storage.layout import Layout, backup_name
from tests.conftest import FIXTURES

SID = "0f31836f-46f1-45f6-85ba-7878a822a884"
NOTES = b"# Notes\noriginal line\n"
PAST = time.time() - 3600  # an mtime old enough for a stat to be trusted


class Clock:
    """Deterministic time stamps, a few milliseconds apart."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 19, 16, 27, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=7)
        return self.now


def make(tmp_path: Path, session_id: str = SID) -> tuple[FileHistory, Path]:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    return FileHistory(Layout(tmp_path / "root"), session_id, project, clock=Clock()), project


def entries(record: dict[str, Any]) -> dict[str, tuple[int, str | None]]:
    tracked = record["snapshot"]["trackedFileBackups"]
    return {path: (e["version"], e["backupFileName"]) for path, e in tracked.items()}


def age(*paths: Path) -> None:
    for path in paths:
        os.utime(path, (PAST, PAST))


# -- the real client's records, replayed -------------------------------------------------


def fixture_records(scenario: str) -> tuple[list[str], Path, str]:
    """The file-history lines of a fixture session, its file-history folder, its project."""
    home = FIXTURES / scenario / "claude-home"
    [transcript] = (home / "projects").glob("*/*.jsonl")
    lines = [ln for ln in transcript.read_text().splitlines() if '"type":"file-history' in ln]
    project = json.loads((FIXTURES / scenario / "scenario.json").read_text())["project"]
    return lines, home / "file-history" / transcript.stem, project


STAMP = re.compile(r'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"')


def masked(line: str) -> str:
    return STAMP.sub('"T"', line)


def replay(tmp_path: Path, scenario: str) -> tuple[list[str], list[str], FileHistory]:
    """Run the scenario's prompts through FileHistory; return (ours, theirs), masked.

    01-basic: p1 writes a.txt; p2 edits notes.md; p3 edits a.txt and runs Bash (b.txt).
    02-rewind-both: the same, then "Restore code and conversation" to p2, then p4 writes
    c.txt.
    """
    theirs, _, original = fixture_records(scenario)
    raw = [json.loads(line) for line in theirs]
    session_id = fixture_session(scenario)
    history, project = make(tmp_path, session_id)
    (project / "notes.md").write_bytes(NOTES)
    prompts = list(dict.fromkeys(r["messageId"] for r in raw if "snapshot" in r))
    tools = {r["trackingPath"]: r["messageId"] for r in raw if "trackingPath" in r}
    ours: list[dict[str, Any]] = []

    def edit(name: str, content: bytes) -> None:
        delta = history.before_edit(
            project / name,
            prompt_uuid=history.current_prompt or "",
            tool_use_record_uuid=tools[name],
        )
        if delta is not None:
            ours.append(delta)
        (project / name).write_bytes(content)

    ours.append(history.snapshot(prompts[0]))
    edit("a.txt", b"alpha\n")
    ours.append(history.snapshot(prompts[1]))
    edit("notes.md", b"# Notes\nedited line\n")
    ours.append(history.snapshot(prompts[2]))
    edit("a.txt", b"gamma\n")
    (project / "b.txt").write_bytes(b"made-by-bash\n")
    marker = history.note_untracked_changes()
    assert marker is not None
    ours.append(marker)
    assert history.note_untracked_changes() is None  # once per prompt
    if scenario == "02-rewind-both":
        checkpoints = fold_checkpoints([Record(r, i) for i, r in enumerate(ours, 1)])
        plan = plan_restore(history.layout, session_id, project, checkpoints, prompts[1])
        apply_restore(history.layout, plan, stamp="t")
        ours.append(history.snapshot(prompts[3]))
        edit("c.txt", b"cee\n")
    encoded = [format_line(r).decode().rstrip("\n") for r in ours]
    for name in ("a.txt", "notes.md", "c.txt"):
        mine = backup_name(str(project / name), 1).split("@")[0]
        real = backup_name(f"{original}/{name}", 1).split("@")[0]
        encoded = [e.replace(mine, real) for e in encoded]
    encoded = [e.replace(str(project), original) for e in encoded]
    return [masked(e) for e in encoded], [masked(t) for t in theirs], history


def fixture_session(scenario: str) -> str:
    [transcript] = (FIXTURES / scenario / "claude-home" / "projects").glob("*/*.jsonl")
    return transcript.stem


@pytest.mark.parametrize("scenario", ["01-basic", "02-rewind-both"])
def test_records_equal_the_real_clients_line_for_line(tmp_path: Path, scenario: str) -> None:
    ours, theirs, _ = replay(tmp_path, scenario)
    assert ours == theirs  # same records, keys in the same order, time stamps masked


@pytest.mark.parametrize("scenario", ["01-basic", "02-rewind-both"])
def test_backups_equal_the_real_clients(tmp_path: Path, scenario: str) -> None:
    _, theirs, history = replay(tmp_path, scenario)
    _, folder, original = fixture_records(scenario)
    project = Path(history.cwd)
    named = {
        backup_name(str(project / name), v): backup_name(f"{original}/{name}", v)
        for name in ("a.txt", "notes.md", "c.txt")
        for v in range(1, 5)
    }
    recorded = set(re.findall(r'"backupFileName":"([^"]+)"', "".join(theirs)))
    ours = sorted(history.layout.backup_dir(history.session_id).iterdir())
    assert {named[p.name] for p in ours} == recorded
    for path in ours:
        assert path.read_bytes() == (folder / named[path.name]).read_bytes()


# -- versions, reuse, null ---------------------------------------------------------------


def test_first_edit_backs_up_once_and_unchanged_files_reuse_their_entry(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    notes = project / "notes.md"
    notes.write_bytes(NOTES)
    history.snapshot("p1")
    delta = history.before_edit(notes, prompt_uuid="p1", tool_use_record_uuid="t1")
    assert delta is not None
    assert delta["messageId"] == "t1" and delta["snapshotMessageId"] == "p1"
    assert delta["trackingPath"] == "notes.md"
    assert delta["backup"]["version"] == 1
    notes.write_bytes(b"# Notes\nedited\n")
    assert history.before_edit(notes, prompt_uuid="p1", tool_use_record_uuid="t2") is None
    second = history.snapshot("p2")
    third = history.snapshot("p3")
    name = backup_name(str(notes), 2)
    assert entries(second) == entries(third) == {"notes.md": (2, name)}
    # reused as it was: same version, same backupTime, older than the new snapshot
    assert second["snapshot"]["trackedFileBackups"] == third["snapshot"]["trackedFileBackups"]
    assert third["snapshot"]["timestamp"] > second["snapshot"]["timestamp"]
    backups = history.layout.backup_dir(SID)
    assert (backups / backup_name(str(notes), 1)).read_bytes() == NOTES


def test_created_deleted_recreated(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    new = project / "new.txt"
    history.snapshot("p1")
    delta = history.before_edit(new, prompt_uuid="p1", tool_use_record_uuid="t1")
    assert delta is not None and delta["backup"]["backupFileName"] is None
    new.write_bytes(b"one\n")
    assert entries(history.snapshot("p2")) == {"new.txt": (2, backup_name(str(new), 2))}
    new.unlink()  # e.g. rm in Bash: caught at the next prompt
    # a missing file gets null at the next version, at every prompt (client 2.1.328)
    assert entries(history.snapshot("p3")) == {"new.txt": (3, None)}
    assert entries(history.snapshot("p4")) == {"new.txt": (4, None)}
    new.write_bytes(b"two\n")
    assert entries(history.snapshot("p5")) == {"new.txt": (5, backup_name(str(new), 5))}


def test_content_put_back_gets_a_new_version_sharing_the_old_inode(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    notes = project / "notes.md"
    notes.write_bytes(NOTES)
    history.snapshot("p1")
    history.before_edit(notes, prompt_uuid="p1", tool_use_record_uuid="t1")
    notes.write_bytes(b"edited\n")
    history.snapshot("p2")
    notes.write_bytes(NOTES)  # back as it was: only the latest backup is compared (02)
    assert entries(history.snapshot("p3"))["notes.md"] == (3, backup_name(str(notes), 3))
    backups = history.layout.backup_dir(SID)
    v1, v3 = (backups / backup_name(str(notes), v) for v in (1, 3))
    assert v1.stat().st_ino == v3.stat().st_ino
    assert v1.stat().st_nlink == 2


def test_paths_outside_and_below_the_cwd(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    (project / "src").mkdir()
    inner, outer = project / "src" / "app.py", tmp_path / "elsewhere.txt"
    inner.write_bytes(b"print()\n")
    outer.write_bytes(b"out\n")
    history.snapshot("p1")
    first = history.before_edit(inner, prompt_uuid="p1", tool_use_record_uuid="t1")
    second = history.before_edit(str(outer), prompt_uuid="p1", tool_use_record_uuid="t2")
    assert first is not None and second is not None
    assert first["trackingPath"] == "src/app.py"
    # realParentDir is the file's own folder, as the real client writes it (checked on
    # 2.1.328: sub/y.txt has realParentDir <project>/sub) — not the cwd
    assert first["backup"]["realParentDir"] == os.path.realpath(project / "src")
    assert second["trackingPath"] == str(outer)
    assert second["backup"]["realParentDir"] == os.path.realpath(tmp_path)
    sibling = tmp_path / "proj-other" / "x.txt"  # shares the cwd's prefix, is outside it
    delta = history.before_edit(sibling, prompt_uuid="p1", tool_use_record_uuid="t3")
    assert delta is not None and delta["trackingPath"] == str(sibling)


def test_backup_keeps_the_files_mode(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    script = project / "run.sh"
    script.write_bytes(b"#!/bin/sh\n")
    script.chmod(0o750)
    history.snapshot("p1")
    history.before_edit(script, prompt_uuid="p1", tool_use_record_uuid="t1")
    backup = history.layout.backup_path(SID, backup_name(str(script), 1))
    assert stat.S_IMODE(backup.stat().st_mode) == 0o750
    script.chmod(0o700)  # only the mode changed: the client backs it up again
    assert entries(history.snapshot("p2"))["run.sh"][0] == 2


def test_edits_need_their_prompts_snapshot_first(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    with pytest.raises(Refused):
        history.before_edit(project / "a", prompt_uuid="p1", tool_use_record_uuid="t")
    history.snapshot("p1")
    with pytest.raises(Refused):
        history.before_edit(project / "a", prompt_uuid="p0", tool_use_record_uuid="t")


def test_a_file_that_cannot_be_backed_up_keeps_its_entry(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    path = project / "a.txt"
    path.write_bytes(b"a\n")
    history.snapshot("p1")
    history.before_edit(path, prompt_uuid="p1", tool_use_record_uuid="t1")
    path.unlink()
    path.mkdir()  # not a regular file any more
    assert entries(history.snapshot("p2")) == {"a.txt": (1, backup_name(str(path), 1))}
    assert [f.reason for f in history.failures] == ["not a regular file"]
    folder = project / "folder"
    folder.mkdir()
    # not trackable: the client flags the prompt's snapshot instead, once
    marker = history.before_edit(folder, prompt_uuid="p2", tool_use_record_uuid="t2")
    assert marker is not None and marker["snapshot"]["hasUntrackedChanges"] is True
    assert entries(marker) == {"a.txt": (1, backup_name(str(path), 1))}
    assert history.before_edit(folder, prompt_uuid="p2", tool_use_record_uuid="t3") is None
    assert "folder" not in history.files


def test_a_same_size_write_right_after_the_backup_is_seen() -> None:
    """A stat taken in the same clock tick as the write is re-checked by content."""
    now = time.time_ns()
    fresh = FileStamp(5, now - 1_000, now, 1, 1, 0o644, taken_ns=now)
    old = FileStamp(5, now - 5_000_000_001, now, 1, 1, 0o644, taken_ns=now)
    whole_second = (now // 1_000_000_000 - 2) * 1_000_000_000  # a 1-2 s clock (FAT, HFS+)
    coarse = FileStamp(5, whole_second, now, 1, 1, 0o644, taken_ns=now)
    assert not fresh.trusted and old.trusted and not coarse.trusted
    assert racy_window(whole_second) > racy_window(whole_second + 1)


@pytest.mark.parametrize(("taken_after_write_ns", "version"), [(1, 2), (10**10, 1)])
def test_a_racy_stat_is_checked_by_content(
    tmp_path: Path, taken_after_write_ns: int, version: int
) -> None:
    """A stat that matches but was taken in the write's clock tick proves nothing; a
    trusted one is believed (that is the point: no read)."""
    history, project = make(tmp_path)
    path = project / "a.txt"
    path.write_bytes(b"one\n")
    history.snapshot("p1")
    history.before_edit(path, prompt_uuid="p1", tool_use_record_uuid="t")
    path.write_bytes(b"two\n")  # same size; as if no field of its stat had changed:
    now = os.stat(path)
    history.files["a.txt"].stamp = FileStamp.of(now, now.st_mtime_ns + taken_after_write_ns)
    assert entries(history.snapshot("p2"))["a.txt"][0] == version


def test_same_size_edits_in_quick_succession(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    path = project / "a.txt"
    history.snapshot("p0")
    history.before_edit(path, prompt_uuid="p0", tool_use_record_uuid="t")
    for n in range(1, 30):
        path.write_bytes(b"%04d\n" % n)  # same size, within one mtime tick often
        record = history.snapshot(f"p{n}")
        name = record["snapshot"]["trackedFileBackups"]["a.txt"]["backupFileName"]
        assert history.layout.backup_path(SID, name).read_bytes() == b"%04d\n" % n


# -- reopening ---------------------------------------------------------------------------


def test_load_continues_versions_and_reuse(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    a, b = project / "a.txt", project / "b.txt"
    a.write_bytes(b"a1\n")
    transcript = history.layout.transcript_path(str(project), SID)
    records: list[dict[str, Any] | None] = [history.snapshot("p1")]
    records.append(history.before_edit(a, prompt_uuid="p1", tool_use_record_uuid="t1"))
    a.write_bytes(b"a2\n")
    records.append(history.snapshot("p2"))
    records.append(history.before_edit(b, prompt_uuid="p2", tool_use_record_uuid="t2"))
    b.write_bytes(b"b\n")
    records.append(_prompt_record(SID, "p2", str(project)))
    append_records(transcript, [r for r in records if r is not None])
    reopened = FileHistory.load(history.layout, Transcript.open(transcript), clock=Clock())
    assert list(reopened.files) == ["a.txt", "b.txt"]
    assert reopened.current_prompt == "p2"
    a.write_bytes(b"a3\n")
    assert entries(reopened.snapshot("p3")) == {
        "a.txt": (3, backup_name(str(a), 3)),
        "b.txt": (2, backup_name(str(b), 2)),
    }
    assert entries(reopened.snapshot("p4")) == entries(reopened.snapshot("p5"))
    assert (
        reopened.before_edit(a, prompt_uuid="p5", tool_use_record_uuid="t") is None
    )  # already tracked: no new v1


def test_load_a_real_client_session(tmp_path: Path, fixture_root: Any) -> None:
    """Reopen 02 where the client left it: c.txt tracked at v1 (null), notes.md at v3."""
    root = fixture_root("02-rewind-both")
    project = tmp_path / "work"
    shutil.copytree(FIXTURES / "02-rewind-both" / "workdir-after", project)
    for folder in (root, project):  # fixture copies are read-only
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    [path] = (root / "projects").glob("*/*.jsonl")
    transcript = Transcript.open(path)
    history = FileHistory.load(Layout(root), transcript, cwd=str(project))
    versions = {p: (t.top_version, t.latest and t.latest.version) for p, t in history.files.items()}
    assert versions == {"a.txt": (2, 2), "notes.md": (3, 3), "c.txt": (1, 1)}
    record = history.snapshot("next")
    # unchanged files keep the client's entries as they were (its names, times, folder);
    # c.txt exists now: v2, named after the file's new place
    last = transcript.metadata("file-history-snapshot")[-1]
    theirs = last.get("snapshot")["trackedFileBackups"]
    ours = record["snapshot"]["trackedFileBackups"]
    assert ours["a.txt"] == theirs["a.txt"] and ours["notes.md"] == theirs["notes.md"]
    assert entries(record)["c.txt"] == (2, backup_name(str(project / "c.txt"), 2))
    assert history.failures == []


def _prompt_record(session_id: str, uuid: str, cwd: str) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "message": {"role": "user", "content": "hello"},
        "uuid": uuid,
        "timestamp": "2026-11-29T19:16:27.352Z",
        "cwd": cwd,
        "sessionId": session_id,
    }


# -- stat only ---------------------------------------------------------------------------


class Reads:
    """Counts every way a file can be opened while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for owner, name in (
            (os, "open"),
            (builtins, "open"),
            (io, "open"),
            (Path, "open"),
            (Path, "read_bytes"),
            (Path, "read_text"),
        ):
            monkeypatch.setattr(owner, name, self._counting(getattr(owner, name), name))

    def _counting(self, real: Any, name: str) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(os.fspath(args[0]))
            return real(*args, **kwargs)

        return wrapper


def test_snapshot_of_1000_unchanged_files_reads_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history, project = make(tmp_path)
    paths = []
    for i in range(1000):
        path = project / f"pkg{i % 10}" / f"f{i:04d}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x = %d\n" % i)
        paths.append(path)
    age(*paths)
    history.snapshot("p1")
    for i, path in enumerate(paths):
        history.before_edit(path, prompt_uuid="p1", tool_use_record_uuid=f"t{i}")
    history.snapshot("p2")
    reads = Reads(monkeypatch)
    record = history.snapshot("p3")
    monkeypatch.undo()
    assert reads.calls == []
    assert len(record["snapshot"]["trackedFileBackups"]) == 1000
    assert {e["version"] for e in record["snapshot"]["trackedFileBackups"].values()} == {1}


class Stats:
    """Counts every ``stat``, ``lstat`` and ``fstat`` (``Path.stat``/``lstat`` go through
    ``os.stat``) while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        for name in ("stat", "lstat", "fstat"):
            monkeypatch.setattr(os, name, self._counting(getattr(os, name)))

    def _counting(self, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return real(*args, **kwargs)

        return wrapper


def _stats_to_back_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int) -> int:
    """Stat calls to back up ``count`` unchanged files of one size (the worst case for a
    lookup by size), then to back them up again in a second session with a fresh store
    (which scans, hashes and links each of them)."""
    project = tmp_path / f"proj{count}"
    layout = Layout(tmp_path / f"root{count}")
    paths = []
    for i in range(count):
        path = project / f"pkg{i % 10}" / f"f{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x = %06d\n" % i)
        paths.append(path)
    age(*paths)
    sessions = [f"00000000-0000-4000-8000-{n:012d}" for n in (1, 2)]
    histories = [
        FileHistory(layout, s, project, store=BackupStore(layout, fsync=False)) for s in sessions
    ]
    for history in histories:
        history.snapshot("p1")
    stats = Stats(monkeypatch)
    for history in histories:
        for i, path in enumerate(paths):
            history.before_edit(path, prompt_uuid="p1", tool_use_record_uuid=f"t{i}")
    monkeypatch.undo()
    second = layout.backup_path(sessions[1], backup_name(str(paths[-1]), 1))
    assert second.stat().st_nlink == 2  # the second session's backups are links
    return stats.calls


def test_backing_up_unchanged_files_stats_each_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linear, not quadratic: the content index once stat-ed every same-size backup for
    each new backup (~500,000 ``lstat`` calls for 1,000 files of one size)."""
    small = _stats_to_back_up(tmp_path, monkeypatch, 1000)
    large = _stats_to_back_up(tmp_path, monkeypatch, 4000)
    assert small <= 30 * 1000, small
    assert large / small < 5, (small, large)  # 4x the files; quadratic would be 16x


def test_a_changed_file_among_unchanged_ones_is_read_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history, project = make(tmp_path)
    paths = [project / f"f{i}.txt" for i in range(20)]
    for path in paths:
        path.write_bytes(b"same\n")
    age(*paths)
    history.snapshot("p1")
    for path in paths:
        history.before_edit(path, prompt_uuid="p1", tool_use_record_uuid="t")
    paths[3].write_bytes(b"diff\n")  # same size, new content
    paths[4].write_bytes(b"longer\n")  # a new size: no need to read the old bytes
    reads = Reads(monkeypatch)
    record = history.snapshot("p2")
    monkeypatch.undo()
    got = entries(record)
    assert {p for p, (v, _) in got.items() if v == 2} == {"f3.txt", "f4.txt"}
    changed_v1 = history.layout.backup_path(SID, backup_name(str(paths[3]), 1))
    read = {c for c in reads.calls if not c.startswith(str(changed_v1.parent) + "/.")}
    # the changed files are read to be backed up, and only the same-size one compared
    assert read - {str(changed_v1.parent)} == {str(paths[3]), str(paths[4]), str(changed_v1)}


# -- dedup -------------------------------------------------------------------------------


def test_one_inode_for_identical_versions_across_sessions(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    layout = Layout(tmp_path / "root")
    config = project / "config.toml"
    config.write_bytes(b"[tool]\nname = 'x'\n" * 100)
    store = BackupStore(layout)
    sessions = [f"00000000-0000-4000-8000-{n:012d}" for n in range(5)]
    for session_id in sessions:
        history = FileHistory(layout, session_id, project, store=store)
        history.snapshot("p")
        history.before_edit(config, prompt_uuid="p", tool_use_record_uuid="t")
    names = [layout.backup_path(s, backup_name(str(config), 1)) for s in sessions]
    assert len({n.stat().st_ino for n in names}) == 1
    assert names[0].stat().st_nlink == 5
    use = measure_disk_use(layout)
    assert (use.files, use.inodes) == (5, 1)
    assert use.naive_bytes == 5 * use.stored_bytes and use.saved_bytes == 4 * use.stored_bytes
    # a fresh store finds them too (the index is rebuilt from disk)
    fresh = FileHistory(layout, "00000000-0000-4000-8000-999999999999", project)
    fresh.snapshot("p")
    fresh.before_edit(config, prompt_uuid="p", tool_use_record_uuid="t")
    assert names[0].stat().st_nlink == 6


def test_dedup_scope_session_and_off(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    data = b"content\n"
    one, two = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
    name, other = "0123456789abcdef@v1", "0123456789abcdef@v2"
    BackupStore(layout).write(one, name, data, mode=0o644)
    scoped = BackupStore(layout, scope="session")
    assert scoped.write(two, name, data, mode=0o644).linked_to is None
    assert scoped.write(two, other, data, mode=0o644).linked_to == layout.backup_path(two, name)
    plain = BackupStore(layout, link=False)
    assert plain.write(two, "fedcba9876543210@v1", data, mode=0o644).linked_to is None
    # a different mode is a different backup: restore gives the file the backup's mode
    assert BackupStore(layout).write(two, "aaaaaaaaaaaaaaaa@v1", data, mode=0o600).linked_to is None


@pytest.mark.parametrize("code", [errno.EXDEV, errno.EPERM, errno.EMLINK])
def test_falls_back_to_a_copy_when_linking_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    layout = Layout(tmp_path / "root")
    store = BackupStore(layout)
    store.write(SID, "0123456789abcdef@v1", b"same\n", mode=0o644)

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "link", refuse)
    stored = store.write(SID, "0123456789abcdef@v2", b"same\n", mode=0o644)
    assert stored.linked_to is None
    assert stored.path.read_bytes() == b"same\n" and stored.path.stat().st_nlink == 1
    assert sorted(p.name for p in layout.backup_dir(SID).iterdir()) == [
        "0123456789abcdef@v1",
        "0123456789abcdef@v2",
    ]  # no temp file left behind


def test_a_backup_changed_since_indexing_is_not_linked(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    store = BackupStore(layout)
    first = store.write(SID, "0123456789abcdef@v1", b"aaaa\n", mode=0o644).path
    # someone rewrites that name with other bytes of the same size (a new inode)
    write_backup(first, b"bbbb\n", mode=0o644)
    stored = store.write(SID, "0123456789abcdef@v2", b"aaaa\n", mode=0o644)
    assert stored.linked_to is None and stored.path.read_bytes() == b"aaaa\n"
    assert first.read_bytes() == b"bbbb\n"


def test_a_backup_replaced_between_the_check_and_the_link_is_not_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = Layout(tmp_path / "root")
    store = BackupStore(layout)
    first = store.write(SID, "0123456789abcdef@v1", b"aaaa\n", mode=0o644).path
    real_link = os.link

    def replaced_first(source: Any, *args: Any, **kwargs: Any) -> None:
        # a client rewrites that backup just after the index checked it
        write_backup(first, b"bbbb\n", mode=0o644)
        real_link(source, *args, **kwargs)

    monkeypatch.setattr(os, "link", replaced_first)
    stored = store.write(SID, "0123456789abcdef@v2", b"aaaa\n", mode=0o644)
    monkeypatch.undo()
    assert stored.linked_to is None and stored.path.read_bytes() == b"aaaa\n"
    assert first.read_bytes() == b"bbbb\n"
    assert stored.path.stat().st_ino != first.stat().st_ino
    assert sorted(p.name for p in layout.backup_dir(SID).iterdir()) == [
        "0123456789abcdef@v1",
        "0123456789abcdef@v2",
    ]  # no temp link left behind
    # the replaced entry is gone from the index: the same bytes again link to v2
    assert store.write(SID, "0123456789abcdef@v3", b"aaaa\n", mode=0o644).linked_to == stored.path


def test_a_name_rewritten_since_indexing_is_written_again_not_taken_as_there(
    tmp_path: Path,
) -> None:
    layout = Layout(tmp_path / "root")
    store = BackupStore(layout)
    first = store.write(SID, "0123456789abcdef@v1", b"aaaa\n", mode=0o644).path
    write_backup(first, b"bbbb\n", mode=0o644)  # same size, other bytes, a new inode
    assert store.write(SID, "0123456789abcdef@v1", b"aaaa\n", mode=0o644).linked_to is None
    assert first.read_bytes() == b"aaaa\n"


def test_rewriting_a_linked_name_leaves_the_other_names_alone(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    store = BackupStore(layout)
    v1 = store.write(SID, "0123456789abcdef@v1", b"one\n", mode=0o644).path
    v2 = store.write(SID, "0123456789abcdef@v2", b"one\n", mode=0o644).path
    assert v1.stat().st_ino == v2.stat().st_ino
    store.write(SID, "0123456789abcdef@v2", b"two\n", mode=0o644)
    assert v1.read_bytes() == b"one\n" and v2.read_bytes() == b"two\n"
    assert store.write(SID, "0123456789abcdef@v2", b"two\n", mode=0o644).linked_to is None


def test_disk_saved_on_an_edit_heavy_session(tmp_path: Path) -> None:
    """Files edited back and forth over many prompts: versions repeat, disk does not."""
    history, project = make(tmp_path)
    files = [project / f"mod{i}.py" for i in range(6)]
    variants = [b"def f():\n    return %d\n" % n * 40 for n in range(3)]
    for path in files:
        path.write_bytes(variants[0])
    history.snapshot("p0")
    for path in files:
        history.before_edit(path, prompt_uuid="p0", tool_use_record_uuid="t")
    versions = len(files)
    for prompt in range(1, 30):
        for i, path in enumerate(files):
            content = variants[(prompt + i) % 3]
            versions += content != path.read_bytes()
            path.write_bytes(content)
        history.snapshot(f"p{prompt}")
    use = measure_disk_use(history.layout, SID)
    assert use.files == versions > 150
    assert use.inodes == 3  # one per distinct content
    assert use.ratio < 0.02


# -- restore to any prompt: the property -------------------------------------------------

NAMES = ("a.txt", "b.txt", "c.txt")
CONTENT = st.sampled_from([b"", b"one\n", b"two\n", b"three\n", bytes(range(256))])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("prompt")),
        st.tuples(st.just("write"), st.sampled_from(NAMES), CONTENT),
        st.tuples(st.just("delete"), st.sampled_from(NAMES)),
        st.tuples(st.just("bash"), st.sampled_from(NAMES), CONTENT),
    ),
    max_size=30,
)
INITIAL = st.fixed_dictionaries({name: st.one_of(st.none(), CONTENT) for name in NAMES})

State = dict[str, bytes | None]


def read_state(project: Path, names: Iterator[str] | tuple[str, ...]) -> State:
    return {n: (project / n).read_bytes() if (project / n).exists() else None for n in names}


def put(path: Path, content: bytes | None) -> None:
    if content is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(content)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(initial=INITIAL, ops=OPS, order=st.randoms(use_true_random=False))
def test_restore_to_any_prompt_gives_the_files_as_they_were(
    initial: State, ops: list[tuple[Any, ...]], order: Any
) -> None:
    """Edits through the tools (before_edit, then write or delete), changes by Bash to
    files already tracked, prompts; then restore code to every prompt, in random order:
    each time the tracked files are exactly as they were at that prompt, and files
    never tracked (``keep.txt``, names no tool touched) are as they were at the end."""
    with tempfile.TemporaryDirectory() as scratch:
        history, project = make(Path(scratch))
        for name, content in initial.items():
            put(project / name, content)
        (project / "keep.txt").write_bytes(b"untracked\n")
        records: list[dict[str, Any]] = []
        states: dict[str, State] = {}
        for number, op in enumerate([("prompt",), *ops]):
            if op[0] == "prompt":
                prompt = f"p{number}"
                records.append(history.snapshot(prompt))
                states[prompt] = read_state(project, NAMES)
                continue
            path = project / op[1]
            if op[0] == "bash":
                if op[1] in history.files:  # untracked files changed by Bash: blind spot
                    put(path, op[2])
                continue
            delta = history.before_edit(
                path, prompt_uuid=history.current_prompt or "", tool_use_record_uuid=f"t{number}"
            )
            if delta is not None:
                records.append(delta)
            put(path, op[2] if op[0] == "write" else None)
        transcript = history.layout.transcript_path(str(project), SID)
        append_records(transcript, records)
        checkpoints = read_checkpoints(Transcript.open(transcript))
        assert [c.message_id for c in checkpoints] == list(states)
        tracked = tuple(history.files)
        untouched = read_state(project, tuple(n for n in NAMES if n not in tracked))
        prompts = list(states)
        order.shuffle(prompts)
        for k, prompt in enumerate(prompts):
            plan = plan_restore(history.layout, SID, project, checkpoints, prompt)
            apply_restore(history.layout, plan, stamp=f"{k:03d}")
            expected = {n: states[prompt][n] for n in tracked}
            assert read_state(project, tracked) == expected, prompt
            assert read_state(project, tuple(untouched)) == untouched
            assert (project / "keep.txt").read_bytes() == b"untracked\n"


def test_restore_a_file_in_a_subfolder(tmp_path: Path) -> None:
    history, project = make(tmp_path)
    (project / "src").mkdir()
    app = project / "src" / "app.py"
    app.write_bytes(b"v1\n")
    records: list[dict[str, Any] | None] = [history.snapshot("p1")]
    records.append(history.before_edit(app, prompt_uuid="p1", tool_use_record_uuid="t"))
    app.write_bytes(b"v2\n")
    records.append(history.snapshot("p2"))
    checkpoints = fold_checkpoints([Record(r, i) for i, r in enumerate(records, 1) if r])
    apply_restore(
        history.layout, plan_restore(history.layout, SID, project, checkpoints, "p1"), stamp="x"
    )
    assert app.read_bytes() == b"v1\n"


# -- backup retention, as the client does it at each snapshot ----------------------------


@pytest.mark.parametrize("keep", [100, None])
def test_only_the_newest_checkpoints_keep_their_backups(tmp_path: Path, keep: int | None) -> None:
    """110 prompts editing one file (the client's 15-many-checkpoints): past 100
    checkpoints the backups only older ones name go; the file's first backup stays, and
    restoring to any of the newest 100 still finds its backup. ``keep_checkpoints=None``
    keeps everything."""
    layout, project = Layout(tmp_path / "root"), tmp_path / "project"
    project.mkdir()
    target = project / "a.txt"
    target.write_text("0\n")
    history = FileHistory(layout, SID, project, keep_checkpoints=keep)
    prompts = [f"00000000-0000-4000-8000-{n:012d}" for n in range(1, 111)]
    for n, prompt in enumerate(prompts, start=1):
        history.snapshot(prompt)
        if n == 1:
            history.before_edit(target, prompt_uuid=prompt, tool_use_record_uuid=f"t{n}")
        target.write_text(f"{n}\n")
        os.utime(target, ns=(n * 10**9, n * 10**9))  # a new stat each time, never racy
    on_disk = sorted(int(p.name.rsplit("@v", 1)[1]) for p in layout.backup_dir(SID).iterdir())
    if keep is None:
        assert on_disk == list(range(1, 111)) and history.pruned == []
    else:
        assert on_disk == [1, *range(11, 111)]
        assert sorted(int(p.name.rsplit("@v", 1)[1]) for p in history.pruned) == list(range(2, 11))
