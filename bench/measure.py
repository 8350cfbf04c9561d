# mypy: disable-error-code="import-untyped"
# (sessiontree has no py.typed marker yet; drop this line once it has.)
"""One measurement, run in a fresh interpreter so its peak RSS is its own.

``python -m bench.measure WORKLOAD TARGET [--cache-file PATH]`` imports what the workload
needs (not timed), runs it once (timed) and prints one JSON object on stdout:
``{"seconds", "peak_rss_mb", "detail"}``, or ``{"skipped": reason}``.

Peak RSS is ``VmHWM`` from ``/proc/self/status``: the high-water mark of this process's
own address space. ``ru_maxrss`` would do elsewhere, but on Linux it also counts the
parent's memory at the moment of the fork, so it is only the fallback.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench import checkpoints, resume, search, shapes, writing

Detail = dict[str, Any]
Run = Callable[[], Detail]


class Skipped(Exception):
    """The workload cannot run here (say, the module it measures does not exist yet)."""


def peak_rss_mb() -> float:
    """This process's peak resident set size, in MiB."""
    try:
        with Path("/proc/self/status").open() as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def prepare_raw_lines(path: Path, _cache: Path | None) -> Run:
    """Baseline A: read every line, do nothing with it."""

    def run() -> Detail:
        count = 0
        with path.open("rb") as handle:
            for _line in handle:
                count += 1
        return {"lines": count}

    return run


def prepare_json_lines(path: Path, _cache: Path | None) -> Run:
    """Baseline B: the standard library's ``json.loads`` of every line."""

    def run() -> Detail:
        count = 0
        with path.open("rb") as handle:
            for line in handle:
                json.loads(line)
                count += 1
        return {"lines": count}

    return run


def prepare_sessiontree(path: Path, _cache: Path | None) -> Run:
    """sessiontree: open the transcript, resolve the active path, build the context."""
    from sessiontree.conversation.transcript import Transcript

    def run() -> Detail:
        transcript = Transcript.open(path)
        active = transcript.active_path
        messages = transcript.context()
        return {
            "lines": len(transcript.scan.lines),
            "problems": len(transcript.problems),
            "active_path": len(active),
            "messages": len(messages),
        }

    return run


def prepare_listing(root: Path, cache: Path | None) -> Run:
    """``sessiontree.catalog.index.list_sessions`` over every project of a config root."""
    try:
        index = importlib.import_module("sessiontree.catalog.index")
    except ImportError as exc:
        raise Skipped(f"sessiontree.catalog.index not available ({exc})") from exc
    from sessiontree.storage.layout import Layout

    list_sessions: Callable[..., list[Any]] = index.list_sessions
    options: dict[str, Any] = {}
    if cache is not None:
        if "cache_file" not in inspect.signature(list_sessions).parameters:
            raise Skipped("list_sessions has no cache_file option")
        options["cache_file"] = cache
    layout = Layout(root)

    def run() -> Detail:
        sessions = list_sessions(layout, **options)
        return {"sessions": len(sessions)}

    return run


WORKLOADS: dict[str, Callable[[Path, Path | None], Run]] = {
    "raw": prepare_raw_lines,
    "json": prepare_json_lines,
    "sessiontree": prepare_sessiontree,
    "listing": prepare_listing,
    # The target of these three is a scratch folder; each run builds its data there.
    "restore": checkpoints.prepare_restore,
    "snapshot": checkpoints.prepare_snapshot,
    "dedup": checkpoints.prepare_dedup,
    # Writing: a scratch folder (append, commit), a transcript (fork, copy), a config root
    # (walk, cleanup).
    "append": writing.prepare_append,
    "append-raw": writing.prepare_append_raw,
    "commit": writing.prepare_commit,
    "commit-raw": writing.prepare_commit_raw,
    "fork": writing.prepare_fork,
    "copy": writing.prepare_copy,
    "walk": writing.prepare_walk,
    # Damaged transcripts, built in a scratch folder (bench/shapes.py).
    **{f"damaged-{name}": shapes.prepare(name) for name in shapes.BENCH_SIZES},
    **{f"damaged-{name}-json": shapes.prepare(name, baseline=True) for name in shapes.BENCH_SIZES},
    "cleanup": writing.prepare_cleanup,
    # Whole commands (sessiontree's CLI, the real client), timed from spawn to exit; their
    # peak RSS is the command's own (bench/resume.py).
    **resume.WORKLOADS,
    # The search index (bench/search.py): the target is the search rows' archive root.
    **search.WORKLOADS,
}


def measure(workload: str, target: Path, cache: Path | None) -> dict[str, Any]:
    """Prepare (untimed), run once (timed), and report time, peak RSS and what was done."""
    try:
        run = WORKLOADS[workload](target, cache)
    except (Skipped, checkpoints.Unavailable) as exc:
        return {"skipped": str(exc)}
    started = time.perf_counter()
    detail = run()
    seconds = time.perf_counter() - started
    # A command's workload reports the command's peak RSS, not this process's.
    rss = detail.pop("peak_rss_mb", None)
    return {
        "seconds": seconds,
        "peak_rss_mb": peak_rss_mb() if rss is None else rss,
        "detail": detail,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.measure", description=__doc__)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument(
        "target",
        type=Path,
        help="a transcript (also fork, copy and the cli-*/client-* commands); a config root "
        "for listing, walk, cleanup and cli-sessions*; a scratch folder for restore, "
        "snapshot, dedup, append and commit; ignored by the start-up commands",
    )
    parser.add_argument("--cache-file", type=Path, help="listing cache to use (listing only)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.workload, args.target, args.cache_file)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
