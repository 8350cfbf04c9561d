"""``python -m bench``: generate (or reuse) data, then time sessiontree against baselines.

Each measurement runs in a fresh interpreter (``python -m bench.measure``) so its peak
RSS is its own; a time is the best of ``--runs`` runs, a peak RSS the highest. Imports
are not timed. Data comes from :mod:`bench.generate`, cached in ``bench/data/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import checkpoints, search, shapes, writing
from bench.datasets import (
    ARCHIVE_ROOT,
    DATA_DIR,
    TRANSCRIPT_NAME,
    DataSet,
    ensure_archive,
    ensure_cleanup_store,
    ensure_transcript,
    log,
)
from bench.generate import MB, ArchiveSpec, Corpus

REPO_ROOT = Path(__file__).resolve().parents[1]
CHILD_TIMEOUT = 900


@dataclass(frozen=True)
class Sizes:
    """How much data to measure on."""

    transcript_mb: float
    sessions: int
    archive_gb: float
    projects: int
    #: The worst case: one chain, never compacted (the resume rows).
    chain_mb: float
    #: Realistic transcripts of these sizes: does resuming grow with the file?
    series_mb: tuple[float, ...]
    #: The archive the search index rows build on (issue 13 asks for 2 GB).
    search_mb: float = 2048


FULL = Sizes(
    transcript_mb=200, sessions=2000, archive_gb=2, projects=40, chain_mb=200,
    series_mb=(50, 200, 800), search_mb=2048,
)  # fmt: skip
QUICK = Sizes(
    transcript_mb=20, sessions=200, archive_gb=0.1, projects=20, chain_mb=20,
    series_mb=(5, 20, 80), search_mb=50,
)  # fmt: skip


@dataclass(frozen=True)
class Target:
    """Limits a measurement must stay within; None means no limit of that kind."""

    max_ratio: float | None = None  # times the raw line read of the same file, or ratio_of
    max_seconds: float | None = None
    max_rss_mb: float | None = None
    #: Disk the backups take over a copy per version (``detail["disk_ratio"]``).
    max_disk_ratio: float | None = None
    #: What the ratio is over: the raw line read, or the row's baseline (say, the client).
    ratio_of: str = "raw"

    def describe(self) -> str:
        parts = []
        if self.max_ratio is not None:
            parts.append(f"<= {self.max_ratio:g}x {self.ratio_of}")
        if self.max_seconds is not None:
            parts.append(f"<= {self.max_seconds:g} s")
        if self.max_rss_mb is not None:
            parts.append(f"<= {self.max_rss_mb:g} MB")
        if self.max_disk_ratio is not None:
            parts.append(f"disk <= {self.max_disk_ratio:.0%} of copies")
        return ", ".join(parts)

    def met(
        self, seconds: float, ratio: float | None, rss_mb: float, detail: dict[str, Any]
    ) -> bool:
        disk = detail.get("disk_ratio")
        return (
            (self.max_ratio is None or (ratio is not None and ratio <= self.max_ratio))
            and (self.max_seconds is None or seconds <= self.max_seconds)
            and (self.max_rss_mb is None or rss_mb <= self.max_rss_mb)
            and (
                self.max_disk_ratio is None
                or (isinstance(disk, float) and disk <= self.max_disk_ratio)
            )
        )


TRANSCRIPT_TARGET = Target(max_ratio=3, max_rss_mb=150)
#: Issue 10: a first listing of 2,000 sessions / 2 GB <= 0.5 s, a cached one <= 30 ms.
LISTING_TARGET = Target(max_seconds=0.5, max_rss_mb=200)
LISTING_CACHED_TARGET = Target(max_seconds=0.03, max_rss_mb=200)
RESTORE_TARGET = Target(max_seconds=1)
SNAPSHOT_TARGET = Target(max_seconds=0.1)
DEDUP_TARGET = Target(max_disk_ratio=0.6)
APPEND_TARGET = Target(max_seconds=0.001)  # the p99 of one buffered append
FORK_TARGET = Target(max_seconds=2)
CLEANUP_TARGET = Target(max_seconds=1)
#: 8,000 records of a damaged shape (bench/shapes.py): quadratic, these took minutes.
SHAPE_TARGET = Target(max_seconds=0.5)
#: Issue 10, resuming: ``sessiontree context SESSION --json`` (the CLI, a fresh process)
#: over the real client resuming the same file (``claude -p -r``); start-up of the CLI.
RESUME_COLD_TARGET = Target(max_ratio=0.25, max_rss_mb=100, ratio_of="client")
RESUME_WARM_TARGET = Target(max_ratio=0.1, ratio_of="client")
RESUME_CHAIN_TARGET = Target(max_ratio=0.2, max_rss_mb=150, ratio_of="client")
STARTUP_TARGET = Target(max_seconds=0.1)
#: Issue 13: a warm query of the search index (the median) <= 50 ms.
SEARCH_QUERY_TARGET = Target(max_seconds=0.05)
#: One 37 MB line of 1.4 million blocks: a dict each once decoded (~290 bytes).
MANY_BLOCKS_TARGET = Target(max_seconds=2, max_rss_mb=700)

#: Which rows to run: reading (needs the generated transcript and archive),
#: checkpoints (builds its own small data in a scratch folder) and writing (appends and
#: commits in a scratch folder, a fork of the transcript, cleanup over a generated store),
#: resume (whole commands: sessiontree's CLI next to the real client, on the transcript,
#: the single chain and the series).
GROUPS = ("reading", "resume", "checkpoints", "writing", "damaged", "search")


@dataclass(frozen=True)
class Case:
    """One row of the table: a workload on a target, with the limits it must meet."""

    name: str
    workload: str
    target_path: Path
    data: str
    target: Target | None = None
    cache_file: Path | None = None  # listing: measure with this cache, primed first
    #: The detail entry shown as the row's time instead of the whole run's (a percentile).
    statistic: str | None = None
    #: The workload of the row this one's ratio is over (else the raw line read's file).
    baseline: str | None = None
    #: Shown in the target column of a row with no target.
    target_note: str = ""
    #: What the ratio column says the ratio is over, when the row has a baseline.
    vs: str = "baseline"


class ChildFailed(Exception):
    """A measurement subprocess exited with an error."""


def run_child(case: Case) -> dict[str, Any]:
    """One fresh-interpreter measurement of ``case``; its JSON report."""
    command = [sys.executable, "-m", "bench.measure", case.workload, str(case.target_path)]
    if case.cache_file is not None:
        command += ["--cache-file", str(case.cache_file)]
    # Measure this checkout's sessiontree, whatever the interpreter has installed.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH")])
        ),
    }
    proc = subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise ChildFailed(tail[0])
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


@dataclass
class Result:
    """What the runs of one case gave."""

    case: Case
    runs: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    error: str | None = None
    ratio: float | None = None

    @property
    def seconds(self) -> float | None:
        return min(self.runs) if self.runs else None

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "ERROR"
        if self.skipped is not None:
            return "SKIP"
        target = self.case.target
        if target is None or self.seconds is None:
            return ""
        unjudged = ""
        if target.max_ratio is not None and self.ratio is None:  # the baseline did not run
            target, unjudged = dataclasses.replace(target, max_ratio=None), " (no ratio)"
        met = target.met(self.seconds, self.ratio, self.peak_rss_mb, self.detail)
        return ("PASS" if met else "FAIL") + unjudged

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.case.name,
            "workload": self.case.workload,
            "data": self.case.data,
            "seconds": self.seconds,
            "runs": self.runs,
            "ratio_vs_raw": self.ratio,
            "baseline": self.case.baseline,
            "ratio_over": self.case.vs if self.case.baseline else "raw",
            "peak_rss_mb": self.peak_rss_mb if self.runs else None,
            "target": self.case.target.describe() if self.case.target else None,
            "verdict": self.verdict or None,
            "detail": self.detail,
            "skipped": self.skipped,
            "error": self.error,
        }

    @property
    def done(self) -> bool:
        """Nothing more to run: skipped or failed."""
        return self.skipped is not None or self.error is not None

    def run_once(self, label: str, *, timed: bool = True) -> None:
        """One child run; its time, RSS and detail are kept if ``timed``; a skip or an
        error ends the case."""
        try:
            report = run_child(self.case)
        except (ChildFailed, subprocess.TimeoutExpired) as exc:
            self.error = str(exc)
            log(f"{self.case.name}: error: {exc}")
            return
        if "skipped" in report:
            self.skipped = str(report["skipped"])
            log(f"{self.case.name}: skipped: {self.skipped}")
            return
        seconds, rss = float(report["seconds"]), float(report["peak_rss_mb"])
        if self.case.statistic is not None:
            seconds = float(report["detail"][self.case.statistic])
        log(f"{self.case.name}: {label} {_format_seconds(seconds)} s, {rss:.0f} MB")
        if not timed:
            return
        if not self.runs or seconds < min(self.runs):
            self.detail = report["detail"]  # the detail of the run whose time is shown
        self.runs.append(seconds)
        self.peak_rss_mb = max(self.peak_rss_mb, rss)


def measure_all(cases: Sequence[Case], runs: int) -> list[Result]:
    """``runs`` rounds over every case, interleaved so that a noisy moment on the machine
    hits all of them, not one (cases with a cache get an untimed priming run first)."""
    results = [Result(case) for case in cases]
    for result in results:
        if result.case.cache_file is not None:
            result.run_once("priming run", timed=False)
    for number in range(1, runs + 1):
        for result in results:
            if not result.done:
                result.run_once(f"run {number}/{runs}")
    return results


def plan_cases(transcript: DataSet, archive: DataSet, sessions: int, cache_dir: Path) -> list[Case]:
    """The rows, in order: the baselines first, since the ratios divide by the raw read."""
    path = transcript.path / TRANSCRIPT_NAME
    root = archive.path / ARCHIVE_ROOT
    about = f"{transcript.size_bytes / MB:.0f} MB transcript"
    listed = f"{sessions} sessions, {archive.size_bytes / MB:.0f} MB"
    return [
        Case("raw line read", "raw", path, about),
        Case("json.loads per line", "json", path, about),
        Case("sessiontree open+path+context", "sessiontree", path, about, TRANSCRIPT_TARGET),
        Case("list_sessions (no cache)", "listing", root, listed, LISTING_TARGET),
        Case(
            "list_sessions (warm cache)",
            "listing",
            root,
            listed,
            LISTING_CACHED_TARGET,
            cache_file=cache_dir / "index.msgpack",
        ),
    ]


def plan_resume_cases(
    realistic: DataSet, chain: DataSet, series: Sequence[DataSet], archive: DataSet | None,
    sessions: int, legacy: DataSet | None = None,
) -> list[Case]:  # fmt: skip
    """Issue 10 side by side: start-up; on the realistic transcript the real client's
    resume, then sessiontree's ``context`` cold and warm and ``show``/``tree``/``search``;
    the same on the single chain; the client's resume and ``context`` cold and warm on
    the 2.0.x-shaped transcript (``legacy``: compacted as 2.0.x clients compact, nothing
    preserved); ``context`` cold and warm over the series; the CLI's listing.
    Every row is a whole command in a fresh process (bench/resume.py)."""
    path = realistic.path / TRANSCRIPT_NAME
    chained = chain.path / TRANSCRIPT_NAME
    real = f"{realistic.size_bytes / MB:.0f} MB realistic"
    worst = f"{chain.size_bytes / MB:.0f} MB single chain"
    client, client_chain = "client resume: realistic", "client resume: chain"
    floor, cost = "floor of a Python CLI", "cost only"
    cases = [
        Case("python -c pass", "python-start", REPO_ROOT, "interpreter start", target_note=floor),
        Case("python: import click, msgspec, orjson", "python-libraries", REPO_ROOT,
             "start-up", target_note="floor of a CLI on them"),
        Case("sessiontree --version", "cli-version", REPO_ROOT, "start-up", STARTUP_TARGET),
        Case("sessiontree --help", "cli-help", REPO_ROOT, "start-up", STARTUP_TARGET),
        Case("client --version", "client-version", REPO_ROOT, "start-up", target_note=cost),
        Case("client bare start (-p)", "client-start", REPO_ROOT, "new session", target_note=cost),
        Case("raw line read", "raw", path, real),
        Case(client, "client-resume", path, real, target_note="the baseline"),
        Case("context cold", "cli-context", path, real, RESUME_COLD_TARGET, baseline=client,
             vs="client"),
        Case("context warm (+1 MB)", "cli-context-warm", path, real, RESUME_WARM_TARGET,
             baseline=client, vs="client"),
        Case("show --json", "cli-show", path, real, target_note=cost),
        Case("tree --json", "cli-tree", path, real, target_note=cost),
        Case("search --all (no hit), first", "cli-search", path, real, target_note=cost),
        Case("search --all (no hit), indexed", "cli-search-indexed", path, real,
             target_note=cost),
        Case("raw line read: chain", "raw", chained, worst),
        Case("json.loads per line: chain", "json", chained, worst),
        Case(client_chain, "client-resume", chained, worst, target_note="the baseline"),
        Case("context cold: chain", "cli-context", chained, worst, RESUME_CHAIN_TARGET,
             baseline=client_chain, vs="client"),
    ]  # fmt: skip
    if legacy is not None:
        old = legacy.path / TRANSCRIPT_NAME
        shaped = f"{legacy.size_bytes / MB:.0f} MB 2.0.x-shaped"
        client_old = "client resume: 2.0.x-shaped"
        cases += [
            Case("raw line read: 2.0.x-shaped", "raw", old, shaped),
            Case(client_old, "client-resume", old, shaped, target_note="the baseline"),
            Case("context cold: 2.0.x-shaped", "cli-context", old, shaped, RESUME_COLD_TARGET,
                 baseline=client_old, vs="client"),
            Case("context warm (+1 MB): 2.0.x-shaped", "cli-context-warm", old, shaped,
                 RESUME_WARM_TARGET, baseline=client_old, vs="client"),
        ]  # fmt: skip
    for data in series:
        size = f"{data.size_bytes / MB:.0f} MB realistic"
        file = data.path / TRANSCRIPT_NAME
        cases += [
            Case(f"raw line read: {size.split()[0]} MB", "raw", file, size),
            Case(f"context cold: {size.split()[0]} MB", "cli-context", file, size,
                 target_note="series"),
            Case(f"context warm (+1 MB): {size.split()[0]} MB", "cli-context-warm", file,
                 size, target_note="series"),
        ]  # fmt: skip
    if archive is not None:
        root = archive.path / ARCHIVE_ROOT
        listed = f"{sessions} sessions, {archive.size_bytes / MB:.0f} MB"
        cases += [
            Case("sessions --all (CLI, no cache)", "cli-sessions", root, listed,
                 target_note=cost),
            Case("sessions --all (CLI, cached)", "cli-sessions-cached", root, listed,
                 target_note=cost),
        ]  # fmt: skip
    return cases


def unique_cases(cases: Sequence[Case]) -> list[Case]:
    """The cases without repeats (the same workload on the same target, say the raw read
    of the transcript in two groups, or the series' size that is the transcript's): the
    first of each is kept."""
    seen: set[tuple[str, Path, Path | None]] = set()
    kept = []
    for case in cases:
        key = (case.workload, case.target_path, case.cache_file)
        if key not in seen:
            seen.add(key)
            kept.append(case)
    return kept


def series_summary(results: Sequence[Result], series: Sequence[DataSet]) -> str | None:
    """Lines of ``context`` cold and warm over the series: file size against time, RSS
    and output (the size of the active path's context)."""
    files = {d.path / TRANSCRIPT_NAME: d.size_bytes for d in series}
    lines = []
    for workload, what in (("cli-context", "cold"), ("cli-context-warm", "warm (+1 MB)")):
        rows = []
        for result in results:
            size = files.get(result.case.target_path)
            if result.case.workload != workload or size is None or result.seconds is None:
                continue
            printed = result.detail.get("stdout_bytes", 0) / MB
            rows.append((size, result.seconds, result.peak_rss_mb, printed))
        parts = [
            f"{size / MB:.0f} MB file: {seconds:.3f} s, {rss:.0f} MB RSS, "
            f"{printed:.1f} MB of context"
            for size, seconds, rss, printed in sorted(rows)
        ]
        if parts:
            lines.append(f"series, context {what}: " + "; ".join(parts))
    return "\n".join(lines) if lines else None


def plan_checkpoint_cases(scratch: Path) -> list[Case]:
    """Restore, snapshot and dedup rows: each run builds its data under ``scratch``."""
    files = f"{checkpoints.TRACKED_FILES:,} tracked files"
    edits = checkpoints.EditRun()
    return [
        Case("restore code (plan+drift+apply)", "restore", scratch, files, RESTORE_TARGET),
        Case("snapshot, all unchanged", "snapshot", scratch, files, SNAPSHOT_TARGET),
        Case("backups: dedup vs copies", "dedup", scratch, edits.describe(), DEDUP_TARGET),
    ]


def plan_damaged_cases(scratch: Path) -> list[Case]:
    """Open+path+context on damaged transcripts that each build in ``scratch``, each
    after its baseline: ``json.loads`` of every line of the same file."""
    cases = []
    for name, size in shapes.BENCH_SIZES.items():
        target = MANY_BLOCKS_TARGET if name == "many-blocks" else SHAPE_TARGET
        unit = "blocks on one line" if name == "many-blocks" else "records"
        data = f"{size:,} {unit}"
        cases += [
            Case(f"json.loads per line: {name}", f"damaged-{name}-json", scratch, data),
            Case(
                f"damaged: {name}",
                f"damaged-{name}",
                scratch,
                data,
                target,
                baseline=f"damaged-{name}-json",
            ),
        ]
    return cases


def plan_writing_cases(
    scratch: Path, transcript: DataSet, store: DataSet, sessions: int, *, with_raw: bool
) -> list[Case]:
    """Appends, commits, fork, cleanup, each after its baseline; ``with_raw`` adds the raw
    line read the fork is compared to (the reading group has it already)."""
    path = transcript.path / TRANSCRIPT_NAME
    root = store.path / ARCHIVE_ROOT
    about = f"{transcript.size_bytes / MB:.0f} MB transcript"
    appends = f"{writing.APPENDS:,} appends on {writing.PREFILL / MB:.0f} MB"
    turns = f"{writing.COMMIT_TURNS} turns, fsync each"
    stored = f"{sessions:,} sessions, {store.size_bytes / MB:.0f} MB"
    none = "none (measured only)"
    p50, p99 = "p50_s", "p99_s"
    return [
        Case("append p99: bare os.write", "append-raw", scratch, appends, statistic=p99),
        Case(
            "append p99: Session (buffered)",
            "append",
            scratch,
            appends,
            APPEND_TARGET,
            statistic=p99,
            baseline="append-raw",
        ),
        Case("turn commit p50: bare write+fsync", "commit-raw", scratch, turns, statistic=p50),
        Case(
            "turn commit p50: Session.end_turn",
            "commit",
            scratch,
            turns,
            statistic=p50,
            baseline="commit-raw",
            target_note=none,
        ),
        *([Case("raw line read", "raw", path, about)] if with_raw else []),
        Case("copy file (shutil.copyfile)", "copy", path, about),
        Case("fork (open+plan+apply)", "fork", path, about, FORK_TARGET),
        Case("scandir+stat walk", "walk", root, stored),
        Case("plan_cleanup", "cleanup", root, stored, CLEANUP_TARGET, baseline="walk"),
    ]


def search_archive_spec(search_mb: float, projects: int, seed: int) -> ArchiveSpec:
    """The archive of the search rows: ``search_mb`` MB in sessions of about 1 MB each
    (as the 2 GB, 2,000-session archive), at least 10, over at most ``projects``."""
    sessions = max(10, round(search_mb))
    return ArchiveSpec(sessions, min(projects, sessions), int(search_mb * MB), seed)


def plan_search_cases(archive: DataSet, sessions: int, scratch: Path) -> list[Case]:
    """The search index rows: a first build, an update with nothing new, warm queries
    (the index of the first two, kept in ``scratch``), the updates after two appends."""
    root = archive.path / ARCHIVE_ROOT
    about = f"{sessions:,} sessions, {archive.size_bytes / MB:.0f} MB"
    db = scratch / "search-index.sqlite"
    cases = [
        Case("search index: first build", "search-build", root, about, target_note="MB/s"),
        Case("search index: update, nothing new", "search-noop", root, about, cache_file=db),
        Case(
            "search: warm query p50",
            "search-query",
            root,
            about,
            SEARCH_QUERY_TARGET,
            cache_file=db,
            statistic="p50_s",
        ),
    ]
    for mb in search.APPEND_MB:
        cases.append(
            Case(
                f"search index: update after {mb} MB appended",
                f"search-append-{mb}mb",
                root,
                f"{mb} MB on the biggest transcript",
                target_note="follows the MB",
            )
        )
    return cases


def add_ratios(results: list[Result]) -> None:
    """Each transcript row's time over the raw line read of the same file; a row with a
    baseline, over its baseline row's (named by its workload or its row name)."""
    by_key = {r.case.workload: r for r in results} | {r.case.name: r for r in results}
    for result in results:
        base = by_key.get(result.case.baseline or "")
        if result.seconds is not None and base is not None and base.seconds:
            result.ratio = result.seconds / base.seconds
    raws: dict[Path, Result] = {}
    for result in results:
        if result.case.workload == "raw" and result.seconds is not None:
            raws.setdefault(result.case.target_path, result)
    for result in results:
        raw = raws.get(result.case.target_path)
        if result.seconds is not None and raw is not None and result.case.baseline is None:
            result.ratio = result.seconds / (raw.seconds or 1e-9)


def print_table(results: list[Result], runs: int) -> None:
    table = Table(title=f"sessiontree benchmark (best of {runs} runs, fresh process each)")
    for column in ("measurement", "data", "seconds", "ratio", "peak RSS MB", "target", "result"):
        table.add_column(
            column, justify="right" if column in ("seconds", "ratio", "peak RSS MB") else "left"
        )
    for result in results:
        seconds = result.seconds
        over = result.case.vs if result.case.baseline else "raw"
        table.add_row(
            result.case.name,
            result.case.data,
            _format_seconds(seconds),
            f"{result.ratio:.2f}x {over}" if result.ratio is not None else "-",
            f"{result.peak_rss_mb:.0f}" if result.runs else "-",
            result.case.target.describe() if result.case.target else result.case.target_note,
            result.verdict,
        )
    Console(file=sys.stdout, width=160).print(table)
    for result in results:
        if result.skipped or result.error:
            print(f"{result.case.name}: {result.verdict.lower()}: {result.skipped or result.error}")
        elif "note" in result.detail:
            print(f"{result.case.name}: {result.detail['note']}")


def _format_seconds(seconds: float | None) -> str:
    """Three decimals; six under 10 ms (a percentile of one call)."""
    if seconds is None:
        return "-"
    return f"{seconds:.3f}" if seconds >= 0.01 else f"{seconds:.6f}"


def format_report(sizes: Sizes, data: dict[str, DataSet], results: list[Result]) -> dict[str, Any]:
    """The ``--json`` output: sizes asked for, data sets made, and every result."""
    return {
        "sizes": asdict(sizes),
        "data": {
            name: {"path": str(d.path), "size_bytes": d.size_bytes, "params": d.params}
            for name, d in data.items()
        },
        "results": [r.as_json() for r in results],
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--transcript-mb", type=float, help=f"default {FULL.transcript_mb:g}")
    parser.add_argument("--sessions", type=int, help=f"default {FULL.sessions}")
    parser.add_argument("--archive-gb", type=float, help=f"default {FULL.archive_gb:g}")
    parser.add_argument("--projects", type=int, help=f"default {FULL.projects}")
    parser.add_argument(
        "--chain-mb", type=float, help=f"the single chain (worst case), default {FULL.chain_mb:g}"
    )
    parser.add_argument(
        "--series",
        type=_sizes_list,
        help="realistic transcript sizes in MB, comma-separated, default "
        + ",".join(f"{mb:g}" for mb in FULL.series_mb),
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke-run sizes: {QUICK.transcript_mb:g} MB, {QUICK.sessions} sessions, "
        f"{QUICK.archive_gb:g} GB, a {QUICK.chain_mb:g} MB chain, series "
        + ",".join(f"{mb:g}" for mb in QUICK.series_mb)
        + " MB (explicit size flags still win)",
    )
    parser.add_argument(
        "--search-mb",
        type=float,
        help=f"the archive of the search rows, in MB, default {FULL.search_mb:g} "
        f"(--quick: {QUICK.search_mb:g})",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement (best time kept)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument(
        "--only",
        choices=GROUPS,
        action="append",
        help="run only these rows (repeatable): reading = the transcript and listing rows, "
        "resume = the CLI next to the real client (context cold and warm, the single "
        "chain, the series, start-up, show/tree/search, CLI listing), "
        "checkpoints = restore, snapshot and dedup (no generated data needed), "
        "writing = appends, turn commits, fork of the transcript, cleanup planning, "
        "search = the search index: first build, no-op update, warm query, appends",
    )
    parser.add_argument(
        "--rows",
        action="append",
        metavar="TEXT",
        help="of those, run only the rows whose name holds TEXT (repeatable; the data sets "
        "of the groups are made all the same)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--strict", action="store_true", help="exit with status 1 when a target is missed"
    )
    return parser


def _sizes_list(text: str) -> tuple[float, ...]:
    return tuple(float(part) for part in text.split(",") if part.strip())


def resolve_sizes(args: argparse.Namespace) -> Sizes:
    base = QUICK if args.quick else FULL
    return Sizes(
        chain_mb=args.chain_mb if args.chain_mb is not None else base.chain_mb,
        series_mb=args.series if args.series is not None else base.series_mb,
        transcript_mb=args.transcript_mb if args.transcript_mb is not None else base.transcript_mb,
        sessions=args.sessions if args.sessions is not None else base.sessions,
        archive_gb=args.archive_gb if args.archive_gb is not None else base.archive_gb,
        projects=args.projects if args.projects is not None else base.projects,
        search_mb=args.search_mb if args.search_mb is not None else base.search_mb,
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["peers"]:  # issue 29: sessiontree next to its peers (bench/peers.py)
        from bench import peers

        return peers.main(argv[1:])
    args = _parser().parse_args(argv)
    sizes = resolve_sizes(args)
    groups = args.only or GROUPS
    data: dict[str, DataSet] = {}
    corpus = functools.cache(lambda: Corpus.load(args.seed))
    if "reading" in groups or "writing" in groups or "resume" in groups:
        data["transcript"] = ensure_transcript(
            args.data_dir, mb=sizes.transcript_mb, seed=args.seed, corpus=corpus
        )
    series: list[DataSet] = []
    if "resume" in groups:
        data["chain"] = ensure_transcript(
            args.data_dir, mb=sizes.chain_mb, seed=args.seed, corpus=corpus, single_chain=True
        )
        data["transcript-2.0"] = ensure_transcript(
            args.data_dir, mb=sizes.transcript_mb, seed=args.seed, corpus=corpus,
            compactions="2.0",
        )  # fmt: skip
        for mb in sizes.series_mb:
            same = mb == sizes.transcript_mb
            made = data["transcript"] if same else ensure_transcript(
                args.data_dir, mb=mb, seed=args.seed, corpus=corpus
            )  # fmt: skip
            data[f"series-{mb:g}mb"] = made
            series.append(made)
    if "writing" in groups:
        store = writing.StoreSpec(sizes.sessions, args.seed)
        data["cleanup_store"] = ensure_cleanup_store(args.data_dir, store)
    if "reading" in groups or "resume" in groups:
        total = int(sizes.archive_gb * 1024 * MB)
        spec = ArchiveSpec(sizes.sessions, sizes.projects, total, args.seed)
        data["archive"] = ensure_archive(args.data_dir, spec, corpus=corpus)
    if "search" in groups:
        spec = search_archive_spec(sizes.search_mb, sizes.projects, args.seed)
        data["search_archive"] = ensure_archive(args.data_dir, spec, corpus=corpus)
    with tempfile.TemporaryDirectory(prefix="sessiontree-bench-") as cache_dir:
        cases = []
        if "reading" in groups:
            cache = Path(cache_dir)
            cases += plan_cases(data["transcript"], data["archive"], sizes.sessions, cache)
        if "resume" in groups:
            transcript, chain, archive = data["transcript"], data["chain"], data["archive"]
            cases += plan_resume_cases(
                transcript, chain, series, archive, sizes.sessions, data["transcript-2.0"]
            )
        if "checkpoints" in groups:
            scratch = Path(cache_dir) / "checkpoints"
            scratch.mkdir()
            cases += plan_checkpoint_cases(scratch)
        if "damaged" in groups:
            scratch = Path(cache_dir) / "damaged"
            scratch.mkdir()
            cases += plan_damaged_cases(scratch)
        if "writing" in groups:
            scratch = Path(cache_dir) / "writing"
            scratch.mkdir()
            with_raw = "reading" not in groups
            transcript, store = data["transcript"], data["cleanup_store"]
            cases += plan_writing_cases(
                scratch, transcript, store, sizes.sessions, with_raw=with_raw
            )
        if "search" in groups:
            scratch = Path(cache_dir) / "search"
            scratch.mkdir()
            sessions = search_archive_spec(sizes.search_mb, sizes.projects, args.seed).sessions
            cases += plan_search_cases(data["search_archive"], sessions, scratch)
        if args.rows:
            cases = [c for c in cases if any(text in c.name for text in args.rows)]
        results = measure_all(unique_cases(cases), args.runs)
    add_ratios(results)
    if args.json:
        print(json.dumps(format_report(sizes, data, results), indent=2))
    else:
        print_table(results, args.runs)
        summary = series_summary(results, series)
        if summary is not None:
            print(summary)
    failed = ("FAIL", "ERROR") if args.strict else ("ERROR",)
    return 1 if any(r.verdict.startswith(failed) for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
