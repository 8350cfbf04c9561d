"""The bench's own logic (no timing): where the warm run cuts the transcript, which cases
repeat, what a ratio is over, and how a ratio target reads without its baseline."""

from __future__ import annotations

from pathlib import Path

from bench.__main__ import (
    RESUME_COLD_TARGET,
    Case,
    Result,
    add_ratios,
    unique_cases,
)
from bench.resume import split_tail


def test_split_tail_cuts_at_a_line_start_leaving_at_least_the_tail(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [b"x" * n + b"\n" for n in (10, 200, 30, 5000, 40)]
    path.write_bytes(b"".join(lines))
    cut = split_tail(path, 100)
    data = path.read_bytes()
    assert data[cut - 1 : cut] == b"\n"
    assert len(data) - cut >= 100
    assert cut == sum(map(len, lines[:3]))  # the 5000-byte line is the one kept whole
    assert split_tail(path, len(data)) == 0


def test_repeated_cases_run_once(tmp_path: Path) -> None:
    first = Case("raw line read", "raw", tmp_path, "a")
    again = Case("raw line read: 200 MB", "raw", tmp_path, "b")
    other = Case("raw line read: chain", "raw", tmp_path / "x", "c")
    assert unique_cases([first, again, other]) == [first, other]


def test_ratios_over_the_raw_read_of_the_same_file_or_the_named_row(tmp_path: Path) -> None:
    file_a, file_b = tmp_path / "a", tmp_path / "b"
    rows = [
        Result(Case("raw a", "raw", file_a, ""), runs=[0.5]),
        Result(Case("raw b", "raw", file_b, ""), runs=[2.0]),
        Result(Case("client", "client-resume", file_a, ""), runs=[4.0]),
        Result(Case("ctx", "cli-context", file_a, "", baseline="client", vs="client"), runs=[1.0]),
        Result(Case("ctx b", "cli-context", file_b, ""), runs=[1.0]),
    ]
    add_ratios(rows)
    assert [r.ratio for r in rows] == [1.0, 1.0, 8.0, 0.25, 0.5]


def test_a_ratio_target_without_its_baseline_is_judged_on_the_rest(tmp_path: Path) -> None:
    case = Case("ctx", "cli-context", tmp_path, "", RESUME_COLD_TARGET, baseline="client")
    assert Result(case, runs=[1.0], peak_rss_mb=50).verdict == "PASS (no ratio)"
    assert Result(case, runs=[1.0], peak_rss_mb=500).verdict == "FAIL (no ratio)"
    met = Result(case, runs=[1.0], peak_rss_mb=50, ratio=0.2)
    assert met.verdict == "PASS"
