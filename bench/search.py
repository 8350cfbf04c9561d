# mypy: disable-error-code="import-untyped"
"""The search index rows (``--only search``): a first build over a generated archive
(MB/s), a warm query (the median over a few queries run a few times each; goal <= 50 ms),
the update of an index that is up to date (every file's stat checked), and the update
after an append, at two sizes (its time should follow the bytes appended, not the file).

Each ``prepare_*`` builds what it needs (untimed) and returns the timed run, as
:mod:`bench.measure` expects. The index database of the query and no-op rows is the
case's cache file (primed by the untimed first run); the build row makes a new one each
run; the append rows index a copy of one transcript of the archive, append to it, then
time the update alone.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Detail = dict[str, Any]
Run = Callable[[], Detail]

#: Queries of the warm row, from rare to everywhere (on the 200 MB archive: 3, ~850,
#: ~500, ~700, ~3,900 and ~22,000 of ~39,000 rows): the last is the worst case.
QUERIES = ("def", "bug", "tests pass", "git status", "json", "the")
#: How many times each query runs in the warm row (the first, cold, run is not counted).
REPEATS = 5
#: What the warm row asks for: the first page of hits, as a person or the viewer would.
LIMIT = 20
#: The two append sizes of the incremental rows, in MB.
APPEND_MB = (1, 8)

MB = 1024 * 1024


def archive_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / "projects").rglob("*.jsonl"))


def prepare_build(root: Path, _cache: Path | None) -> Run:
    """A first build of the index of the whole archive, into a new database."""
    from sessiontree.catalog.search_index import update_index
    from sessiontree.storage.layout import Layout

    size = archive_bytes(root)
    folder = Path(tempfile.mkdtemp(prefix="search-build-"))

    def run() -> Detail:
        started = time.perf_counter()
        try:
            stats = update_index(folder / "index.sqlite", Layout(root))
            seconds = time.perf_counter() - started
            db_bytes = sum(f.stat().st_size for f in folder.iterdir())
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return {
            "mb": round(size / MB, 1),
            "mb_per_s": round(size / MB / seconds, 1),
            "rows": stats.rows_added,
            "files": stats.files,
            "lines_decoded": stats.lines_decoded,
            "index_mb": round(db_bytes / MB, 1),
            "note": f"{size / MB:.0f} MB at {size / MB / seconds:.1f} MB/s, "
            f"{stats.rows_added:,} rows, index {db_bytes / MB:.0f} MB",
        }

    return run


def _primed(root: Path, cache: Path | None) -> Path:
    """The case's database, brought up to date (untimed)."""
    from sessiontree.catalog.search_index import update_index
    from sessiontree.storage.layout import Layout

    db = cache or Path(tempfile.mkdtemp(prefix="search-")) / "index.sqlite"
    update_index(db, Layout(root))
    return db


def prepare_query(root: Path, cache: Path | None) -> Run:
    """Warm queries: each of :data:`QUERIES` once untimed, then :data:`REPEATS` times,
    the first :data:`LIMIT` hits with their active paths (through a skeleton cache)."""
    from sessiontree.catalog.search_index import query
    from sessiontree.storage.skeleton_cache import SkeletonCache

    db = _primed(root, cache)
    skeletons = SkeletonCache(Path(tempfile.mkdtemp(prefix="search-skeletons-")))
    for text in QUERIES:  # warm: the pages read, the skeletons cached
        query(db, text, limit=LIMIT, skeleton_cache=skeletons)

    def run() -> Detail:
        laps: dict[str, list[float]] = {text: [] for text in QUERIES}
        found: dict[str, int] = {}
        for _ in range(REPEATS):
            for text in QUERIES:
                lap = time.perf_counter()
                found[text] = len(query(db, text, limit=LIMIT, skeleton_cache=skeletons))
                laps[text].append(time.perf_counter() - lap)
        every = [s for runs in laps.values() for s in runs]
        medians = {text: statistics.median(runs) for text, runs in laps.items()}
        worst = max(medians, key=medians.__getitem__)
        return {
            "p50_s": statistics.median(every),
            "p95_s": statistics.quantiles(every, n=20)[-1],
            "per_query_ms": {text: round(s * 1000, 2) for text, s in medians.items()},
            "hits": found,
            "note": f"p50 {statistics.median(every) * 1000:.1f} ms over {len(QUERIES)} queries "
            f"x {REPEATS} (limit {LIMIT}); slowest {worst!r} {medians[worst] * 1000:.1f} ms",
        }

    return run


def prepare_noop(root: Path, cache: Path | None) -> Run:
    """An update of an index that is up to date: every file's stat, nothing read."""
    from sessiontree.catalog.search_index import update_index
    from sessiontree.storage.layout import Layout

    db = _primed(root, cache)  # (the generated files were written well before)

    def run() -> Detail:
        stats = update_index(db, Layout(root))
        return {"files": stats.files, "indexed": stats.indexed, "bytes_read": stats.bytes_read}

    return run


def biggest_transcript(root: Path) -> Path:
    return max((root / "projects").rglob("*.jsonl"), key=lambda p: p.stat().st_size)


def append_lines(source: Path, target: Path, size: int) -> int:
    """Append whole lines of ``source`` to ``target`` until ``size`` bytes were added."""
    added = 0
    with source.open("rb") as lines, target.open("ab") as out:
        while added < size:
            for line in lines:
                out.write(line)
                added += len(line)
                if added >= size:
                    break
            lines.seek(0)
    return added


def prepare_append(mb: float) -> Callable[[Path, Path | None], Run]:
    """The update after ``mb`` MB were appended to an indexed transcript (a copy of the
    archive's biggest)."""

    def prepare(root: Path, _cache: Path | None) -> Run:
        from sessiontree.catalog.search_index import update_index
        from sessiontree.storage.layout import Layout

        source = biggest_transcript(root)
        scratch = Path(tempfile.mkdtemp(prefix="search-append-"))
        copy = scratch / "root" / "projects" / source.parent.name / source.name
        copy.parent.mkdir(parents=True)
        shutil.copyfile(source, copy)
        layout = Layout(scratch / "root")
        db = scratch / "index.sqlite"
        update_index(db, layout)
        added = append_lines(source, copy, int(mb * MB))

        def run() -> Detail:
            stats = update_index(db, layout)
            shutil.rmtree(scratch, ignore_errors=True)
            if stats.bytes_read != added:
                raise RuntimeError(f"read {stats.bytes_read} bytes for {added} appended")
            return {
                "file_mb": round(source.stat().st_size / MB, 1),
                "appended_mb": round(added / MB, 2),
                "bytes_read": stats.bytes_read,
                "rows": stats.rows_added,
                "note": f"{added / MB:.1f} MB appended to a {source.stat().st_size / MB:.0f} "
                f"MB transcript: {stats.bytes_read / MB:.1f} MB read, {stats.rows_added:,} rows",
            }

        return run

    return prepare


WORKLOADS: dict[str, Callable[[Path, Path | None], Run]] = {
    "search-build": prepare_build,
    "search-query": prepare_query,
    "search-noop": prepare_noop,
    **{f"search-append-{mb}mb": prepare_append(mb) for mb in APPEND_MB},
}
