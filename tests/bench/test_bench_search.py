"""The search rows' own logic (no timing): the archive they build on, the cases they
plan, and the appends of the incremental rows."""

from __future__ import annotations

from pathlib import Path

from bench.__main__ import SEARCH_QUERY_TARGET, plan_search_cases, search_archive_spec
from bench.datasets import DataSet
from bench.generate import MB
from bench.search import APPEND_MB, WORKLOADS, append_lines


def test_the_archive_scales_with_its_size() -> None:
    spec = search_archive_spec(200, 40, 7)
    assert (spec.sessions, spec.projects, spec.total_bytes, spec.seed) == (200, 40, 200 * MB, 7)
    small = search_archive_spec(3, 40, 1)
    assert (small.sessions, small.projects) == (10, 10)  # never fewer than 10 sessions


def test_the_cases(tmp_path: Path) -> None:
    archive = DataSet(tmp_path, {}, 5 * MB, 0.0, reused=True)
    cases = plan_search_cases(archive, 10, tmp_path / "scratch")
    assert [c.workload for c in cases] == [
        "search-build",
        "search-noop",
        "search-query",
        *(f"search-append-{mb}mb" for mb in APPEND_MB),
    ]
    assert all(c.workload in WORKLOADS for c in cases)
    query = cases[2]
    assert query.target is SEARCH_QUERY_TARGET and query.statistic == "p50_s"
    assert query.cache_file == cases[1].cache_file == tmp_path / "scratch" / "search-index.sqlite"
    assert cases[0].cache_file is None  # a first build: a new database each run
    assert all(c.target_path == tmp_path / "claude-home" for c in cases)


def test_append_lines_appends_whole_lines_until_the_size(tmp_path: Path) -> None:
    source, target = tmp_path / "s.jsonl", tmp_path / "t.jsonl"
    lines = [b"a" * 9 + b"\n", b"b" * 19 + b"\n", b"c" * 4 + b"\n"]
    source.write_bytes(b"".join(lines))
    target.write_bytes(b"start\n")
    added = append_lines(source, target, 75)  # past one pass over the source
    data = target.read_bytes()
    assert added == len(data) - 6 and added >= 75
    assert added == 80 and data.count(b"\n") == 1 + 7  # two passes, then one line
    assert data[6:] == b"".join(lines * 3)[:added]
