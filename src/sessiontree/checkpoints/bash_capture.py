"""Files a Bash command changed, found and kept so "Restore code" covers them (beyond the
client, which never tracks them: FINDINGS "Files created by Bash are never tracked").

An agent host calls, around each Bash command::

    capture = BashCapture(transcript_path, project, tracked=lambda: file_history_paths)
    before = capture.before()            # a stat scan of the project (and git's view)
    ...                                  # the command runs
    record = capture.after(before, prompt_id=..., tool_use_id=..., command=...)

**Finding changes.** :func:`scan_project` stats every regular file of the project
(``lstat``; links are not followed), skipping folders that are heavy and rebuilt, never
edited by hand (:data:`SKIPPED_DIRS`: VCS folders, ``node_modules``, virtualenvs,
caches), at most ``limit`` files (a scan that stopped there says so: changes past it are
not seen). The scan after the command is compared with the one before by size,
mtime, ctime, inode and mode; only the files whose stat differs are read (and hashed).
A file whose content turns out the same (``touch``) is not a change.

**Pre-images** — the content a file had before the command, which a restore needs — are
the hard part: the client's checkpoints back a file up *before* its first edit, and a
command's edits are only known after it ran. So:

- a file the command **created** did not exist: restoring deletes it (exact);
- a file whose content sessiontree kept after an earlier command (its stat unchanged
  since): that copy (exact);
- a file **tracked by git and clean** before the command (``git status`` says the work
  tree equals the index): the index's blob, whose id was read before the command ran
  (exact, even when the command commits or checks out);
- any other file that existed (untracked by git, or with uncommitted changes, or no
  git): its old bytes were never read, so it is reported as **not restorable** to
  before this command — never guessed. Its content after the command is kept, so later
  restores (to prompts after it) do cover it.

Files the client's checkpoints track (``tracked``) are left to them: their next snapshot
takes the change, as the client's does.

**Where it is kept.** Not in the client's records: a ``file-history-delta`` for a file
Bash changed would make the real client's "Restore code" do what it never does (and
the differential tests compare the two). It is sessiontree's own side folder beside the
transcript, ``<project>/<sessionId>/sessiontree-bash/``: ``log.jsonl`` (one line per
command that changed files) and ``blobs/<sha256>`` (each content once). The client
ignores it and removes it with the session.

**Restoring** (:func:`plan_bash_restore`, which :func:`~.code.plan_restore_code` calls):
to prompt *k*, a file Bash changed goes back to its content before the first recorded
change made during prompt *k* or later; when every change was before *k*, to its content
after the last one. Files the client's checkpoint of *k* holds are the client's; a file
the client only knows by a later first backup (its v1) is sessiontree's when a Bash
change says more. Steps carry ``source="bash"``: what the client would not restore.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sessiontree.checkpoints.read import Checkpoint
from sessiontree.checkpoints.restore import FileStep, RestorePlan, _outside
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.layout import session_dir

#: Folders a scan does not enter: rebuilt by tools, not edited by hand, often huge.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".jj",
        ".sl",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".gradle",
        ".next",
        ".turbo",
        ".parcel-cache",
    }
)
#: How many files a scan stats at most.
SCAN_LIMIT = 50_000
#: A file larger than this is not copied (reported as not restorable).
MAX_KEPT_BYTES = 16 * 1024 * 1024
FOLDER = "sessiontree-bash"

Change = Literal["created", "modified", "deleted"]
Source = Literal["absent", "git", "kept", "unknown"]


@dataclass(frozen=True)
class Stamp:
    """A file's stat, as far as a change shows in it."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    mode: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)

    def as_json(self) -> list[int]:
        return [self.size, self.mtime_ns, self.ctime_ns, self.ino, self.mode]


@dataclass(frozen=True)
class ProjectScan:
    """Every regular file under ``root`` (relative path → stamp); ``complete`` False when
    the scan stopped at its limit."""

    root: Path
    files: dict[str, Stamp]
    complete: bool = True


def scan_project(
    root: str | os.PathLike[str],
    *,
    limit: int = SCAN_LIMIT,
    skip: Iterable[str] = SKIPPED_DIRS,
) -> ProjectScan:
    """Stat every regular file under ``root`` (see the module for what is skipped)."""
    base = Path(root)
    skipped = frozenset(skip)
    files: dict[str, Stamp] = {}
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(base / rel_dir if rel_dir else base))
        except OSError:
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if entry.name not in skipped and not (Path(entry.path) / "pyvenv.cfg").exists():
                    stack.append(rel)
            elif stat.S_ISREG(st.st_mode):
                if len(files) >= limit:
                    return ProjectScan(base, files, complete=False)
                files[rel] = Stamp.of(st)
    return ProjectScan(base, files)


@dataclass(frozen=True)
class GitView:
    """What git knew before the command: each index entry's blob, and the tracked files
    whose work-tree content differed from the index."""

    top: Path
    blobs: dict[str, tuple[str, int]]  # path relative to the project → (blob id, mode)
    dirty: frozenset[str]


def read_git_view(
    project: Path, *, git: str, env: Mapping[str, str] | None = None
) -> GitView | None:
    """:class:`GitView` of ``project`` (``git``: the program; ``env``: its environment),
    None when it is not in a git work tree. Reads only: ``--no-optional-locks`` keeps
    ``git status`` from writing the index."""

    def run(*args: str) -> bytes | None:
        try:
            proc = subprocess.run(
                [git, "--no-optional-locks", "-C", str(project), *args],
                capture_output=True,
                env=env,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout if proc.returncode == 0 else None

    top_out = run("rev-parse", "--show-toplevel")
    listed = run("ls-files", "-s", "-z", "--full-name")
    status = run("status", "--porcelain=v1", "-z", "--untracked-files=no", "--ignore-submodules")
    if top_out is None or listed is None or status is None:
        return None
    top = Path(top_out.decode().strip())
    prefix = _relative_prefix(project, top)
    if prefix is None:
        return None
    blobs: dict[str, tuple[str, int]] = {}
    for item in listed.decode("utf-8", "replace").split("\0"):
        head, _, name = item.partition("\t")
        parts = head.split()
        if len(parts) != 3 or parts[2] != "0" or not name.startswith(prefix):
            continue  # a conflict stage, or a file outside the project
        blobs[name[len(prefix) :]] = (parts[1], int(parts[0], 8))
    dirty: set[str] = set()
    entries = status.decode("utf-8", "replace").split("\0")
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        if entry[0] in "RC":
            index += 1  # a rename's source follows
        name = entry[3:]
        if name.startswith(prefix):
            dirty.add(name[len(prefix) :])
    return GitView(top, blobs, frozenset(dirty))


def _relative_prefix(project: Path, top: Path) -> str | None:
    real = Path(os.path.realpath(project))
    try:
        rel = real.relative_to(Path(os.path.realpath(top)))
    except ValueError:
        return None
    return "" if str(rel) == "." else f"{rel.as_posix()}/"


def _git_blob(project: Path, blob: str, git: str, env: Mapping[str, str] | None) -> bytes | None:
    try:
        proc = subprocess.run(
            [git, "-C", str(project), "cat-file", "blob", blob],
            capture_output=True,
            env=env,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


@dataclass(frozen=True)
class Before:
    """The project as it was before a command: the scan, and git's view of it."""

    scan: ProjectScan
    git: GitView | None


@dataclass(frozen=True)
class Image:
    """A file's content at one moment: ``blob`` (a sha256 in the side folder), absent
    (``blob`` None, ``source`` "absent"), or unknown (``source`` "unknown", with why)."""

    source: Source
    blob: str | None = None
    mode: int | None = None
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "blob": self.blob}
        if self.mode is not None:
            out["mode"] = self.mode
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    @classmethod
    def parse(cls, raw: object) -> Image | None:
        if not isinstance(raw, dict) or raw.get("source") not in (
            "absent",
            "git",
            "kept",
            "unknown",
        ):
            return None
        blob = raw.get("blob")
        if blob is not None and not (isinstance(blob, str) and _is_sha256(blob)):
            return None
        mode = raw.get("mode")
        reason = raw.get("reason")
        return cls(
            raw["source"],
            blob,
            mode if isinstance(mode, int) else None,
            reason if isinstance(reason, str) else None,
        )


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


@dataclass(frozen=True)
class CapturedFile:
    path: str  # relative to the project
    change: Change
    before: Image
    after: Image
    stamp: Stamp | None = None  # after the command (None: deleted)

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "change": self.change,
            "before": self.before.as_json(),
            "after": self.after.as_json(),
            "stamp": self.stamp.as_json() if self.stamp else None,
        }


@dataclass(frozen=True)
class CaptureRecord:
    """One command's changes, as one line of ``log.jsonl``."""

    prompt_id: str
    tool_use_id: str
    command: str
    project: str
    files: tuple[CapturedFile, ...]
    complete: bool = True

    def as_json(self) -> dict[str, Any]:
        return {
            "type": "bash-capture",
            "version": 1,
            "promptId": self.prompt_id,
            "toolUseId": self.tool_use_id,
            "command": self.command,
            "project": self.project,
            "complete": self.complete,
            "files": [f.as_json() for f in self.files],
        }

    @property
    def not_restorable(self) -> list[str]:
        return [f.path for f in self.files if f.before.source == "unknown"]


def capture_folder(transcript: Path) -> Path:
    """``<project>/<sessionId>/sessiontree-bash/`` beside the transcript."""
    return session_dir(Path(transcript)) / FOLDER


def read_capture_log(transcript: Path) -> list[CaptureRecord]:
    """Every command's changes recorded for this transcript (bad lines skipped)."""
    log = capture_folder(transcript) / "log.jsonl"
    if not log.is_file():
        return []
    records = []
    for line in log.read_bytes().split(b"\n"):
        try:
            raw = json.loads(line)
        except ValueError:
            continue  # a torn last line, or damage: skipped
        record = _parse_record(raw)
        if record is not None:
            records.append(record)
    return records


def _parse_record(raw: object) -> CaptureRecord | None:
    if not isinstance(raw, dict) or raw.get("type") != "bash-capture":
        return None
    files = []
    for item in raw.get("files") or []:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        before, after = Image.parse(item.get("before")), Image.parse(item.get("after"))
        change = item.get("change")
        if before is None or after is None or change not in ("created", "modified", "deleted"):
            continue
        stamp = item.get("stamp")
        parsed = Stamp(*stamp) if isinstance(stamp, list) and len(stamp) == 5 else None
        files.append(CapturedFile(item["path"], change, before, after, parsed))
    fields = (raw.get("promptId"), raw.get("toolUseId"), raw.get("command"), raw.get("project"))
    if not all(isinstance(f, str) for f in fields):
        return None
    prompt_id, tool_use_id, command, project = (str(f) for f in fields)
    return CaptureRecord(
        prompt_id, tool_use_id, command, project, tuple(files), raw.get("complete") is not False
    )


@dataclass
class BashCapture:
    """Finds and keeps what Bash commands change in ``project`` for one session (see the
    module). ``tracked``: the absolute paths the client's checkpoints track now."""

    transcript: Path
    project: Path
    tracked: Callable[[], Iterable[str]] = lambda: ()
    limit: int = SCAN_LIMIT
    #: The git program (None: no git pre-images) and the environment it runs with.
    git: str | None = None
    env: Mapping[str, str] | None = None
    #: Files whose content after a command is kept: path → (stamp then, the kept image).
    known: dict[str, tuple[Stamp, Image]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.transcript = Path(self.transcript)
        self.project = Path(os.path.normpath(self.project))
        for record in read_capture_log(self.transcript):
            for item in record.files:
                if item.stamp is not None and item.after.blob is not None:
                    self.known[item.path] = (item.stamp, item.after)
                else:
                    self.known.pop(item.path, None)

    @property
    def folder(self) -> Path:
        return capture_folder(self.transcript)

    def before(self) -> Before:
        """The project's state before a command."""
        scan = scan_project(self.project, limit=self.limit)
        view = read_git_view(self.project, git=self.git, env=self.env) if self.git else None
        return Before(scan, view)

    def after(
        self, before: Before, *, prompt_id: str, tool_use_id: str, command: str
    ) -> CaptureRecord | None:
        """Compare with ``before``, keep what changed, append the record; None when the
        command changed no file (nothing is written then)."""
        now = scan_project(self.project, limit=self.limit)
        tracked = {os.path.normpath(p) for p in self.tracked()}
        captured: list[CapturedFile] = []
        for rel in sorted(set(before.scan.files) | set(now.files)):
            old, new = before.scan.files.get(rel), now.files.get(rel)
            if old == new or str(self.project / rel) in tracked:
                continue
            item = self._one(rel, old, new, before)
            if item is not None:
                captured.append(item)
        if not captured:
            return None
        record = CaptureRecord(
            prompt_id,
            tool_use_id,
            command,
            str(self.project),
            tuple(captured),
            before.scan.complete and now.complete,
        )
        self._append(record)
        for item in captured:
            if item.stamp is not None and item.after.blob is not None:
                self.known[item.path] = (item.stamp, item.after)
            else:
                self.known.pop(item.path, None)
        return record

    def _one(
        self, rel: str, old: Stamp | None, new: Stamp | None, before: Before
    ) -> CapturedFile | None:
        after = self._keep_now(rel, new) if new is not None else Image("absent")
        if old is None:
            return CapturedFile(rel, "created", Image("absent"), after, new)
        image = self._pre_image(rel, old, before)
        if new is not None and image.blob is not None and image.blob == after.blob:
            return None  # touched, same bytes
        return CapturedFile(rel, "deleted" if new is None else "modified", image, after, new)

    def _pre_image(self, rel: str, old: Stamp, before: Before) -> Image:
        known = self.known.get(rel)
        if known is not None and known[0] == old:
            return Image("kept", known[1].blob, old.mode)
        git = before.git
        if git is not None and rel in git.blobs and rel not in git.dirty:
            blob_id, mode = git.blobs[rel]
            data = _git_blob(self.project, blob_id, self.git or "git", self.env)
            if data is not None:
                return Image("git", self._store(data), mode)
        if git is not None and rel in git.dirty:
            why = "it had changes not committed to git, and no copy was kept"
        elif git is not None:
            why = "git does not track it, and no copy was kept"
        else:
            why = "no copy of it was kept (the project is not a git repository)"
        return Image("unknown", reason=f"changed by Bash before sessiontree kept it: {why}")

    def _keep_now(self, rel: str, stamp: Stamp) -> Image:
        path = self.project / rel
        if stamp.size > MAX_KEPT_BYTES:
            return Image("unknown", reason=f"larger than {MAX_KEPT_BYTES} bytes: not kept")
        try:
            data = path.read_bytes()
        except OSError as exc:
            return Image("unknown", reason=f"unreadable: {exc.strerror or exc}")
        return Image("kept", self._store(data), stamp.mode)

    def _store(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.folder / "blobs" / digest
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomically(target, data, mode=0o600)
        return digest

    def _append(self, record: CaptureRecord) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        line = json.dumps(record.as_json(), ensure_ascii=False) + "\n"
        with open(self.folder / "log.jsonl", "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


# -- restoring ---------------------------------------------------------------------------------


def copy_capture_log(source: Path, target: Path, prompts: Iterable[str]) -> int:
    """Copy into ``target``'s side folder what ``source``'s holds for ``prompts`` (the
    lines of the commands their turns ran, and the contents those name): what a fork of
    ``source`` keeping those prompts needs to restore what Bash changed in them. Lines
    already there are not copied twice. How many lines were copied."""
    wanted = set(prompts)
    records = [r for r in read_capture_log(Path(source)) if r.prompt_id in wanted]
    if not records:
        return 0
    have = {(r.prompt_id, r.tool_use_id) for r in read_capture_log(Path(target))}
    records = [r for r in records if (r.prompt_id, r.tool_use_id) not in have]
    source_folder, folder = capture_folder(Path(source)), capture_folder(Path(target))
    for record in records:
        for item in record.files:
            for image in (item.before, item.after):
                if image.blob is None:
                    continue
                blob = folder / "blobs" / image.blob
                if blob.exists():
                    continue
                try:
                    data = (source_folder / "blobs" / image.blob).read_bytes()
                except OSError:
                    continue  # missing there too: restoring says so
                blob.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                write_atomically(blob, data, mode=0o600)
    if records:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        lines = "".join(json.dumps(r.as_json(), ensure_ascii=False) + "\n" for r in records)
        with open(folder / "log.jsonl", "a", encoding="utf-8") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())
    return len(records)


def bash_targets(
    records: list[CaptureRecord],
    checkpoints: list[Checkpoint],
    prompt_uuid: str,
    *,
    prompts: Sequence[str] | None = None,
) -> dict[str, tuple[Image, CaptureRecord]]:
    """For each file Bash changed in this conversation: the image restoring to
    ``prompt_uuid`` puts back, and the command it comes from. ``prompts``: the
    conversation's prompts, oldest first (by default those the checkpoints are of; a
    fork has none of the prompts it copied)."""
    if prompts is not None:
        order = {p: n for n, p in enumerate(prompts)}
    else:
        order = {c.message_id: n for n, c in enumerate(checkpoints)}
    if prompt_uuid not in order:
        return {}
    at = order[prompt_uuid]
    events: dict[str, list[tuple[int, int, CapturedFile, CaptureRecord]]] = {}
    for seq, record in enumerate(records):
        where = order.get(record.prompt_id)
        if where is None:
            continue  # a prompt rewound away, or another conversation's
        for item in record.files:
            events.setdefault(item.path, []).append((where, seq, item, record))
    targets: dict[str, tuple[Image, CaptureRecord]] = {}
    for rel, happened in events.items():
        happened.sort(key=lambda e: (e[0], e[1]))
        later = [e for e in happened if e[0] >= at]
        if later:
            targets[rel] = (later[0][2].before, later[0][3])
        else:
            targets[rel] = (happened[-1][2].after, happened[-1][3])
    return targets


def plan_bash_restore(
    plan: RestorePlan,
    transcript: Path,
    checkpoints: list[Checkpoint],
    *,
    allow_outside: bool = False,
    prompts: Sequence[str] | None = None,
) -> None:
    """Add to ``plan`` the steps for files Bash changed (``source="bash"``): see the
    module for which state each goes back to. A file the client's checkpoint of the
    prompt holds keeps its step; one the client only knows by a later v1 gets
    sessiontree's instead. ``prompts``: as for :func:`bash_targets`."""
    records = read_capture_log(Path(transcript))
    if not records:
        return
    target_checkpoint = next((c for c in checkpoints if c.message_id == plan.prompt_uuid), None)
    held = set(target_checkpoint.files) if target_checkpoint is not None else set()
    folder = capture_folder(Path(transcript))
    resolved = plan.project.resolve()
    for rel, (image, record) in sorted(
        bash_targets(records, checkpoints, plan.prompt_uuid, prompts=prompts).items()
    ):
        if rel in held:
            continue
        path = plan.project / rel
        plan.steps[:] = [
            s for s in plan.steps if os.path.normpath(s.path) != os.path.normpath(path)
        ]
        plan.steps.append(
            _bash_step(rel, path, image, record, folder, plan, resolved, allow_outside)
        )


def _bash_step(
    rel: str,
    path: Path,
    image: Image,
    record: CaptureRecord,
    folder: Path,
    plan: RestorePlan,
    resolved: Path,
    allow_outside: bool,
) -> FileStep:
    label = rel
    if ".." in Path(rel).parts or os.path.isabs(rel) or "\x00" in rel:
        return FileStep(label, path, "skip", reason="damaged capture entry", source="bash")
    why = None if allow_outside else _outside(path, plan.project, resolved)
    if why:
        return FileStep(label, path, "skip", reason=f"{why} (pass --allow-outside)", source="bash")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        return FileStep(label, path, "skip", reason="not a regular file", source="bash")
    if image.source == "unknown":
        reason = f"{image.reason or 'not kept'} (command: {record.command})"
        return FileStep(label, path, "skip", reason=reason, source="bash")
    if image.blob is None:
        return FileStep(label, path, "delete" if path.exists() else "unchanged", source="bash")
    blob = folder / "blobs" / image.blob
    try:
        data = blob.read_bytes()
    except OSError:
        return FileStep(
            label, path, "skip", reason=f"kept copy {image.blob[:12]} is missing", source="bash"
        )
    same = path.is_file() and path.read_bytes() == data
    return FileStep(label, path, "unchanged" if same else "restore", content=data, source="bash")
