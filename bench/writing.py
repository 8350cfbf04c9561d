# mypy: disable-error-code="import-untyped"
# (sessiontree has no py.typed marker yet; drop this line once it has.)
"""Writing workloads: buffered appends, durable turn commits, a fork of a big session, and
cleanup planning over a store of many sessions, each next to the bare operation it costs.

Each ``prepare_*`` builds what it needs (untimed) and returns the timed run, as
:mod:`bench.measure` expects. The append and commit workloads time every call on their
own and report percentiles in the detail (``p50_s``, ``p99_s``, ``max_s``); the table
shows the one its row names. A workload whose module is not there yet
(``sessiontree.cleanup``) raises :class:`~bench.checkpoints.Unavailable` with the
reason, which the table shows as SKIP.

The appended records are what :class:`sessiontree.session.session.Session` writes for a real
conversation: prompts of 200 B-2 KB, one record per assistant content block (text, then
a tool_use), tool results of 1-8 KB (stored twice, as ``content`` and
``toolUseResult``, as the client does), code-like text with newlines and indentation.
The baselines write the very same bytes (captured untimed from a :class:`Session` whose
appends are kept in memory) with bare ``os.write`` calls on one ``O_APPEND`` fd.
"""

from __future__ import annotations

import atexit
import calendar
import dataclasses
import functools
import hashlib
import importlib
import inspect
import json
import math
import os
import random
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.checkpoints import WORDS, Unavailable, file_text
from bench.generate import plan_project_cwds
from sessiontree.model.builders import text_block, tool_use_block
from sessiontree.session.session import Session
from sessiontree.storage.jsonl import format_line
from sessiontree.storage.layout import Layout, backup_name, paste_hash, tool_results_dir

Detail = dict[str, Any]
Run = Callable[[], Detail]
KB = 1024
MB = 1024 * KB

#: Appends timed one by one, onto a session file that already holds PREFILL bytes.
APPENDS = 5_000
PREFILL = 10 * MB
#: Turns whose ``end_turn`` (its fsync) is timed.
COMMIT_TURNS = 200
CWD = "/home/dev/src/bench-project"
#: Sizes in bytes, drawn log-uniformly.
PROMPT = (200, 2 * KB)
ANSWER = (40, 1_500)
TOOL_OUTPUT = (1 * KB, 8 * KB)
STEPS_PER_TURN = (0, 1, 1, 2, 2, 3, 3, 4, 5, 6)
TOOLS = ("Read", "Bash", "Edit", "Grep")

#: The cleanup store's clock: every mtime is set against this moment and
#: ``plan_cleanup`` gets it as ``now``, so the plan is the same whatever day it runs.
STORE_NOW = float(calendar.timegm((2026, 3, 1, 12, 0, 0)))
DAY = 86_400.0
STORE_PROJECTS = 20
STORE_ROOT = "claude-home"


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def prose(rng: random.Random, size: int) -> str:
    """About ``size`` bytes of sentences."""
    words: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(WORDS)
        words.append(word + ("." if rng.random() < 0.1 else ""))
        total += len(word) + 1
    return " ".join(words)


def code(rng: random.Random, size: int) -> str:
    return file_text(rng, size).decode()


@dataclass(frozen=True)
class Shape:
    """How big one turn's parts are."""

    prompt: tuple[int, int] = PROMPT
    answer: tuple[int, int] = ANSWER
    tool_output: tuple[int, int] = TOOL_OUTPUT
    steps: tuple[int, ...] = STEPS_PER_TURN


SMALL = Shape(prompt=(100, 600), answer=(40, 400), tool_output=(200, 1 * KB), steps=(0, 1, 1, 2))


def turn_calls(
    session: Session, rng: random.Random, shape: Shape = Shape()
) -> Iterator[tuple[str, Callable[[], object]]]:
    """One turn's appends in order, as ``(kind, call)``: the prompt, tool steps (a response
    with a text and a tool_use block, then the tool's result), the final answer. The
    arguments are drawn before the call is handed out, so timing the call times only it."""
    yield "prompt", functools.partial(session.append_prompt, prose(rng, _draw(rng, shape.prompt)))
    for _ in range(rng.choice(shape.steps)):
        tool_id = f"toolu_{rng.getrandbits(96):024x}"
        tool = rng.choice(TOOLS)
        path = f"{CWD}/pkg{rng.randrange(10)}/mod{rng.randrange(50):02d}.py"
        tool_input: dict[str, Any] = {
            "Read": {"file_path": path},
            "Bash": {"command": f"pytest -q {path}", "description": "Run the tests"},
            "Edit": {"file_path": path, "old_string": code(rng, 200), "new_string": code(rng, 240)},
            "Grep": {"pattern": rng.choice(WORDS), "path": CWD, "output_mode": "content"},
        }[tool]
        blocks = [
            text_block(prose(rng, _draw(rng, shape.answer))),
            tool_use_block(tool_id, tool, tool_input),
        ]
        yield "response", functools.partial(session.append_response, blocks)
        output = code(rng, _draw(rng, shape.tool_output))
        yield "tool_result", functools.partial(session.append_tool_result, tool_id, output)
    answer = [text_block(prose(rng, _draw(rng, shape.answer)))]
    yield "response", functools.partial(session.append_response, answer)


def _draw(rng: random.Random, bounds: tuple[int, int]) -> int:
    return _log_uniform(rng, *bounds)


@dataclass
class KeptSession(Session):
    """A :class:`Session` whose appends are kept in memory, encoded: ``(kind, bytes)`` per
    call, where the kind is the ``Session`` method's."""

    chunks: list[tuple[str, bytes]] = field(default_factory=list, repr=False)

    def _append(self, records: Sequence[dict[str, Any]], *, fsync: bool = False) -> None:
        kind = "end_turn" if fsync else "append"
        self.chunks.append((kind, b"".join(format_line(r) for r in records)))


def seeded(
    rng: random.Random, start: datetime = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
) -> tuple[Callable[[], datetime], Callable[[], str]]:
    """A clock from ``start`` and uuids, drawn from ``rng``: the same bytes on every run."""
    moment = [start]

    def clock() -> datetime:
        moment[0] += timedelta(milliseconds=rng.randint(5, 20_000))
        return moment[0]

    return clock, lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4))


def kept_turns(
    session: KeptSession, rng: random.Random, *, until: Callable[[KeptSession], bool]
) -> None:
    """Whole turns (``end_turn`` included) into ``session`` until ``until(session)``."""
    while not until(session):
        for _kind, call in turn_calls(session, rng):
            call()
        session.end_turn()


def prefill(path: Path, seed: int) -> None:
    """PREFILL bytes of whole turns, written at once: the session so far."""
    rng = random.Random(seed)
    clock, new_id = seeded(rng)
    kept = KeptSession.create(Layout(path.parent), CWD, clock=clock, new_id=new_id)
    size = [0]

    def full(session: KeptSession) -> bool:
        size[0] = sum(len(chunk) for _, chunk in session.chunks)
        return size[0] >= PREFILL

    kept_turns(kept, rng, until=full)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(chunk for _, chunk in kept.chunks))


def percentiles(times: Sequence[float]) -> dict[str, float]:
    ordered = sorted(times)

    def rank(q: float) -> float:
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    return {"p50_s": rank(0.5), "p99_s": rank(0.99), "max_s": ordered[-1]}


def describe_times(stats: dict[str, float]) -> str:
    return ", ".join(
        f"{name.removesuffix('_s')} {stats[name] * 1000:.3f} ms"
        for name in ("p50_s", "p99_s", "max_s")
    )


# -- append: Session's appends, one by one, no fsync --------------------------------------


def _append_scene(scratch: Path) -> Path:
    """A prefilled transcript in a fresh folder under ``scratch``."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    path = Layout(folder / "claude-home").transcript_path(CWD, str(uuid.UUID(int=7, version=4)))
    prefill(path, seed=11)
    return path


def _append_script(session: Session, seed: int) -> Iterator[tuple[str, Callable[[], object]]]:
    """APPENDS calls of whole turns (the last cut short), without the turn ends."""
    rng = random.Random(seed)
    count = 0
    while True:
        for kind, call in turn_calls(session, rng):
            yield kind, call
            count += 1
            if count == APPENDS:
                return


def prepare_append(scratch: Path, _cache: Path | None) -> Run:
    """Time every ``append_prompt`` / ``append_response`` / ``append_tool_result`` of
    APPENDS calls on a resumed session of PREFILL bytes. No ``end_turn`` (it fsyncs)."""
    path = _append_scene(scratch)
    session = Session.open(path)
    start_size = path.stat().st_size
    calls = list(_append_script(session, seed=12))  # arguments drawn, nothing written yet

    def run() -> Detail:
        clock = time.perf_counter
        times: list[float] = []
        by_kind: dict[str, list[float]] = {}
        for kind, call in calls:
            started = clock()
            call()
            elapsed = clock() - started
            times.append(elapsed)
            by_kind.setdefault(kind, []).append(elapsed)
        return _append_detail(times, by_kind, path.stat().st_size - start_size, start_size)

    return run


def _append_detail(
    times: list[float], by_kind: dict[str, list[float]], written: int, start: int
) -> Detail:
    stats = percentiles(times)
    kinds = {kind: percentiles(spent) for kind, spent in by_kind.items()}
    counts = ", ".join(f"{len(by_kind[k]):,} {k.replace('_', ' ')}s" for k in sorted(by_kind))
    tails = ", ".join(f"{k.replace('_', ' ')} {v['p99_s'] * 1000:.3f}" for k, v in kinds.items())
    note = (
        f"{len(times):,} appends ({counts}; {written / MB:.1f} MB onto {start / MB:.1f} MB): "
        f"{describe_times(stats)}, total {sum(times):.3f} s; p99 by kind (ms): {tails}"
    )
    return {
        **stats,
        "calls": len(times),
        "bytes": written,
        "total_s": sum(times),
        "by_kind": kinds,
        "note": note,
    }


def prepare_append_raw(scratch: Path, _cache: Path | None) -> Run:
    """Baseline: the same lines, each call's bytes one bare ``os.write`` on an O_APPEND fd
    kept open, onto the same prefill."""
    path = _append_scene(scratch)
    start_size = path.stat().st_size
    kept = KeptSession.open(path)  # resumed like the measured one; keeps its appends
    kinds = []
    for kind, call in _append_script(kept, seed=12):
        call()
        kinds.append(kind)
    chunks = [chunk for _, chunk in kept.chunks]  # one per call

    def run() -> Detail:
        clock = time.perf_counter
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        times: list[float] = []
        by_kind: dict[str, list[float]] = {}
        try:
            for kind, chunk in zip(kinds, chunks, strict=True):
                started = clock()
                os.write(fd, chunk)
                elapsed = clock() - started
                times.append(elapsed)
                by_kind.setdefault(kind, []).append(elapsed)
        finally:
            os.close(fd)
        return _append_detail(times, by_kind, path.stat().st_size - start_size, start_size)

    return run


# -- turn commit: end_turn, which fsyncs ----------------------------------------------------


def prepare_commit(scratch: Path, _cache: Path | None) -> Run:
    """COMMIT_TURNS turns through ``Session``: the turn's appends untimed (buffered), then
    ``end_turn`` timed, whose fsync flushes the whole turn."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    session = Session.create(Layout(folder / "claude-home"), CWD)
    rng = random.Random(21)
    turns = [list(turn_calls(session, rng)) for _ in range(COMMIT_TURNS)]

    def run() -> Detail:
        clock = time.perf_counter
        times: list[float] = []
        for calls in turns:
            for _kind, call in calls:
                call()
            started = clock()
            session.end_turn()
            times.append(clock() - started)
        return _commit_detail(times, session.path.stat().st_size)

    return run


def _commit_detail(times: list[float], size: int) -> Detail:
    stats = percentiles(times)
    note = (
        f"{len(times)} turns, {size / len(times) / KB:.1f} KB a turn flushed by each fsync: "
        f"{describe_times(stats)}"
    )
    return {**stats, "turns": len(times), "bytes": size, "note": note}


def prepare_commit_raw(scratch: Path, _cache: Path | None) -> Run:
    """Baseline: the same turns' bytes on one O_APPEND fd; per turn, the appends untimed,
    then the turn end's bytes with ``os.write`` + ``os.fsync`` timed."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    kept = KeptSession.create(Layout(folder / "claude-home"), CWD)
    rng = random.Random(21)
    turns: list[tuple[list[bytes], bytes]] = []
    for _ in range(COMMIT_TURNS):
        for _kind, call in list(turn_calls(kept, rng)):
            call()
        kept.end_turn()
        *appends, (_, end) = kept.chunks
        turns.append(([chunk for _, chunk in appends], end))
        kept.chunks.clear()
    path = kept.path
    path.parent.mkdir(parents=True, exist_ok=True)

    def run() -> Detail:
        clock = time.perf_counter
        times: list[float] = []
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            for appends, end in turns:
                for chunk in appends:
                    os.write(fd, chunk)
                started = clock()
                os.write(fd, end)
                os.fsync(fd)
                times.append(clock() - started)
        finally:
            os.close(fd)
        return _commit_detail(times, path.stat().st_size)

    return run


# -- fork: a big transcript's active path into a new session --------------------------------


def _fork_scratch(transcript: Path) -> tuple[Path, Path]:
    """A scratch folder (removed when the process exits) holding a link to ``transcript``
    named ``<its sessionId>.jsonl``: the fork is written beside it, as in a project folder."""
    folder = Path(tempfile.mkdtemp(prefix="sessiontree-bench-fork-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    session_id = str(uuid.UUID(int=1, version=4))
    with transcript.open("rb") as handle:
        for line, _ in zip(handle, range(50), strict=False):
            found = json.loads(line).get("sessionId")
            if isinstance(found, str):
                session_id = found
                break
    link = folder / f"{session_id}.jsonl"
    link.symlink_to(transcript.resolve())
    return folder, link


def prepare_fork(transcript: Path, _cache: Path | None) -> Run:
    """``Transcript.open``, ``plan_fork`` and ``apply_fork`` (which fsyncs the new file)."""
    from sessiontree.conversation.fork import apply_fork, plan_fork
    from sessiontree.conversation.transcript import Transcript

    _folder, link = _fork_scratch(transcript)
    new_id = str(uuid.UUID(int=2, version=4))

    def run() -> Detail:
        laps: dict[str, float] = {}
        started = time.perf_counter()
        opened = Transcript.open(link)
        laps["open_s"] = time.perf_counter() - started
        lap = time.perf_counter()
        plan = plan_fork(opened, new_session_id=new_id)
        laps["plan_s"] = time.perf_counter() - lap
        lap = time.perf_counter()
        apply_fork(plan)
        laps["apply_s"] = time.perf_counter() - lap
        size = plan.path.stat().st_size
        shown = ", ".join(f"{k.removesuffix('_s')} {v:.3f} s" for k, v in laps.items())
        note = (
            f"{len(plan.records):,} records ({size / MB:.1f} MB, the active path) forked "
            f"from {len(opened.scan.lines):,} lines; {shown}"
        )
        return {
            "records": len(plan.records),
            "bytes": size,
            **{k: round(v, 4) for k, v in laps.items()},
            "note": note,
        }

    return run


def prepare_copy(transcript: Path, _cache: Path | None) -> Run:
    """Baseline: ``shutil.copyfile`` of the whole transcript into the scratch folder."""
    folder, link = _fork_scratch(transcript)

    def run() -> Detail:
        shutil.copyfile(link, folder / "copy.jsonl")
        return {"bytes": (folder / "copy.jsonl").stat().st_size}

    return run


# -- cleanup: planning retention over a store of many sessions ------------------------------


def prepare_walk(root: Path, _cache: Path | None) -> Run:
    """Baseline: ``os.scandir`` of every folder of the store and a stat of every entry."""

    def run() -> Detail:
        files = folders = size = 0
        stack = [str(root)]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    st = entry.stat(follow_symlinks=False)
                    if entry.is_dir(follow_symlinks=False):
                        folders += 1
                        stack.append(entry.path)
                    else:
                        files += 1
                        size += st.st_size
        note = f"{files:,} files in {folders:,} folders, {size / MB:.1f} MB"
        return {"files": files, "folders": folders, "bytes": size, "note": note}

    return run


def prepare_cleanup(root: Path, _cache: Path | None) -> Run:
    """``sessiontree.cleanup.plan_cleanup(Layout(root))``, with ``now`` = STORE_NOW."""
    try:
        cleanup = importlib.import_module("sessiontree.cleanup")
    except ImportError as exc:
        raise Unavailable(f"sessiontree.cleanup is not importable yet ({exc})") from exc
    plan_cleanup: Callable[..., Any] | None = getattr(cleanup, "plan_cleanup", None)
    if plan_cleanup is None:
        raise Unavailable("sessiontree.cleanup has no plan_cleanup yet")
    options: dict[str, Any] = {}
    if "now" in inspect.signature(plan_cleanup).parameters:
        options["now"] = STORE_NOW
    layout = Layout(root)

    def run() -> Detail:
        plan = plan_cleanup(layout, **options)
        sizes = _sized_fields(plan)
        shown = ", ".join(f"{name} {count:,}" for name, count in sizes.items())
        return {**sizes, "note": f"plan: {shown or type(plan).__name__}"}

    return run


def _sized_fields(plan: object) -> dict[str, int]:
    """The length of each list-like field of the plan (whatever its shape turns out to be)."""
    if dataclasses.is_dataclass(plan):
        values = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    else:
        values = dict(getattr(plan, "__dict__", {}))
    return {
        name: len(value)
        for name, value in values.items()
        if isinstance(value, list | tuple | set | frozenset | dict)
    }


@dataclass(frozen=True)
class StoreSpec:
    """The cleanup store: ``sessions`` small transcripts over STORE_PROJECTS projects, half
    of them (and what belongs to them) older than 30 days."""

    sessions: int
    seed: int


def write_cleanup_store(root: Path, spec: StoreSpec) -> int:
    """Write the store under ``root``; returns its size in bytes.

    Per session: a transcript of 1-3 small turns written through ``Session``'s builders
    (mtime = its last record, 0-29 or 31-120 days before STORE_NOW, half each); about a
    quarter have ``tool-results/``, a third ``file-history/<sid>/`` backups, half a
    ``session-env/<sid>/`` folder, one in twenty a subagent transcript. Around them:
    ``history.jsonl`` (a line per prompt), ``paste-cache/`` files for one prompt in six,
    ``shell-snapshots/``, two stale ``sessions/<pid>.json`` and ``settings.json``. Every
    file and folder a session owns gets the session's mtime.
    """
    rng = random.Random(spec.seed)
    layout = Layout(root)
    cwds = plan_project_cwds(STORE_PROJECTS)
    weights = [1 / (k + 1) for k in range(len(cwds))]
    ages = [rng.uniform(31, 120) if i % 2 else rng.uniform(0, 29) for i in range(spec.sessions)]
    rng.shuffle(ages)
    history: list[tuple[float, bytes]] = []
    dated: list[tuple[Path, float]] = []  # set last, deepest first: writing touches folders

    def put(path: Path, data: bytes, mtime: float) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        dated.append((path, mtime))

    for age in ages:
        mtime = STORE_NOW - age * DAY
        clock, new_id = seeded(rng, datetime.fromtimestamp(mtime - 600, UTC))
        cwd = rng.choices(cwds, weights)[0]
        kept = KeptSession.create(layout, cwd, session_id=new_id(), clock=clock, new_id=new_id)
        prompts: list[str] = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            for kind, call in turn_calls(kept, rng, SMALL):
                call()
                if kind == "prompt":
                    prompts.append(json.loads(kept.chunks[-1][1])["message"]["content"])
            kept.end_turn()
        sid = kept.session_id
        put(kept.path, b"".join(chunk for _, chunk in kept.chunks), mtime)
        for number, prompt in enumerate(prompts):
            when = mtime - (len(prompts) - number) * 60
            pasted: dict[str, Any] = {}
            if rng.random() < 1 / 6:
                text = code(rng, rng.randint(2 * KB, 8 * KB))
                digest = paste_hash(text)
                put(layout.paste_path(digest), text.encode(), when)
                pasted["1"] = {"id": 1, "type": "text", "contentHash": digest}
                prompt = f"{prompt[:80]} [Pasted text #1 +{text.count(chr(10))} lines]"
            entry = {"display": prompt[:200], "pastedContents": pasted,
                     "timestamp": int(when * 1000), "project": cwd, "sessionId": sid}  # fmt: skip
            history.append((when, json.dumps(entry, separators=(",", ":")).encode() + b"\n"))
        if rng.random() < 0.25:
            folder = tool_results_dir(kept.path)
            for _ in range(rng.randint(1, 3)):
                name = f"toolu_{rng.getrandbits(96):024x}.txt"
                put(folder / name, code(rng, rng.randint(4 * KB, 30 * KB)).encode(), mtime)
            dated.append((folder, mtime))
            dated.append((folder.parent, mtime))
        if rng.random() < 1 / 3:
            folder = layout.backup_dir(sid)
            for n in range(rng.randint(1, 6)):
                name = backup_name(f"{cwd}/pkg/mod{n}.py", rng.randint(1, 3))
                put(folder / name, code(rng, rng.randint(1 * KB, 12 * KB)).encode(), mtime)
            dated.append((folder, mtime))
        if rng.random() < 0.5:
            folder = layout.session_env_path(sid)
            folder.mkdir(parents=True, exist_ok=True)
            if rng.random() < 0.5:
                put(folder / "sessionstart-hook-0.sh", b"export BENCH=1\n", mtime)
            dated.append((folder, mtime))
        if rng.random() < 0.05:
            agent = kept.path.with_suffix("") / "subagents" / f"agent-a{rng.getrandbits(64):016x}"
            put(agent.with_suffix(".jsonl"), b"".join(c for _, c in kept.chunks[:3]), mtime)
            put(agent.with_suffix(".meta.json"), b'{"agentType":"Explore"}', mtime)
            dated.append((agent.parent, mtime))
            dated.append((agent.parent.parent, mtime))
        if rng.random() < 0.1:
            stamp = int(mtime * 1000)
            name = f"snapshot-bash-{stamp}-{rng.getrandbits(24):06x}.sh"
            put(
                layout.shell_snapshots_dir / name,
                b"# shell snapshot\nexport PATH=/usr/bin\n",
                mtime,
            )
    history.sort()
    put(layout.history_path, b"".join(line for _, line in history), STORE_NOW - 60)
    for pid in (4_194_001, 4_194_002):  # stale: no such process
        record = {"pid": pid, "sessionId": str(uuid.UUID(int=pid, version=4)), "cwd": cwds[0]}
        put(layout.live_session_path(pid), json.dumps(record).encode(), STORE_NOW - 3 * DAY)
    put(layout.settings_path, b'{"cleanupPeriodDays": 30}\n', STORE_NOW - 90 * DAY)
    for path, mtime in sorted(dated, key=lambda item: -len(item[0].parts)):
        os.utime(path, (mtime, mtime))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def code_digest() -> str:
    """Changes whenever the store's bytes could: this module's code."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
