# mypy: disable-error-code="import-untyped"
# (sessiontree has no py.typed marker yet; drop this line once it has.)
"""The rows of ``python -m bench peers``: each tool doing each task, as a whole command
in a scratch home of its own that points at the generated archive.

A :class:`Row` is a command and what its runs gave. The planners lay out one table's
rows each (:func:`plan_startup`, :func:`plan_listing`, :func:`plan_search`,
:func:`plan_usage`, :func:`plan_export`); a peer that is not installed, or has no
command for a task, is a row skipped with the one line why. agentsview reads its own
SQLite, filled by its ``sync`` (timed once, its cold start); its listing and search
commands only ask a running server (they refuse to read the database themselves with
its daemon off), so :class:`AgentsviewServer` runs ``agentsview serve --no-sync`` for
them on a loopback port.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import peer_tools
from bench.agentsview_pg import Unavailable, local_environment
from bench.datasets import log
from bench.peer_tools import Peer
from bench.peer_totals import (
    MB,
    Totals,
    parse_agentsview_daily,
    parse_agentsview_sessions,
    parse_ccusage_daily,
    parse_ccusage_sessions,
    parse_sessiontree_hits,
    parse_sessiontree_sessions,
    parse_sessiontree_usage,
)
from bench.resume import run_command, sessiontree_argv

#: A page of hits, for every tool (the timed search).
SEARCH_LIMIT = 50
#: The most hits agentsview gives a page (its totals are counted page by page).
AGENTSVIEW_PAGE = 500
SERVER_START_TIMEOUT = 60
#: agentsview leaves one-shot and automated sessions out of its listing and search
#: unless asked: sessiontree lists and searches every session.
EVERY_SESSION = ("--include-one-shot", "--include-automated")
#: The task names, the tables' titles.
STARTUP, LISTING, USAGE, EXPORT = (
    "start-up",
    "sessions --all",
    "usage --by day --all",
    "export html",
)


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
    #: The totals from what the warm-up printed, or counted on their own (``count``).
    parse: Callable[[bytes], Totals] | None = None
    count: Callable[[], Totals] | None = None
    #: The file the command writes (an export): its size is the row's total.
    output: Path | None = None
    note: str = ""
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

    @property
    def ours(self) -> bool:
        return self.tool.startswith("sessiontree")

    def run(self, stderr_file: Path, *, keep: bool = False) -> dict[str, Any] | None:
        """One run, timed from spawn to exit; its detail, or None when it failed (the
        error kept)."""
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


def skipped(task: str, tool: str, peer: Peer | Unavailable | None, why: str = "") -> Row:
    reason = why or (peer.reason if isinstance(peer, Unavailable) else "not measured")
    return Row(task, tool, skipped=reason)


# -- the scene: scratch homes, caches, the agentsview server ------------------------------


class AgentsviewServer:
    """``agentsview serve --no-sync`` over its synced database, on a free loopback port."""

    def __init__(self, binary: Path, env: dict[str, str], log_file: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [str(binary), "serve", "--port", str(self.port), "--no-sync", "--no-browser"]
        with log_file.open("wb") as out:
            self.process = subprocess.Popen(
                [*argv, "--no-update-check"], env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=out,
            )  # fmt: skip
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


@dataclass
class Scene:
    """A scratch folder for one bench run over the config root ``root``: a home per
    tool, sessiontree's two cache folders (``cold``, emptied before each run; ``warm``),
    agentsview once synced and served."""

    folder: Path
    root: Path
    peers: dict[str, Peer | Unavailable]
    #: agentsview's environment, its sync's row and server once :meth:`start_agentsview`
    #: ran; why it could not, if it could not.
    agentsview_env: dict[str, str] = field(default_factory=dict)
    agentsview_sync: Row | None = None
    server: AgentsviewServer | None = None
    agentsview_down: str = ""
    #: sessiontree's daemon once :meth:`start_daemon` ran (its state folder, its pid);
    #: why not, if it could not start; its resident size when it stopped.
    daemon_state: Path | None = None
    daemon_pid: int | None = None
    daemon_down: str = ""
    daemon_rss_mb: float | None = None

    def __post_init__(self) -> None:
        for cache in ("cold", "warm"):
            self.empty_cache(cache)

    def home(self, name: str) -> Path:
        home = self.folder / "homes" / name
        home.mkdir(parents=True, exist_ok=True)
        return home

    def sessiontree(self, task: str, tool: str, args: list[str], **kw: Any) -> Row:
        """sessiontree's row: its console script (bytecode compiled), the cold cache
        (emptied before each run) when the tool's name says ``cold``, else the warm one;
        handed to its daemon (:meth:`start_daemon`) when the name says ``daemon``."""
        cache = "cold" if "cold" in tool else "warm"
        env = self.sessiontree_env(cache)
        if "daemon" in tool:
            if self.daemon_state is None:
                return skipped(task, tool, None, self.daemon_down or "no daemon")
            env["SESSIONTREE_STATE_DIR"] = str(self.daemon_state)
            kw["note"] = kw.get("note") or DAEMON_NOTE
        before = (lambda: self.empty_cache("cold")) if cache == "cold" else None
        return Row(task, tool, [*sessiontree_argv(), *args], env, self.home("sessiontree"),
                   before=before, **kw)  # fmt: skip

    def sessiontree_env(self, cache: str) -> dict[str, str]:
        return {
            **peer_tools.base_environment(self.home("sessiontree")),
            "CLAUDE_CONFIG_DIR": str(self.root),
            "SESSIONTREE_CACHE_DIR": str(self.folder / "cache" / cache),
            "XDG_CACHE_HOME": str(self.folder / "xdg" / cache),
        }

    def start_daemon(self) -> None:
        """``sessiontree daemon start`` (untimed, as agentsview's server is), in a state
        folder of its own: only the rows that name it are handed to it."""
        state = self.folder / "daemon"
        env = {**self.sessiontree_env("warm"), "SESSIONTREE_STATE_DIR": str(state)}
        command = [*sessiontree_argv(), "daemon", "start", "--json"]
        done = subprocess.run(command, env=env, capture_output=True, check=False)
        if done.returncode != 0:
            self.daemon_down = "sessiontree daemon start failed: " + " ".join(
                done.stderr.decode(errors="replace").split()
            )
            return
        self.daemon_state = state
        self.daemon_pid = int(json.loads(done.stdout)["pid"])

    def stop_daemon(self) -> None:
        if self.daemon_state is None or self.daemon_pid is None:
            return
        self.daemon_rss_mb = resident_mb(self.daemon_pid)
        env = {**self.sessiontree_env("warm"), "SESSIONTREE_STATE_DIR": str(self.daemon_state)}
        subprocess.run([*sessiontree_argv(), "daemon", "stop"], env=env, capture_output=True,
                       check=False)  # fmt: skip

    def empty_cache(self, cache: str) -> None:
        for folder in (self.folder / "cache" / cache, self.folder / "xdg" / cache):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)

    def agentsview(self) -> Peer | None:
        peer = self.peers.get("agentsview")
        return peer if isinstance(peer, Peer) else None

    def start_agentsview(self) -> None:
        """agentsview's sync of the archive (timed once, :attr:`agentsview_sync`), then
        its server; :attr:`agentsview_down` says why not when either fails."""
        peer = self.agentsview()
        if peer is None:
            return
        home = self.home("agentsview")
        self.agentsview_env = {**local_environment(home, self.root), "TZ": "UTC"}
        sync = Row(LISTING, "agentsview sync (its cold start)", [str(peer.command), "sync"],
                   self.agentsview_env, home, once=True,
                   note="agentsview sync: the archive parsed into its SQLite, timed once "
                   "(what its listing, search and usage read)")  # fmt: skip
        self.agentsview_sync = sync
        log("agentsview sync (timed once) ...")
        detail = sync.run(self.folder / "stderr-agentsview-sync.txt")
        if detail is None:
            self.agentsview_down = f"agentsview sync failed: {sync.error}"
            return
        sync.runs = [detail["seconds"]]
        try:
            self.server = AgentsviewServer(peer.command, self.agentsview_env, home / "serve.log")
        except RuntimeError as exc:
            self.agentsview_down = str(exc)

    def agentsview_row(self, task: str, tool: str, args: list[str], **kw: Any) -> Row:
        """agentsview's row (``{server}`` in ``args``: its server's URL), or skipped."""
        peer = self.agentsview()
        if peer is None:
            return skipped(task, "agentsview", self.peers.get("agentsview"))
        needs_server = "{server}" in args
        if self.agentsview_down or (needs_server and self.server is None):
            return skipped(task, tool, None, self.agentsview_down or "no agentsview server")
        url = self.server.url if self.server is not None else ""
        argv = [str(peer.command), *(a.replace("{server}", url) for a in args)]
        return Row(task, tool, argv, self.agentsview_env, self.home("agentsview"), **kw)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.stop_daemon()


#: The note of a row run through sessiontree's daemon.
DAEMON_NOTE = (
    "sessiontree (its daemon): `sessiontree daemon start` beforehand, untimed, as "
    "agentsview's server is; each run is the `sessiontree` command, which hands the run "
    "to a worker the daemon forks (peak RSS: the command's own process)"
)


def resident_mb(pid: int) -> float | None:
    """A process's resident size now (``VmRSS``), in MB; None if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# -- the tables ----------------------------------------------------------------------------


def plan_startup(scene: Scene) -> list[Row]:
    """Each tool's start-up (``--version``), and the interpreter's own start: the floor
    under every other row of that tool (not a task of the issue's: a reading of theirs)."""
    python = [sys.executable, "-c", "pass"]
    home = scene.home("sessiontree")
    rows = [
        scene.sessiontree(STARTUP, "sessiontree --version", ["--version"], reference=True),
        Row(STARTUP, "python -c pass (sessiontree's interpreter)", python,
            peer_tools.base_environment(home), home),
        scene.agentsview_row(STARTUP, "agentsview version", ["version"]),
    ]  # fmt: skip
    for name, args in (("ccusage", ["--version"]), ("claude-code-log", ["--version"])):
        peer = scene.peers.get(name)
        if isinstance(peer, Peer):
            own = scene.home(name)
            env = peer_tools.base_environment(own)
            rows.append(Row(STARTUP, f"{name} {' '.join(args)}", [str(peer.command), *args],
                            env, own))  # fmt: skip
        else:
            rows.append(skipped(STARTUP, name, peer))
    return rows


def plan_listing(scene: Scene) -> list[Row]:
    listing = ["sessions", "--all", "--json"]
    rows = [
        scene.sessiontree(LISTING, "sessiontree (cold cache)", listing,
                          parse=parse_sessiontree_sessions),
        scene.sessiontree(LISTING, "sessiontree (warm cache)", listing,
                          parse=parse_sessiontree_sessions),
        # (the reference: agentsview's listing asks its server, so ours asks our daemon)
        scene.sessiontree(LISTING, "sessiontree (warm cache, its daemon)", listing,
                          parse=parse_sessiontree_sessions, reference=True),
    ]  # fmt: skip
    if scene.agentsview_sync is not None:
        rows.append(scene.agentsview_sync)
    rows.append(scene.agentsview_row(
        LISTING, "agentsview export sessions --all (its SQLite)",
        ["export", "sessions", "--all", "--json", *EVERY_SESSION], parse=parse_agentsview_sessions,
    ))  # fmt: skip
    if scene.agentsview() is not None:
        rows.append(scene.agentsview_row(
            LISTING, "agentsview session list (its server)",
            ["session", "list", "--server", "{server}", "--json", "--limit",
             str(AGENTSVIEW_PAGE), *EVERY_SESSION],
            parse=parse_agentsview_sessions,
            note=f"agentsview session list: at most {AGENTSVIEW_PAGE} sessions a page",
        ))  # fmt: skip
    rows.append(ccusage_row(scene, LISTING, "ccusage session (usage by session)",
                            ["session", "--json", "--offline"], parse=parse_ccusage_sessions,
                            note="ccusage session: its usage report by session, the nearest "
                            "it has to a listing"))  # fmt: skip
    rows.append(
        no_command(
            scene,
            LISTING,
            "claude-code-log",
            "no listing command (its session browser is a TUI, --tui)",
        )
    )
    return rows


def ccusage_row(scene: Scene, task: str, tool: str, args: list[str], **kw: Any) -> Row:
    """ccusage's row, in a home of its own, ``CLAUDE_CONFIG_DIR`` the archive."""
    peer = scene.peers.get("ccusage")
    if not isinstance(peer, Peer):
        return skipped(task, "ccusage", peer)
    home = scene.home("ccusage")
    env = {**peer_tools.base_environment(home), "CLAUDE_CONFIG_DIR": str(scene.root)}
    return Row(task, tool, [str(peer.command), *args], env, home, **kw)


def no_command(scene: Scene, task: str, name: str, why: str) -> Row:
    """A peer's row for a task it has no command for (skipped, saying so), or why it
    is not there at all."""
    peer = scene.peers.get(name)
    return skipped(task, name, peer, why if isinstance(peer, Peer) else "")


def plan_search(scene: Scene, word: str) -> list[Row]:
    """The index is built by the warm-up run (untimed), so every timed run is warm."""
    task = f"search {word}"
    query = ["search", word, "--all", "--json", "--limit", str(SEARCH_LIMIT)]
    alone = scene.sessiontree(
        task, "sessiontree (warm index)", query,
        note="search totals: hits in what users and assistants wrote (ours: --role user "
        "--role assistant; agentsview --fts: messages), every page; timed: a page of "
        f"{SEARCH_LIMIT}",
    )  # fmt: skip
    alone.count = lambda: count_sessiontree_hits(alone, word)
    # (the reference: agentsview's search asks its server, so ours asks our daemon)
    ours = scene.sessiontree(task, "sessiontree (warm index, its daemon)", query, reference=True)
    if ours.skipped is None:
        ours.count = lambda: count_sessiontree_hits(ours, word)
    # (one-shot and automated sessions are left out unless asked for: ours searches all)
    search = ["session", "search", word, "--server", "{server}", "--json", *EVERY_SESSION]
    theirs = scene.agentsview_row(task, "agentsview search --fts (its server)",
                                  [*search, "--limit", str(SEARCH_LIMIT), "--fts"])  # fmt: skip
    if theirs.skipped is None:
        theirs.count = lambda: count_agentsview_hits(theirs)
    rows = [alone, ours, theirs]
    if scene.agentsview() is not None:
        rows.append(scene.agentsview_row(
            task, "agentsview search, substring (its server)",
            [*search, "--limit", str(SEARCH_LIMIT)],
            note="agentsview's default search: a substring scan of messages, thinking and "
            "tool input and output",
        ))  # fmt: skip
    rows.append(no_command(scene, task, "ccusage", "no search command"))
    rows.append(no_command(scene, task, "claude-code-log", "no search command"))
    return rows


def plan_usage(scene: Scene) -> list[Row]:
    usage = ["usage", "--by", "day", "--all", "--json"]
    rows = [
        scene.sessiontree(USAGE, "sessiontree (cold cache)", usage,
                          parse=parse_sessiontree_usage),
        scene.sessiontree(USAGE, "sessiontree (warm cache)", usage,
                          parse=parse_sessiontree_usage, reference=True),
        scene.sessiontree(USAGE, "sessiontree (warm cache, its daemon)", usage,
                          parse=parse_sessiontree_usage),
    ]  # fmt: skip
    note = "ccusage: --offline, its bundled prices (no network here)"
    daily = ["daily", "--json", "--offline"]
    rows.append(ccusage_row(scene, USAGE, "ccusage daily", daily, parse=parse_ccusage_daily,
                            note=note))  # fmt: skip
    rows.append(scene.agentsview_row(
        USAGE, "agentsview usage daily",
        ["usage", "daily", "--all", "--json", "--no-sync", "--offline"],
        parse=parse_agentsview_daily,
    ))  # fmt: skip
    rows.append(no_command(scene, USAGE, "claude-code-log", "no usage report command"))
    return rows


def biggest_transcript(root: Path) -> Path:
    return max(root.glob("projects/*/*.jsonl"), key=lambda p: (p.stat().st_size, p.name))


def plan_export(scene: Scene, *, all_branches: bool) -> list[Row]:
    """The archive's biggest session, linked into a scratch project folder (so nothing a
    tool writes beside it lands in the archive), each tool's output a file."""
    source = biggest_transcript(scene.root)
    work = scene.folder / "export"
    transcript = work / source.parent.name / source.name
    transcript.parent.mkdir(parents=True, exist_ok=True)
    os.link(source, transcript)
    note = (f"export: the biggest session, {source.stat().st_size / MB:.1f} MB "
            f"({source.stem[:8]}), each tool's output a file")  # fmt: skip

    def ours(tool: str, name: str, *more: str, **kw: Any) -> Row:
        out = work / name
        args = ["export", str(transcript), "--format", "html", *more, "-o", str(out), "--force"]
        return scene.sessiontree(EXPORT, tool, args, output=out, **kw)

    rows = [ours("sessiontree html (cold cache)", "sessiontree.html", reference=True, note=note)]
    if all_branches:
        rows.append(ours("sessiontree html --all-branches (cold cache)", "all.html",
                         "--all-branches"))  # fmt: skip
    else:
        rows.append(skipped(EXPORT, "sessiontree html --all-branches", None,
                            "this sessiontree's export has no --all-branches"))  # fmt: skip
    ccl = scene.peers.get("claude-code-log")
    if isinstance(ccl, Peer):
        home, out = scene.home("claude-code-log"), work / "claude-code-log.html"
        argv = [str(ccl.command), "convert", str(transcript), "-o", str(out), "--no-cache"]
        rows.append(Row(EXPORT, "claude-code-log convert", argv,
                        peer_tools.base_environment(home), home, output=out))  # fmt: skip
    else:
        rows.append(skipped(EXPORT, "claude-code-log", ccl))
    if scene.agentsview() is not None:
        why = "no HTML export (its session export streams the raw JSONL)"
        rows.append(skipped(EXPORT, "agentsview", None, why))
    else:
        rows.append(skipped(EXPORT, "agentsview", scene.peers.get("agentsview")))
    rows.append(no_command(scene, EXPORT, "ccusage", "no export command"))
    return rows


def export_has_all_branches() -> bool:
    done = subprocess.run([*sessiontree_argv(), "export", "--help"], capture_output=True,
                          text=True, check=False)  # fmt: skip
    return "--all-branches" in done.stdout


# -- totals counted on their own ------------------------------------------------------------


def count_sessiontree_hits(row: Row, word: str) -> Totals:
    """Every hit in what users and assistants wrote (no ``--limit``)."""
    argv = [*row.argv[: row.argv.index("--limit")], "--role", "user", "--role", "assistant"]
    cwd = row.cwd or Path.cwd()
    detail = run_command(argv, env=row.env, cwd=cwd, stderr_file=cwd / "count.err",
                         keep_stdout=True)  # fmt: skip
    return parse_sessiontree_hits(detail["stdout"])


def count_agentsview_hits(row: Row) -> Totals:
    """Every page of agentsview's ``--fts`` hits."""
    argv = [*row.argv[: row.argv.index("--limit")], "--fts", "--limit", str(AGENTSVIEW_PAGE)]
    cwd = row.cwd or Path.cwd()
    hits, cursor = 0, 0
    sessions: set[str] = set()
    while True:
        detail = run_command([*argv, "--cursor", str(cursor)], env=row.env, cwd=cwd,
                             stderr_file=cwd / "count.err", keep_stdout=True)  # fmt: skip
        page = json.loads(detail["stdout"])
        hits += len(page["matches"])
        sessions.update(m["session_id"] for m in page["matches"])
        cursor = int(page.get("next_cursor") or 0)
        if not cursor or not page["matches"]:
            return {"hits": hits, "sessions": len(sessions)}
