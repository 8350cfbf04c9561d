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

The tasks (one table each):

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
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import peer_tools
from bench.agentsview_pg import Unavailable, local_environment
from bench.datasets import ARCHIVE_ROOT, DATA_DIR, ensure_peers_archive, log
from bench.generate import MB, ArchiveSpec, Corpus
from bench.peer_tools import Peer
from bench.resume import run_command, sessiontree_argv

Totals = dict[str, int]

#: The word searched for: in prompts, replies and tool output of the generated archive.
WORD = "timeout"
#: A page of hits, for every tool.
SEARCH_LIMIT = 50
SERVER_START_TIMEOUT = 60


@dataclass(frozen=True)
class Sizes:
    """The archive and how often each command runs."""

    mb: float
    sessions: int
    runs: int
    projects: int


DEFAULT = Sizes(mb=300, sessions=600, runs=5, projects=40)
QUICK = Sizes(mb=30, sessions=60, runs=2, projects=20)


@dataclass
class Row:
    """One tool doing one task: the command, and what its runs gave."""

    task: str
    tool: str
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    #: Why it is not measured (the peer is not installed, has no such command).
    skipped: str | None = None
    #: The row the table's ratios are over.
    reference: bool = False
    #: Untimed, before each run (a cold run empties its cache here).
    before: Callable[[], None] | None = None
    #: The totals from what the warm-up printed (or counted on their own, ``count``).
    parse: Callable[[bytes], Totals] | None = None
    count: Callable[[], Totals] | None = None
    note: str = ""
    #: The file the command writes (an export): its size is the row's total.
    output: Path | None = None
    #: Measured once, outside the rounds (agentsview's sync).
    once: bool = False
    runs: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    totals: Totals | None = None
    agrees: str = ""
    ratio: float | None = None
    error: str | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.runs) if self.runs else None

    def run(self, stderr_file: Path, *, keep: bool = False) -> dict[str, Any] | None:
        """One run; its detail, or None when it failed (the error kept)."""
        if self.before is not None:
            self.before()
        started = time.perf_counter()
        try:
            detail = run_command(
                self.argv,
                env=self.env,
                cwd=self.cwd or Path.cwd(),
                stderr_file=stderr_file,
                keep_stdout=keep,
            )
        except (RuntimeError, OSError) as exc:
            self.error = " ".join(str(exc).split())[:300]
            return None
        detail["seconds"] = time.perf_counter() - started
        self.peak_rss_mb = max(self.peak_rss_mb, float(detail["peak_rss_mb"]))
        return detail

    def as_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "command": [Path(self.argv[0]).name, *self.argv[1:]] if self.argv else None,
            "skipped": self.skipped,
            "error": self.error,
            "runs_s": self.runs,
            "median_s": self.median,
            "min_s": min(self.runs) if self.runs else None,
            "max_s": max(self.runs) if self.runs else None,
            "peak_rss_mb": self.peak_rss_mb if self.runs else None,
            "ratio": self.ratio,
            "reference": self.reference,
            "totals": self.totals,
            "agrees": self.agrees,
            "note": self.note,
        }


# -- totals -----------------------------------------------------------------------------


def parse_sessiontree_sessions(out: bytes) -> Totals:
    return {"sessions": len(json.loads(out))}


def parse_agentsview_sessions(out: bytes) -> Totals:
    return {"sessions": len(json.loads(out)["sessions"])}


def parse_sessiontree_hits(out: bytes) -> Totals:
    hits = json.loads(out)
    return {"hits": len(hits), "sessions": len({h["sessionId"] for h in hits})}


def parse_sessiontree_usage(out: bytes) -> Totals:
    return {
        row["key"]: row["inputTokens"]
        + row["outputTokens"]
        + row["cacheReadTokens"]
        + row["cacheCreationTokens"]
        for row in json.loads(out)
    }


def parse_ccusage_daily(out: bytes) -> Totals:
    return {
        row["period"]: row["inputTokens"]
        + row["outputTokens"]
        + row["cacheReadTokens"]
        + row["cacheCreationTokens"]
        for row in json.loads(out)["daily"]
    }


def parse_agentsview_daily(out: bytes) -> Totals:
    return {
        row["date"]: row["inputTokens"]
        + row["outputTokens"]
        + row["cacheReadTokens"]
        + row["cacheCreationTokens"]
        for row in json.loads(out)["daily"]
    }


def format_totals(task: str, totals: Totals | None) -> str:
    if totals is None:
        return ""
    if task.startswith("usage"):
        return f"{sum(totals.values()):,} tokens, {len(totals)} days"
    if set(totals) == {"bytes"}:
        return f"{totals['bytes'] / MB:.2f} MB written"
    return ", ".join(f"{value:,} {key}" for key, value in totals.items())


def compare_totals(task: str, ours: Totals | None, theirs: Totals | None) -> str:
    """Whether a peer's totals are sessiontree's: "yes", or how they differ."""
    if ours is None or theirs is None or "bytes" in theirs:
        return ""
    if ours == theirs:
        return "yes"
    if task.startswith("usage"):
        days = sorted(set(ours) | set(theirs))
        differ = sum(ours.get(d, 0) != theirs.get(d, 0) for d in days)
        mine, other = sum(ours.values()), sum(theirs.values())
        scale = f"{other / mine:.2f}x ours" if mine else f"{other:,} vs 0"
        return f"no: {differ} of {len(days)} days differ, tokens {scale}"
    parts = [
        f"{key} {theirs.get(key, 0):,} vs {ours.get(key, 0):,}"
        for key in ours
        if ours.get(key) != theirs.get(key)
    ]
    return "no: " + ", ".join(parts)


# -- the scene: scratch homes, caches, the agentsview server -----------------------------


@dataclass
class Scene:
    """A scratch folder for one bench run: a home per tool, sessiontree's caches."""

    folder: Path
    root: Path
    #: agentsview's server, once its rows have started it (stopped at the end).
    server: AgentsviewServer | None = None

    def home(self, name: str) -> Path:
        home = self.folder / "homes" / name
        home.mkdir(parents=True, exist_ok=True)
        return home

    def sessiontree_env(self, cache: str) -> dict[str, str]:
        """sessiontree over the archive with the cache folder ``cache`` (its own XDG
        cache too), in a home of its own."""
        home = self.home("sessiontree")
        return {
            **peer_tools.base_environment(home),
            "CLAUDE_CONFIG_DIR": str(self.root),
            "SESSIONTREE_CACHE_DIR": str(self.folder / "cache" / cache),
            "XDG_CACHE_HOME": str(self.folder / "xdg" / cache),
        }

    def emptier(self, cache: str) -> Callable[[], None]:
        """Empties sessiontree's cache folder ``cache`` (before a cold run)."""

        def empty() -> None:
            for folder in (self.folder / "cache" / cache, self.folder / "xdg" / cache):
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir(parents=True)

        return empty


class AgentsviewServer:
    """``agentsview serve --no-sync`` over its synced database, on a free loopback port,
    for the commands that only ask a server (they refuse to read the database
    themselves while its daemon is off)."""

    def __init__(self, binary: Path, env: dict[str, str], log_file: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [
            str(binary),
            "serve",
            "--port",
            str(self.port),
            "--no-sync",
            "--no-browser",
            "--no-update-check",
        ]
        with log_file.open("wb") as out:
            self.process = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                said = log_file.read_text(errors="replace").strip().splitlines()[-1:]
                raise RuntimeError(f"agentsview serve exited {self.process.returncode}: {said}")
            try:
                with urllib.request.urlopen(self.url + "/", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"agentsview serve did not answer in {SERVER_START_TIMEOUT} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# -- the rows ----------------------------------------------------------------------------


def _skipped(task: str, tool: str, peer: Peer | Unavailable | None, why: str = "") -> Row:
    reason = why or (peer.reason if isinstance(peer, Unavailable) else "not measured")
    return Row(task, tool, skipped=reason)


def biggest_transcript(root: Path) -> Path:
    return max(root.glob("projects/*/*.jsonl"), key=lambda p: (p.stat().st_size, p.name))


def plan_rows(
    scene: Scene,
    peers: dict[str, Peer | Unavailable],
    *,
    word: str = WORD,
    all_branches: bool,
) -> list[Row]:
    """Every row of every table, in table order (agentsview's sync and server started
    as its rows need them)."""
    st = sessiontree_argv()
    rows: list[Row] = []
    cold, warm = scene.sessiontree_env("cold"), scene.sessiontree_env("warm")
    cwd = scene.home("sessiontree")

    def ours(task: str, tool: str, args: list[str], **kw: Any) -> Row:
        env = cold if "cold" in tool else warm
        before = scene.emptier("cold") if "cold" in tool else None
        return Row(task, tool, [*st, *args], env, cwd, before=before, **kw)

    task = "sessions --all"
    rows += [
        ours(
            task,
            "sessiontree (cold cache)",
            ["sessions", "--all", "--json"],
            parse=parse_sessiontree_sessions,
        ),
        ours(
            task,
            "sessiontree (warm cache)",
            ["sessions", "--all", "--json"],
            parse=parse_sessiontree_sessions,
            reference=True,
        ),
    ]
    agentsview = peers.get("agentsview")
    server: AgentsviewServer | None = None
    av_env: dict[str, str] = {}
    if isinstance(agentsview, Peer):
        av_home = scene.home("agentsview")
        av_env = {**local_environment(av_home, scene.root), "TZ": "UTC", "LANG": "C.UTF-8"}
        av = str(agentsview.command)
        sync = Row(
            task,
            "agentsview sync (its cold start)",
            [av, "sync"],
            av_env,
            av_home,
            once=True,
            note="agentsview sync: the archive parsed into its SQLite, "
            "timed once (what its listing, search and usage read)",
        )
        rows.append(sync)
        log("agentsview sync (timed once) ...")
        detail = sync.run(scene.folder / "stderr-agentsview-sync.txt")
        if detail is not None:
            sync.runs = [detail["seconds"]]
            try:
                server = AgentsviewServer(agentsview.command, av_env, scene.folder / "av.log")
            except RuntimeError as exc:
                server_error = str(exc)
            else:
                server_error = ""
                scene.server = server
        else:
            server_error = f"agentsview sync failed: {sync.error}"
        rows.append(
            Row(
                task,
                "agentsview export sessions --all (its SQLite)",
                [
                    av,
                    "export",
                    "sessions",
                    "--all",
                    "--json",
                    "--include-one-shot",
                    "--include-automated",
                ],
                av_env,
                av_home,
                parse=parse_agentsview_sessions,
                skipped=None if detail is not None else server_error,
            )
        )
        if server is not None:
            rows.append(
                Row(
                    task,
                    "agentsview session list (its server)",
                    [
                        av,
                        "session",
                        "list",
                        "--server",
                        server.url,
                        "--json",
                        "--limit",
                        "500",
                        "--include-one-shot",
                        "--include-automated",
                    ],
                    av_env,
                    av_home,
                    parse=parse_agentsview_sessions,
                    note="agentsview session list: at most 500 sessions a page",
                )
            )
        else:
            rows.append(_skipped(task, "agentsview session list (its server)", None, server_error))
    else:
        rows.append(_skipped(task, "agentsview", agentsview))

    task = f"search {word}"
    # the index is built by the warm-up run (untimed), so every timed run is warm
    rows.append(
        ours(
            task,
            "sessiontree (warm index)",
            ["search", word, "--all", "--json", "--limit", str(SEARCH_LIMIT)],
            reference=True,
            count=lambda: count_sessiontree_hits(st, warm, cwd, word),
            note="search totals: hits in what users and assistants wrote "
            "(ours: --role user --role assistant; agentsview --fts: messages), "
            f"every page; timed: a page of {SEARCH_LIMIT}",
        )
    )
    if server is not None:
        av = str(agentsview.command) if isinstance(agentsview, Peer) else ""
        search = [
            av,
            "session",
            "search",
            word,
            "--server",
            server.url,
            "--json",
            "--limit",
            str(SEARCH_LIMIT),
        ]
        rows.append(
            Row(
                task,
                "agentsview search --fts (its server)",
                [*search, "--fts"],
                av_env,
                scene.home("agentsview"),
                count=lambda: count_agentsview_hits(search, av_env),
            )
        )
        rows.append(
            Row(
                task,
                "agentsview search, substring (its server)",
                search,
                av_env,
                scene.home("agentsview"),
                note="agentsview's default search: a substring scan of messages, "
                "thinking and tool input and output",
            )
        )
    else:
        rows.append(
            _skipped(
                task,
                "agentsview",
                agentsview,
                "" if not isinstance(agentsview, Peer) else "no agentsview server",
            )
        )

    task = "usage --by day --all"
    usage = ["usage", "--by", "day", "--all", "--json"]
    rows += [
        ours(task, "sessiontree (cold cache)", usage, parse=parse_sessiontree_usage),
        ours(
            task, "sessiontree (warm cache)", usage, parse=parse_sessiontree_usage, reference=True
        ),
    ]
    ccusage = peers.get("ccusage")
    if isinstance(ccusage, Peer):
        home = scene.home("ccusage")
        env = {**peer_tools.base_environment(home), "CLAUDE_CONFIG_DIR": str(scene.root)}
        rows.append(
            Row(
                task,
                "ccusage daily",
                [str(ccusage.command), "daily", "--json", "--offline"],
                env,
                home,
                parse=parse_ccusage_daily,
                note="ccusage: --offline, its bundled prices (no network here)",
            )
        )
    else:
        rows.append(_skipped(task, "ccusage", ccusage))
    if isinstance(agentsview, Peer) and not any(r.error for r in rows if r.once):
        rows.append(
            Row(
                task,
                "agentsview usage daily",
                [
                    str(agentsview.command),
                    "usage",
                    "daily",
                    "--all",
                    "--json",
                    "--no-sync",
                    "--offline",
                ],
                av_env,
                scene.home("agentsview"),
                parse=parse_agentsview_daily,
            )
        )
    else:
        rows.append(
            _skipped(
                task,
                "agentsview",
                agentsview,
                "" if not isinstance(agentsview, Peer) else "agentsview sync failed",
            )
        )

    task = "export html"
    source = biggest_transcript(scene.root)
    work = scene.folder / "export"
    transcript = work / source.parent.name / source.name
    transcript.parent.mkdir(parents=True, exist_ok=True)
    os.link(source, transcript)
    note = (
        f"export: the biggest session, {source.stat().st_size / MB:.1f} MB "
        f"({source.stem[:8]}), each tool's output a file"
    )
    rows.append(
        ours(
            task,
            "sessiontree html (cold cache)",
            [
                "export",
                str(transcript),
                "--format",
                "html",
                "-o",
                str(work / "sessiontree.html"),
                "--force",
            ],
            output=work / "sessiontree.html",
            reference=True,
            note=note,
        )
    )
    if all_branches:
        rows.append(
            ours(
                task,
                "sessiontree html --all-branches (cold cache)",
                [
                    "export",
                    str(transcript),
                    "--format",
                    "html",
                    "--all-branches",
                    "-o",
                    str(work / "sessiontree-all.html"),
                    "--force",
                ],
                output=work / "sessiontree-all.html",
            )
        )
    else:
        rows.append(
            _skipped(
                task,
                "sessiontree html --all-branches",
                None,
                "this sessiontree's export has no --all-branches",
            )
        )
    ccl = peers.get("claude-code-log")
    if isinstance(ccl, Peer):
        home = scene.home("claude-code-log")
        rows.append(
            Row(
                task,
                "claude-code-log convert",
                [
                    str(ccl.command),
                    "convert",
                    str(transcript),
                    "-o",
                    str(work / "claude-code-log.html"),
                    "--no-cache",
                ],
                peer_tools.base_environment(home),
                home,
                output=work / "claude-code-log.html",
            )
        )
    else:
        rows.append(_skipped(task, "claude-code-log", ccl))
    return rows


def count_sessiontree_hits(st: list[str], env: dict[str, str], cwd: Path, word: str) -> Totals:
    argv = [*st, "search", word, "--all", "--json", "--role", "user", "--role", "assistant"]
    detail = run_command(argv, env=env, cwd=cwd, stderr_file=cwd / "count.err", keep_stdout=True)
    return parse_sessiontree_hits(detail["stdout"])


def count_agentsview_hits(search: list[str], env: dict[str, str]) -> Totals:
    """Every page of agentsview's ``--fts`` hits (500 a page, the most it gives)."""
    argv = [*search[: search.index("--limit")], "--fts", "--limit", "500"]
    hits = 0
    sessions: set[str] = set()
    cursor = 0
    home = Path(env["HOME"])
    while True:
        detail = run_command(
            [*argv, "--cursor", str(cursor)],
            env=env,
            cwd=home,
            stderr_file=home / "count.err",
            keep_stdout=True,
        )
        page = json.loads(detail["stdout"])
        hits += len(page["matches"])
        sessions.update(m["session_id"] for m in page["matches"])
        cursor = int(page.get("next_cursor") or 0)
        if not cursor or not page["matches"]:
            return {"hits": hits, "sessions": len(sessions)}


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
            (r.totals for r in table if r.tool.startswith("sessiontree") and r.totals is not None),
            None,
        )
        base = reference.median if reference is not None else None
        for row in table:
            if row.median is not None and base:
                row.ratio = row.median / base
            if not row.tool.startswith("sessiontree"):
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
                "(ours)" if row.tool.startswith("sessiontree") else row.agrees,
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


def format_report(
    sizes: Sizes,
    archive: dict[str, Any],
    peers: dict[str, Peer | Unavailable],
    rows: Sequence[Row],
) -> dict[str, Any]:
    return {
        "archive": archive,
        "runs": sizes.runs,
        "cores": os.cpu_count(),
        "load": list(os.getloadavg()),
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
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser


def resolve_sizes(args: argparse.Namespace) -> Sizes:
    base = QUICK if args.quick else DEFAULT
    return Sizes(
        mb=args.mb if args.mb is not None else base.mb,
        sessions=args.sessions if args.sessions is not None else base.sessions,
        runs=args.runs if args.runs is not None else base.runs,
        projects=base.projects,
    )


def export_has_all_branches(st: list[str]) -> bool:
    done = subprocess.run([*st, "export", "--help"], capture_output=True, text=True, check=False)
    return "--all-branches" in done.stdout


def run_bench(
    root: Path,
    peers: dict[str, Peer | Unavailable],
    runs: int,
    *,
    word: str = WORD,
) -> list[Row]:
    """Every row measured on the config root ``root`` (never written to)."""
    with tempfile.TemporaryDirectory(prefix="sessiontree-bench-peers-") as scratch:
        scene = Scene(Path(scratch), root)
        for cache in ("cold", "warm"):
            scene.emptier(cache)()
        rows: list[Row] = []
        try:
            rows = plan_rows(
                scene, peers, word=word, all_branches=export_has_all_branches(sessiontree_argv())
            )
            measure(rows, runs, Path(scratch))
        finally:
            if scene.server is not None:
                scene.server.stop()
    add_ratios(rows)
    return rows


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
    root = data.path / ARCHIVE_ROOT
    rows = run_bench(root, peers, sizes.runs, word=args.word)
    archive = {
        "mb": sizes.mb,
        "sessions": sizes.sessions,
        "seed": args.seed,
        "bytes": data.size_bytes,
        "path": str(root),
    }
    if args.json:
        print(json.dumps(format_report(sizes, archive, peers, rows), indent=2))
    else:
        console = Console(width=160)
        console.print(
            f"peers bench: {data.size_bytes / MB:.0f} MB, {sizes.sessions} sessions, "
            f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}",
            highlight=False,
        )
        print_tables(rows, sizes.runs, console)
    return 1 if any(r.error for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
