"""Checkpoint workloads: restore 1,000 tracked files, snapshot 1,000 unchanged ones, and
the disk an edit-heavy run's backups take with dedup against a copy per version.

Each ``prepare_*`` builds its data in a fresh folder under the given scratch folder
(untimed) and returns the timed run, as :mod:`bench.measure` expects. A workload whose
module is not there yet (``sessiontree.checkpoints.capture``,
``sessiontree.storage.backups``) raises :class:`~bench.measure.Skipped` with the reason,
which the table shows as SKIP.

The data is written the way the client writes it (docs/FORMAT.md, "Checkpoints"):
backups named ``sha256(absolute path)[:16]@v<N>`` in ``file-history/<sessionId>/``, a
``file-history-snapshot`` before each prompt record (``messageId`` = the prompt's uuid)
and ``file-history-delta`` records for first backups.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import random
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontree.storage.layout import Layout, backup_name

Detail = dict[str, Any]
Run = Callable[[], Detail]

TRACKED_FILES = 1000
SESSION_ID = "b3c4e5f6-0000-4000-8000-00000000be4c"
PROJECT_NAME = "bench-project"
#: Tracked file sizes (bytes), drawn uniformly: source files, a few larger ones.
FILE_SIZE = (1_000, 12_000)
WORDS = ("def", "return", "self", "value", "result", "item", "path", "record", "session",
         "prompt", "backup", "restore", "checkpoint", "snapshot", "tree", "leaf", "branch",
         "file", "line", "import", "class", "for", "in", "if", "else")  # fmt: skip


class Unavailable(Exception):
    """The module a workload measures is not there (yet), or its API is not the one
    this workload knows how to drive."""


@dataclass(frozen=True)
class Scene:
    """A config root, a project, and one session's transcript in it."""

    root: Path
    project: Path
    session_id: str
    transcript: Path

    @property
    def layout(self) -> Layout:
        return Layout(self.root)


def make_scene(folder: Path, session_id: str = SESSION_ID) -> Scene:
    root, project = folder / "claude-home", folder / PROJECT_NAME
    project.mkdir(parents=True)
    layout = Layout(root)
    transcript = layout.transcript_path(str(project), session_id)
    transcript.parent.mkdir(parents=True)
    layout.backup_dir(session_id).mkdir(parents=True)
    return Scene(root, project, session_id, transcript)


def file_text(rng: random.Random, size: int) -> bytes:
    """About ``size`` bytes of code-like text."""
    lines, total = [], 0
    while total < size:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        line = f"{' ' * 4 * rng.randint(0, 3)}{words}\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()


def tracked_paths(count: int) -> list[str]:
    """Relative paths of ``count`` files spread over 50 folders, two levels deep."""
    return [f"pkg{i % 10}/mod{i % 50:02d}/file{i:04d}.py" for i in range(count)]


def _stamp(n: int) -> str:
    seconds, ms = divmod(n, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_780_000_000 + seconds)) + (
        f".{ms:03d}Z"
    )


class TranscriptWriter:
    """Records in the shapes the client writes, one prompt after another."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.lines: list[str] = []
        self.parent: str | None = None
        self.clock = 0

    def tick(self) -> str:
        self.clock += 7
        return _stamp(self.clock)

    def entry(self, version: int, name: str | None, when: str) -> dict[str, Any]:
        return {
            "backupFileName": name,
            "version": version,
            "backupTime": when,
            "realParentDir": str(self.scene.project),
        }

    def prompt(self, text: str, files: dict[str, dict[str, Any]]) -> str:
        """A snapshot of ``files`` then the prompt record; returns the prompt's uuid."""
        prompt_uuid = str(uuid.uuid4())
        when = self.tick()
        snapshot = {"messageId": prompt_uuid, "trackedFileBackups": files, "timestamp": when}
        self._add({"type": "file-history-snapshot", "messageId": prompt_uuid,
                   "snapshot": snapshot, "isSnapshotUpdate": False})  # fmt: skip
        self._add(
            {
                "parentUuid": self.parent,
                "isSidechain": False,
                "type": "user",
                "message": {"role": "user", "content": text},
                "uuid": prompt_uuid,
                "timestamp": when,
                "cwd": str(self.scene.project),
                "sessionId": self.scene.session_id,
                "version": "2.1.328",
            }
        )
        self.parent = prompt_uuid
        return prompt_uuid

    def delta(self, prompt_uuid: str, tracking_path: str, entry: dict[str, Any]) -> None:
        self._add({"type": "file-history-delta", "messageId": str(uuid.uuid4()),
                   "snapshotMessageId": prompt_uuid, "trackingPath": tracking_path,
                   "backup": entry, "timestamp": entry["backupTime"]})  # fmt: skip

    def _add(self, record: dict[str, Any]) -> None:
        self.lines.append(json.dumps(record, separators=(",", ":")))

    def write(self) -> None:
        self.scene.transcript.write_text("\n".join(self.lines) + "\n")


def write_restore_scene(
    folder: Path, count: int = TRACKED_FILES, seed: int = 1
) -> tuple[Scene, str]:
    """``count`` files edited by the agent in prompt 1 (backed up at v1 first) and all
    different now; prompt 2's snapshot has them at v2. Returns the scene and prompt 1,
    the checkpoint whose restore rewrites every file."""
    rng = random.Random(seed)
    scene = make_scene(folder)
    backups = scene.layout.backup_dir(scene.session_id)
    writer = TranscriptWriter(scene)
    p1 = writer.prompt("edit every file", {})
    at_v2: dict[str, dict[str, Any]] = {}
    for rel in tracked_paths(count):
        path = scene.project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        original = file_text(rng, rng.randint(*FILE_SIZE))
        edited = original.replace(b"return", b"yield", 3) + b"# edited\n"
        v1, v2 = backup_name(str(path), 1), backup_name(str(path), 2)
        (backups / v1).write_bytes(original)
        writer.delta(p1, rel, writer.entry(1, v1, writer.tick()))
        path.write_bytes(edited)
        (backups / v2).write_bytes(edited)
        at_v2[rel] = writer.entry(2, v2, writer.tick())
    writer.prompt("next", at_v2)
    writer.write()
    return scene, p1


def prepare_restore(scratch: Path, _cache: Path | None) -> Run:
    """Restore code of a 1,000-file session to the prompt before every file was edited:
    open the transcript, fold its checkpoints, plan, check drift, apply (with undo)."""
    from sessiontree.checkpoints.read import read_checkpoints
    from sessiontree.checkpoints.restore import apply_restore, plan_restore
    from sessiontree.conversation.transcript import Transcript

    try:
        find_drift: Callable[..., list[Any]] | None = importlib.import_module(
            "sessiontree.checkpoints.drift"
        ).find_drift
    except (ImportError, AttributeError):
        find_drift = None
    scene, prompt = write_restore_scene(Path(tempfile.mkdtemp(dir=scratch)))

    def run() -> Detail:
        laps: dict[str, float] = {}
        started = time.perf_counter()
        transcript = Transcript.open(scene.transcript)
        checkpoints = read_checkpoints(transcript)
        laps["read_s"] = time.perf_counter() - started
        lap = time.perf_counter()
        plan = plan_restore(scene.layout, scene.session_id, scene.project, checkpoints, prompt)
        laps["plan_s"] = time.perf_counter() - lap
        conflicts = None
        if find_drift is not None:
            lap = time.perf_counter()
            conflicts = len(find_drift(transcript, plan, layout=scene.layout))
            laps["drift_s"] = time.perf_counter() - lap
        lap = time.perf_counter()
        apply_restore(scene.layout, plan, stamp="bench")
        laps["apply_s"] = time.perf_counter() - lap
        restored = len(plan.by_action("restore"))
        if restored != TRACKED_FILES:
            raise RuntimeError(f"expected {TRACKED_FILES} files to restore, planned {restored}")
        laps_shown = ", ".join(f"{k.removesuffix('_s')} {v:.3f} s" for k, v in laps.items())
        note = f"{restored:,} files restored, {conflicts} conflicts; {laps_shown}"
        return {
            "files": restored,
            "conflicts": conflicts,
            **{k: round(v, 4) for k, v in laps.items()},
            "note": note,
        }

    return run


# -- snapshot: needs sessiontree.checkpoints.capture ---------------------------------------------


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise Unavailable(f"{name} is not importable yet ({exc})") from exc


def bytes_read() -> int | None:
    """Bytes this process has read so far (``rchar`` of ``/proc/self/io``), or None."""
    try:
        with open("/proc/self/io") as io:
            for line in io:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def prepare_snapshot(scratch: Path, _cache: Path | None) -> Run:
    """The snapshot at a prompt where none of 1,000 tracked files changed since its backup.

    Untimed: prompt 1's snapshot, a v1 backup of every file before the agent edits it,
    the edits, and prompt 2's snapshot (a v2 of each). The edits are dated a minute back:
    ``FileHistory`` trusts a file's stat only when its mtime is older than the racy
    window, and in real use the next prompt comes well after the agent's last edit.
    Timed: prompt 3's snapshot, which should only ``stat`` the files.
    """
    capture = _import("sessiontree.checkpoints.capture")
    backups = _import("sessiontree.storage.backups")
    rng = random.Random(2)
    scene = make_scene(Path(tempfile.mkdtemp(dir=scratch)))
    store = backups.BackupStore(scene.layout, fsync=False)  # preparation only
    history = capture.FileHistory(scene.layout, scene.session_id, str(scene.project), store=store)
    paths = []
    for rel in tracked_paths(TRACKED_FILES):
        path = scene.project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(file_text(rng, rng.randint(*FILE_SIZE)))
        paths.append(path)
    p1 = str(uuid.uuid4())
    history.snapshot(p1)
    a_minute_ago = time.time() - 60
    for path in paths:
        history.before_edit(path, prompt_uuid=p1, tool_use_record_uuid=str(uuid.uuid4()))
        path.write_bytes(path.read_bytes() + b"# edited\n")
        os.utime(path, (a_minute_ago, a_minute_ago))
    history.snapshot(str(uuid.uuid4()))
    p3 = str(uuid.uuid4())

    def run() -> Detail:
        probe, before = bytes_read(), bytes_read()  # reading /proc/self/io counts too
        record = history.snapshot(p3)
        after = bytes_read()
        read = None
        if probe is not None and before is not None and after is not None:
            read = (after - before) - (before - probe)
        entries = record["snapshot"]["trackedFileBackups"]
        reused = sum(1 for e in entries.values() if e["version"] == 2)
        if reused != TRACKED_FILES:
            raise RuntimeError(f"expected {TRACKED_FILES} unchanged entries, got {reused}")
        shown = f"{read:,} bytes" if read is not None else "(no /proc/self/io)"
        note = f"{reused:,} entries reused; read {shown} during the snapshot"
        return {"files": len(entries), "reused": reused, "bytes_read": read, "note": note}

    return run


# -- dedup: needs sessiontree.storage.backups ----------------------------------------


@dataclass(frozen=True)
class EditRun:
    """The edit-heavy run: sessions on one project, prompts each, project files, edits
    per prompt, and how often an edit puts back an earlier content or a prompt restores
    every file."""

    sessions: int = 3
    prompts: int = 60
    files: int = 200
    edits_per_prompt: int = 12
    undo_share: float = 1 / 3
    restore_every: int = 20

    def describe(self) -> str:
        return (
            f"{self.sessions} sessions x {self.prompts} prompts, "
            f"{self.edits_per_prompt} edits/prompt, {self.files} files"
        )


@dataclass(frozen=True)
class Backup:
    """One backup the client writes: to which session, under which name, what bytes."""

    session_id: str
    name: str
    data: bytes


class _ClientSession:
    """The client's backup decisions in one session (which file, which version)."""

    def __init__(self, session_id: str, project: str) -> None:
        self.session_id = session_id
        self.project = project
        self.latest: dict[str, tuple[int, bytes]] = {}  # tracked file -> version, content

    def _back_up(self, rel: str, version: int, content: bytes) -> Backup:
        self.latest[rel] = (version, content)
        name = backup_name(f"{self.project}/{rel}", version)
        return Backup(self.session_id, name, content)

    def before_edit(self, rel: str, content: bytes) -> list[Backup]:
        """v1 at a file's first edit in the session."""
        return [] if rel in self.latest else [self._back_up(rel, 1, content)]

    def snapshot(self, files: dict[str, bytes]) -> list[Backup]:
        """A new version of every tracked file that differs from its latest backup."""
        return [
            self._back_up(rel, version + 1, files[rel])
            for rel, (version, content) in list(self.latest.items())
            if files[rel] != content
        ]


def plan_edit_heavy(run: EditRun, seed: int = 3) -> list[Backup]:
    """The backups the client (2.1.328) writes over an edit-heavy run, in order.

    The client's rules (docs/FORMAT.md, "Checkpoints"): a file's first edit in a session
    backs up its content before the edit (v1); each prompt's snapshot backs up, as the
    next version, every tracked file that differs from its latest backup; ``/exit`` does
    the same once more. What makes contents repeat, as in real use: a share of edits put
    a file back as it was a few edits earlier (an agent undoing its own change); every
    ``restore_every``-th prompt restores every file to an earlier prompt's state, and the
    next snapshot backs the changed ones up again (FINDINGS §1: notes.md@v3 = v1); and
    each session backs up first versions of files the session before it also backed up.
    """
    rng = random.Random(seed)
    project = f"/home/dev/{PROJECT_NAME}"
    rels = tracked_paths(run.files)
    files = {rel: file_text(rng, rng.randint(*FILE_SIZE)) for rel in rels}
    past = {rel: [content] for rel, content in files.items()}
    backups: list[Backup] = []
    for _ in range(run.sessions):
        session = _ClientSession(str(uuid.UUID(int=rng.getrandbits(128), version=4)), project)
        states: list[dict[str, bytes]] = []
        for number in range(run.prompts):
            backups += session.snapshot(files)
            states.append(dict(files))
            if number % run.restore_every == run.restore_every - 1:
                files.update(states[rng.randrange(len(states) - 1)])
                continue
            for rel in rng.sample(rels, run.edits_per_prompt):
                backups += session.before_edit(rel, files[rel])
                history = past[rel]
                if len(history) > 1 and rng.random() < run.undo_share:
                    files[rel] = history[-rng.randint(2, min(4, len(history)))]
                else:
                    files[rel] = files[rel] + file_text(rng, 80)
                history.append(files[rel])
        backups += session.snapshot(files)  # /exit
    return backups


def disk_usage(folder: Path) -> dict[str, int]:
    """Backups under ``folder``: names, distinct inodes, bytes as stored (each inode once,
    apparent and allocated), and every distinct content once (the floor of any dedup)."""
    seen: set[tuple[int, int]] = set()
    contents: dict[bytes, int] = {}
    usage = dict.fromkeys(("names", "inodes", "bytes", "alloc"), 0)
    for path in _files(folder):
        st = path.lstat()
        usage["names"] += 1
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            usage["inodes"] += 1
            usage["bytes"] += st.st_size
            usage["alloc"] += st.st_blocks * 512
            contents[hashlib.sha256(path.read_bytes()).digest()] = st.st_size
    usage["distinct_bytes"] = sum(contents.values())
    return usage


def _files(folder: Path) -> Iterator[Path]:
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            yield Path(dirpath) / name


def _write_all(store: Any, backups: list[Backup]) -> None:
    for backup in backups:
        store.write(backup.session_id, backup.name, backup.data, mode=0o644)


def prepare_dedup(scratch: Path, _cache: Path | None) -> Run:
    """The backups of an edit-heavy run written through ``BackupStore`` with dedup (timed)
    and, untimed, with ``link=False``: a copy per version, the client's way. The detail
    is the disk each takes."""
    store_type = getattr(_import("sessiontree.storage.backups"), "BackupStore", None)
    if store_type is None:
        raise Unavailable("sessiontree.storage.backups has no BackupStore")
    backups = plan_edit_heavy(EditRun())
    folder = Path(tempfile.mkdtemp(dir=scratch))
    copies_root, dedup_root = folder / "copies", folder / "dedup"
    # fsync off for both: it changes the time, not the disk; the client does not fsync.
    _write_all(store_type(Layout(copies_root), link=False, fsync=False), backups)
    copies = disk_usage(Layout(copies_root).file_history_dir)

    def run() -> Detail:
        _write_all(store_type(Layout(dedup_root), fsync=False), backups)
        dedup = disk_usage(Layout(dedup_root).file_history_dir)
        detail: Detail = {
            "backups": len(backups),
            "sessions": len({b.session_id for b in backups}),
            "dedup": dedup,
            "copies": copies,
            "disk_ratio": dedup["alloc"] / copies["alloc"] if copies["alloc"] else None,
        }
        detail["note"] = describe_usage(detail)
        return detail

    return run


def describe_usage(detail: dict[str, Any]) -> str:
    """One line under the table: disk with dedup against copies, and the floor."""
    mb = 1024 * 1024
    dedup, copies = detail["dedup"], detail["copies"]
    return (
        f"{detail['backups']:,} backups in {detail['sessions']} sessions take "
        f"{dedup['alloc'] / mb:.1f} MB on disk in {dedup['inodes']:,} files with dedup, "
        f"{copies['alloc'] / mb:.1f} MB as a copy per version: {detail['disk_ratio']:.0%} "
        f"(apparent sizes {dedup['bytes'] / mb:.1f} vs {copies['bytes'] / mb:.1f} MB; "
        f"every distinct content once: {dedup['distinct_bytes'] / mb:.1f} MB)"
    )
