"""``python -m bench.store``: the store on a generated archive, against a real PostgreSQL.

A throwaway cluster (fsync on, as a real server) in a temp folder; then, each as the
command line runs it, in a fresh process:

- the first ``sync`` of the archive, and a rerun with nothing new;
- a 200-line append to the biggest session, synced, and the time until the store holds it;
- the store's size on disk (``pg_total_relation_size`` of its tables, indexes and TOAST
  included) against the raw bytes;
- ``context --json`` of the biggest session from the store against the local cold read
  (an empty skeleton cache each time), best of ``--runs``;
- ``search`` in the store, each query's median of ``--runs``.

Last, agentsview's local sync and ``pg push`` of the same root (bench/agentsview_pg.py),
into a database of its own on the same server, against the first sync.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.datasets import (
    ARCHIVE_ROOT,
    DATA_DIR,
    TRANSCRIPT_NAME,
    ensure_archive,
    ensure_transcript,
    log,
)
from bench.generate import MB, ArchiveSpec, Corpus
from bench.resume import sessiontree_argv

QUERIES = ("error", "weather units", "cels", "def main", "timeout")


def sessiontree(*args: str, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [*sessiontree_argv(), *args],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"sessiontree {' '.join(args[:4])} failed: {done.stderr.strip()}")
    return took, done.stdout


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store")
    parser.add_argument("--gb", type=float, default=2.0, help="archive size (default 2)")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-peer", action="store_true",
                        help="leave agentsview's pg push out (it takes minutes a GB)")  # fmt: skip
    parser.add_argument("--session-mb", type=float, default=200,
                        help="the one big session context is read from (0: none)")  # fmt: skip
    args = parser.parse_args(argv)

    from sessiontree.storage.store.cluster import init_cluster

    spec = ArchiveSpec(args.sessions, 40, int(args.gb * 1024 * MB), args.seed)
    data = ensure_archive(DATA_DIR, spec, corpus=lambda: Corpus.load(args.seed))
    source = data.path / ARCHIVE_ROOT
    raw = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
    with tempfile.TemporaryDirectory(prefix="sessiontree-store-bench-") as scratch:
        work = Path(scratch)
        root = work / "root"
        log(f"copying the archive ({raw / MB:.0f} MB) ...")
        subprocess.run(["cp", "-a", str(source), str(root)], check=True)
        # (its own temp folder: a server run as postgres cannot enter root's scratch)
        pg = Path(tempfile.mkdtemp(prefix="sessiontree-store-bench-pg-"))
        cluster = init_cluster(pg)
        env = {**os.environ, "SESSIONTREE_STATE_DIR": str(work / "state"),
               "SESSIONTREE_CACHE_DIR": str(work / "cache"), "NO_COLOR": "1"}  # fmt: skip
        store = ["--root", str(root), "--store", cluster.dsn]
        try:
            rows = run_all(store, root, raw, cluster.dsn, env, args.runs, peer=not args.no_peer)
            rows += pull_all(work, cluster.dsn, env, raw)
            if args.session_mb:
                rows += big_session(work, cluster.dsn, env, args.session_mb, args.seed, args.runs)
        finally:
            cluster.stop()
            shutil.rmtree(pg, ignore_errors=True)
    print(f"\nstore bench: {raw / MB:.0f} MB, {args.sessions} sessions, PostgreSQL "
          f"(fsync on), {os.cpu_count()} cores shared by client and server")  # fmt: skip
    for name, value, goal in rows:
        print(f"  {name:<46} {value:<28} {goal}")
    return 0


def run_all(
    store: list[str],
    root: Path,
    raw: int,
    dsn: str,
    env: dict[str, str],
    runs: int,
    *,
    peer: bool = True,
) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    log("first sync ...")
    started = time.monotonic()
    took, out = sessiontree(*store, "sync", "--json", env=env)
    report = json.loads(out)
    first_sync = took
    searchable = until_indexed(dsn, started, (report["indexing"] or {}).get("pid"))
    rows.append(("first sync", f"{took:.1f} s ({raw / MB / took:.0f} MB/s)", "goal <= 25 s"))
    if report["indexing"] is not None:
        rows.append(("  all searchable (the indexer it left, done)",
                     f"{searchable:.1f} s after it began", "research: <= 60 s"))  # fmt: skip
    rows.append(("  lines, secrets found", f"{report['records']:,}, {report['secrets']}", ""))
    took, _ = sessiontree(*store, "sync", "--json", env=env)
    rows.append(("no-op rescan", f"{took:.2f} s", "goal <= 0.5 s"))
    biggest = max(root.glob("projects/*/*.jsonl"), key=lambda p: p.stat().st_size)
    lines = [ln for ln in biggest.read_bytes().splitlines(keepends=True) if ln.strip()]
    with biggest.open("ab") as out_file:
        out_file.writelines(lines[-200:])  # (200 lines shaped as the client's)
    took, _ = sessiontree(*store, "sync", "--json", env=env)
    rows.append(("200-line append, synced (start-up included)", f"{took:.2f} s", "goal <= 1 s"))
    size = _store_bytes(dsn)
    rows.append(("store on disk / raw", f"{size / MB:.0f} MB = {size / raw:.2f}x", "goal <= 1.0x"))
    sid = biggest.stem
    local = ["--root", str(root)]
    cold, stored = context_times(dsn, env, runs, local, sid)
    mb = biggest.stat().st_size / MB
    rows.append((f"context from the store, {mb:.0f} MB session", f"{min(stored):.2f} s "
                 f"= {min(stored) / min(cold):.1f}x local cold {min(cold):.2f} s",
                 "goal <= 2x"))  # fmt: skip
    for query, took, hits in _searches_in_process(dsn, runs):
        rows.append((f"search {query!r} in process ({hits} hits)", f"{took * 1000:.0f} ms",
                     "goal <= 0.2 s"))  # fmt: skip
    for query in QUERIES:
        times = [
            sessiontree(
                "--store", dsn, "search", query, "--all", "--limit", "20", "--json", env=env
            )[0]
            for _ in range(runs)
        ]
        rows.append((f"search {query!r} (start-up included)", f"{statistics.median(times):.2f} s",
                     "goal <= 0.2 s"))  # fmt: skip
    rows += daemon_rows(dsn, env, runs, local, sid, mb)
    return rows if not peer else rows + agentsview_rows(root, dsn, raw, first_sync)


def context_times(
    dsn: str, env: dict[str, str], runs: int, local: list[str], sid: str
) -> tuple[list[float], list[float]]:
    """``context --json`` of ``sid`` read locally with an empty skeleton cache, and from
    the store, ``runs`` times each, interleaved."""
    cold, stored = [], []
    for _ in range(runs):
        env_cold = {**env, "SESSIONTREE_STORE": "",
                    "SESSIONTREE_CACHE_DIR": tempfile.mkdtemp(prefix="cold-")}  # fmt: skip
        cold.append(sessiontree(*local, "context", sid, "--json", env=env_cold)[0])
        stored.append(sessiontree("--store", dsn, "context", sid, "--json", env=env)[0])
    return cold, stored


def daemon_rows(
    dsn: str, env: dict[str, str], runs: int, local: list[str], sid: str, mb: float
) -> list[tuple[str, str, str]]:
    """The same commands, with ``sessiontree daemon`` running (started untimed): each
    handed to a worker it forks, psycopg and the engine already imported."""
    sessiontree("daemon", "start", env=env)
    rows = []
    try:
        cold, stored = context_times(dsn, env, runs, local, sid)
        rows.append((f"context from the store, {mb:.0f} MB (the daemon)",
                     f"{min(stored):.2f} s = {min(stored) / min(cold):.1f}x local cold "
                     f"{min(cold):.2f} s (the daemon)", "goal <= 2x"))  # fmt: skip
        for query in QUERIES:
            command = ["--store", dsn, "search", query, "--all", "--limit", "20", "--json"]
            times = [sessiontree(*command, env=env)[0] for _ in range(runs)]
            rows.append((f"search {query!r} (handed to the daemon)",
                         f"{statistics.median(times):.2f} s", "goal <= 0.2 s"))  # fmt: skip
    finally:
        sessiontree("daemon", "stop", env=env)
    return rows


def agentsview_rows(
    root: Path, dsn: str, raw: int, first_sync: float
) -> list[tuple[str, str, str]]:
    """agentsview's ``pg push`` of the root (with the 200-line append) next to the first
    sync; or one row saying why it could not run."""
    from bench.agentsview_pg import VERSION, Unavailable, push_archive

    log(f"agentsview {VERSION}: local sync, then pg push ...")
    run = push_archive(root, dsn, DATA_DIR)
    if isinstance(run, Unavailable):
        return [(f"agentsview {VERSION} pg push (same archive)", "not run", run.reason)]
    return [
        (f"agentsview {VERSION} pg push (same archive)",
         f"{run.push_s:.1f} s: first sync / push = {first_sync / run.push_s:.2f}",
         run.pushed),
        ("  its local sync before (to SQLite)",
         f"{run.sync_s:.1f} s: first sync / (sync + push) = "
         f"{first_sync / (run.sync_s + run.push_s):.2f}",
         f"its SQLite: {run.sqlite_bytes / MB:.0f} MB"),
        ("  its store on disk / raw",
         f"{run.store_bytes / MB:.0f} MB = {run.store_bytes / raw:.2f}x", ""),
    ]  # fmt: skip


def pull_all(work: Path, dsn: str, env: dict[str, str], raw: int) -> list[tuple[str, str, str]]:
    """``pull --all`` of the archive's store into an empty root: its time, and whether
    every transcript came back byte for byte."""
    log("pull --all ...")
    target = work / "pulled"
    took, out = sessiontree("--root", str(target), "--store", dsn, "pull", "--all", "--force",
                            "--json", env=env)  # fmt: skip
    report = json.loads(out)
    source = work / "root"
    differs = sum(
        1
        for p in source.glob("projects/*/*.jsonl")
        if not (target / p.relative_to(source)).is_file()
        or (target / p.relative_to(source)).read_bytes() != p.read_bytes()
    )
    return [("pull --all (start-up included)",
             f"{took:.1f} s ({raw / MB / took:.0f} MB/s), {len(report['sessions'])} sessions, "
             f"{differs} transcript(s) differ", "goal <= 30 s for 2 GB")]  # fmt: skip


def until_indexed(dsn: str, started: float, pid: int | None = None) -> float:
    """Wait until the store holds nothing not indexed for search (an indexer a sync left
    running is done); the seconds since ``started``. Then, so that nothing else is at
    work while the next rows are timed, until the indexer ``pid`` has ended (its
    ANALYZE after)."""
    from sessiontree.storage.store.connect import connect
    from sessiontree.storage.store.search import unindexed_totals

    with connect(dsn) as conn:
        while unindexed_totals(conn) != (0, 0):
            time.sleep(0.2)
    took = time.monotonic() - started
    while pid is not None and _running(pid):
        time.sleep(0.1)
    return took


def _running(pid: int) -> bool:
    """Whether the process ``pid`` still runs (not ended, nor ended and left unreaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def big_session(
    work: Path, dsn: str, env: dict[str, str], mb: float, seed: int, runs: int
) -> list[tuple[str, str, str]]:
    """A realistic transcript of ``mb`` MB (the resume bench's) synced from a root of its
    own, and its ``context`` from the store against the local cold read, best of
    ``runs``."""
    data = ensure_transcript(DATA_DIR, mb=mb, seed=seed, corpus=lambda: Corpus.load(seed))
    root = work / "big"
    sid = "0b1b0000-0000-4000-8000-000000000200"
    folder = root / "projects" / "-work-big"
    folder.mkdir(parents=True)
    os.link(data.path / TRANSCRIPT_NAME, folder / f"{sid}.jsonl")
    log(f"syncing a {mb:g} MB session ...")
    took, out = sessiontree("--root", str(root), "--store", dsn, "sync", "--machine", "big",
                            "--json", env=env)  # fmt: skip
    # (nothing else at work while context is timed)
    until_indexed(dsn, time.monotonic(), (json.loads(out)["indexing"] or {}).get("pid"))
    cold, stored = [], []
    for _ in range(runs):
        env_cold = {**env, "SESSIONTREE_STORE": "",
                    "SESSIONTREE_CACHE_DIR": tempfile.mkdtemp(prefix="cold-")}  # fmt: skip
        cold.append(sessiontree("--root", str(root), "context", sid, "--json", env=env_cold)[0])
        stored.append(sessiontree("--store", dsn, "context", sid, "--json", env=env)[0])
    took_pull, _ = sessiontree("--root", str(work / "big-pulled"), "--store", dsn, "pull", sid,
                               "--force", "--json", env=env)  # fmt: skip
    pulled = next((work / "big-pulled").glob(f"projects/*/{sid}.jsonl"))
    same = pulled.read_bytes() == (folder / f"{sid}.jsonl").read_bytes()
    return [
        (f"sync of one {mb:g} MB session", f"{took:.1f} s", ""),
        (f"pull of that {mb:g} MB session (start-up included)",
         f"{took_pull:.2f} s, {'byte-identical' if same else 'DIFFERS'}", "goal <= 2 s"),
        (f"context from the store, {mb:g} MB session",
         f"{min(stored):.2f} s = {min(stored) / min(cold):.1f}x local cold {min(cold):.2f} s",
         "goal <= 2x"),
    ]  # fmt: skip


def _searches_in_process(dsn: str, runs: int) -> list[tuple[str, float, int]]:
    """Each query's median time in this process, its connection open and its modules
    imported (what a long-lived caller, the viewer, pays), and how many hits."""
    from sessiontree.catalog.store_search import search_store
    from sessiontree.storage.store.connect import connect

    found = []
    with connect(dsn, read_only=True) as conn:
        for query in QUERIES:
            times, hits = [], 0
            for _ in range(runs):
                started = time.perf_counter()
                hits = len(search_store(conn, query, limit=20))
                times.append(time.perf_counter() - started)
                conn.rollback()
            found.append((query, statistics.median(times), hits))
    return found


def _store_bytes(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'sessiontree' AND c.relkind = 'r'"
        ).fetchone()
    return int(row[0]) if row and row[0] else 0


if __name__ == "__main__":
    raise SystemExit(main())
