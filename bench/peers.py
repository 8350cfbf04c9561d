# mypy: disable-error-code="import-untyped"
# (sessiontree has no py.typed marker yet; drop this line once it has.)
"""``python -m bench peers``: sessiontree side by side with its peers (issue 29).

On one generated archive (:func:`bench.datasets.ensure_peers_archive`: transcripts,
``file-history/`` backups, ``history.jsonl``), each tool runs the same task as a whole
command, timed from spawn to exit with its peak RSS (:func:`bench.resume.run_command`),
in a scratch ``HOME`` of its own that points at the archive (``CLAUDE_CONFIG_DIR`` for
sessiontree and ccusage, ``CLAUDE_PROJECTS_DIR`` for agentsview, the transcript's path
for the exporters). Every row runs once untimed first (the warm-up: the page cache, a
warm cache's filling, the output whose totals are compared), then ``--runs`` times,
rounds interleaved; a row shows the median, min and max of its runs.

The tasks (one table each, after a table of each tool's start-up: ``--version``, and
the interpreter's own start, the floor under every sessiontree row):

- ``sessions --all``: sessiontree with an empty cache each run (cold) and with its
  listing cache (warm); agentsview's ``sync`` (its cold start: the archive parsed into
  its SQLite, timed once), its ``export sessions --all`` (read from that SQLite, no
  server) and its ``session list`` (a CLI that asks its running server: it refuses to
  read the database itself without a daemon; a page holds at most 500 sessions).
- ``search WORD``: sessiontree's FTS index built first (untimed); agentsview's ``session
  search --fts`` (its tokenized FTS over messages) and its default substring search,
  through its server. Totals: the hits in what users and assistants wrote (ours with
  ``--role user --role assistant``, theirs ``--fts`` page by page), and their sessions.
- ``usage --by day --all``: sessiontree cold and warm; ccusage ``daily --json
  --offline`` (no cache of its own); agentsview ``usage daily --all --no-sync``.
  Totals: the tokens of each day (input, output, cache reads and writes).
- ``export html``: the archive's biggest session, sessiontree ``export --format html``
  (and ``--all-branches`` when this sessiontree has it), claude-code-log ``convert`` of
  the same file (``--no-cache``).

A peer that will not install (or a task it has no command for) is a row skipped with
the one line why. The ratio column is the row's median over sessiontree's reference row
of the table (the warm one where there are two).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import peer_tools
from bench.agentsview_pg import Unavailable
from bench.datasets import ARCHIVE_ROOT, DATA_DIR, ensure_peers_archive, log
from bench.generate import MB, ArchiveSpec, Corpus
from bench.peer_rows import (
    Row,
    Scene,
    export_has_all_branches,
    plan_export,
    plan_listing,
    plan_search,
    plan_startup,
    plan_usage,
)
from bench.peer_tools import Peer
from bench.peer_totals import compare_totals, format_totals

#: The word searched for: in prompts, replies and tool output of the generated archive.
WORD = "timeout"


@dataclass(frozen=True)
class Sizes:
    """The archive and how often each command runs."""

    mb: float
    sessions: int
    runs: int
    projects: int


DEFAULT = Sizes(mb=300, sessions=600, runs=5, projects=40)
QUICK = Sizes(mb=30, sessions=60, runs=2, projects=20)


# -- measuring ----------------------------------------------------------------------------


def measure(rows: Sequence[Row], runs: int, scratch: Path) -> None:
    """A warm-up of every row (its totals taken from it), then ``runs`` rounds, each row
    once a round."""
    live = [r for r in rows if r.skipped is None and not r.once]
    stderr = scratch / "stderr.txt"
    for row in live:
        log(f"warm-up: {row.task}: {row.tool}")
        detail = row.run(stderr, keep=row.parse is not None)
        if detail is None:
            continue
        try:
            if row.count is not None:
                row.totals = row.count()
            elif row.parse is not None:
                row.totals = row.parse(detail["stdout"])
            elif row.output is not None:
                row.totals = {"bytes": row.output.stat().st_size}
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            row.note = (row.note + "; " if row.note else "") + f"totals unread: {exc}"
        row.peak_rss_mb = 0.0
    for n in range(runs):
        log(f"round {n + 1}/{runs}")
        for row in live:
            if row.error is None:
                detail = row.run(stderr)
                if detail is not None:
                    row.runs.append(detail["seconds"])
    for row in live:
        if row.error is not None:
            row.runs = []


def add_ratios(rows: Sequence[Row]) -> None:
    """Each row's median over its table's reference row, and its totals against the
    sessiontree row's (the reference, or the first sessiontree row with totals)."""
    for task in dict.fromkeys(r.task for r in rows):
        table = [r for r in rows if r.task == task]
        reference = next((r for r in table if r.reference), None)
        ours = next(
            (r.totals for r in table if r.ours and r.totals is not None),
            None,
        )
        base = reference.median if reference is not None else None
        for row in table:
            if row.median is not None and base:
                row.ratio = row.median / base
            if not row.ours:
                row.agrees = compare_totals(task, ours, row.totals)


# -- output --------------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def table_rows(rows: Sequence[Row], task: str) -> list[list[str]]:
    """The cells of one task's table: tool, median, min, max, peak RSS, ratio, totals,
    agreement (a skipped or failed row says why in the totals cell)."""
    cells = []
    for row in (r for r in rows if r.task == task):
        if row.skipped is not None or row.error is not None:
            why = f"SKIP: {row.skipped}" if row.skipped is not None else f"ERROR: {row.error}"
            cells.append([row.tool, "-", "-", "-", "-", "-", why, ""])
            continue
        runs = row.runs
        cells.append(
            [
                row.tool,
                _seconds(row.median),
                _seconds(min(runs) if runs else None),
                _seconds(max(runs) if runs else None),
                f"{row.peak_rss_mb:.0f} MB" if runs else "-",
                f"{row.ratio:.2f}x" if row.ratio is not None else "-",
                format_totals(task, row.totals),
                "(ours)" if row.ours else row.agrees,
            ]
        )
    return cells


HEADERS = ("tool", "median", "min", "max", "peak RSS", "x sessiontree", "totals", "agree")


def print_tables(rows: Sequence[Row], runs: int, console: Console) -> None:
    for task in dict.fromkeys(r.task for r in rows):
        table = Table(
            title=f"{task} (median of {runs} runs; x: over the sessiontree row marked *)",
            title_justify="left",
        )
        for header in HEADERS:
            table.add_column(header, justify="right" if header in HEADERS[1:6] else "left")
        for cells, row in zip(
            table_rows(rows, task), [r for r in rows if r.task == task], strict=True
        ):
            if row.reference:
                cells[0] += " *"
            table.add_row(*cells)
        console.print(table)
        for row in rows:
            if row.task == task and row.note:
                console.print(f"  {row.note}", highlight=False)


def format_markdown(rows: Sequence[Row], runs: int) -> str:
    """The same tables as Markdown (for docs/BENCHMARKS.md), each with its notes."""
    out: list[str] = []
    for task in dict.fromkeys(r.task for r in rows):
        table = [r for r in rows if r.task == task]
        out += [f"**{task}** (median of {runs} runs; x: over the sessiontree row marked \\*)", ""]
        out.append("| " + " | ".join(HEADERS) + " |")
        out.append(
            "| " + " | ".join("---:" if h in HEADERS[1:6] else "---" for h in HEADERS) + " |"
        )
        for cells, row in zip(table_rows(rows, task), table, strict=True):
            if row.reference:
                cells[0] += " \\*"
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        notes = [f"- {r.note}" for r in table if r.note]
        out += ["", *notes, ""] if notes else [""]
    return "\n".join(out).rstrip() + "\n"


def format_report(
    sizes: Sizes,
    archive: dict[str, Any],
    peers: dict[str, Peer | Unavailable],
    bench: Bench,
) -> dict[str, Any]:
    rows = bench.rows
    return {
        "archive": {**archive, "changed": bench.archive_changed},
        "runs": sizes.runs,
        "cores": os.cpu_count(),
        "load": {"before": bench.load_before, "after": bench.load_after},
        "peers": {
            name: {"version": p.version, "installed": True}
            if isinstance(p, Peer)
            else {"installed": False, "reason": p.reason}
            for name, p in peers.items()
        },
        "tasks": [
            {"task": task, "rows": [r.as_json() for r in rows if r.task == task]}
            for task in dict.fromkeys(r.task for r in rows)
        ],
    }


# -- command line --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench peers",
        description="sessiontree next to agentsview, ccusage and claude-code-log (issue 29)",
    )
    parser.add_argument("--mb", type=float, help=f"archive size in MB (default {DEFAULT.mb:g})")
    parser.add_argument("--sessions", type=int, help=f"default {DEFAULT.sessions}")
    parser.add_argument("--runs", type=int, help=f"timed runs a row (default {DEFAULT.runs})")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK.mb:g} MB, {QUICK.sessions} sessions, {QUICK.runs} runs",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--word", default=WORD, help=f"what search looks for ({WORD})")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument(
        "--no-install",
        action="store_true",
        help="only peers already installed in the data folder (no network)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the results as JSON")
    output.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    return parser


def resolve_sizes(args: argparse.Namespace) -> Sizes:
    base = QUICK if args.quick else DEFAULT
    return Sizes(
        mb=args.mb if args.mb is not None else base.mb,
        sessions=args.sessions if args.sessions is not None else base.sessions,
        runs=args.runs if args.runs is not None else base.runs,
        projects=base.projects,
    )


@dataclass
class Bench:
    """One run of every row: the rows, the machine's load before and after (1-minute
    averages), and whether the archive is as it was (no tool wrote into it)."""

    rows: list[Row]
    load_before: float
    load_after: float
    archive_changed: bool = False
    notes: list[str] = field(default_factory=list)


def fingerprint(root: Path) -> tuple[int, int, int]:
    """Files, bytes and the newest mtime under ``root``: what a write would change."""
    stats = [p.stat() for p in root.rglob("*") if p.is_file()]
    return len(stats), sum(s.st_size for s in stats), max((s.st_mtime_ns for s in stats), default=0)


def run_bench(
    root: Path, peers: dict[str, Peer | Unavailable], runs: int, *, word: str = WORD
) -> Bench:
    """Every row measured on the config root ``root``."""
    before = fingerprint(root)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="sessiontree-bench-peers-") as scratch:
        scene = Scene(Path(scratch), root, peers)
        rows: list[Row] = []
        try:
            scene.start_agentsview()
            scene.start_daemon()
            rows = [
                *plan_startup(scene),
                *plan_listing(scene),
                *plan_search(scene, word),
                *plan_usage(scene),
                *plan_export(scene, all_branches=export_has_all_branches()),
            ]
            measure(rows, runs, Path(scratch))
        finally:
            scene.stop()
    add_ratios(rows)
    bench = Bench(rows, load_before, os.getloadavg()[0])
    if scene.daemon_rss_mb is not None:
        bench.notes.append(
            f"sessiontree's daemon: {scene.daemon_rss_mb:.0f} MB resident after every run"
        )
    if fingerprint(root) != before:
        bench.archive_changed = True
        bench.notes.append("WARNING: the archive changed during the run (a tool wrote into it)")
    return bench


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sizes = resolve_sizes(args)
    if sizes.mb <= 0 or sizes.sessions <= 0 or sizes.runs <= 0:
        raise SystemExit("python -m bench peers: --mb, --sessions and --runs must be positive")
    peers = peer_tools.find_peers(args.data_dir, install=not args.no_install)
    for name, peer in peers.items():
        if isinstance(peer, Unavailable):
            log(f"{name}: skipped: {peer.reason}")
        else:
            log(f"{name} {peer.version}: {peer.command}")
    spec = ArchiveSpec(sizes.sessions, sizes.projects, int(sizes.mb * MB), args.seed)
    data = ensure_peers_archive(args.data_dir, spec, corpus=lambda: Corpus.load(args.seed))
    bench = run_bench(data.path / ARCHIVE_ROOT, peers, sizes.runs, word=args.word)
    archive = {"mb": sizes.mb, "sessions": sizes.sessions, "projects": sizes.projects,
               "seed": args.seed, "bytes": data.size_bytes}  # fmt: skip
    if args.json:
        print(json.dumps(format_report(sizes, archive, peers, bench), indent=2))
        return 1 if any(r.error for r in bench.rows) or bench.archive_changed else 0
    heading = (
        f"peers bench: {data.size_bytes / MB:.0f} MB, {sizes.sessions} sessions, "
        f"{os.cpu_count()} cores, load {bench.load_before:.2f} before, "
        f"{bench.load_after:.2f} after"
    )
    if args.markdown:
        print(f"{heading}\n\n{format_markdown(bench.rows, sizes.runs)}", end="")
        print("".join(f"\n{note}\n" for note in bench.notes), end="")
    else:
        console = Console(width=160)
        console.print(heading, highlight=False)
        print_tables(bench.rows, sizes.runs, console)
        for note in bench.notes:
            console.print(note, highlight=False)
    return 1 if any(r.error for r in bench.rows) or bench.archive_changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
