"""The bench's own logic (no timing): where the warm run cuts the transcript, which cases
repeat, what a ratio is over, how a ratio target reads without its baseline, and that the
libraries' floor row names what ``context`` loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.__main__ import (
    RESUME_COLD_TARGET,
    Case,
    Result,
    add_ratios,
    unique_cases,
)
from bench.resume import LIBRARIES, WORKLOADS, split_tail


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


def test_the_libraries_floor_imports_what_a_context_run_imports_and_runs(tmp_path: Path) -> None:
    """The floor row's libraries are ones ``context`` loads (were one dropped, the row
    would no longer be its floor), and the row's command runs."""
    names = [n.strip() for n in LIBRARIES.removeprefix("import ").split(",")]
    probe = (
        "import sys; from sessiontree.cli.main import main\n"
        "try: main(['context', sys.argv[1], '--json'])\n"
        "except SystemExit: pass\n"
        f"print(','.join(m for m in {names!r} if m not in sys.modules), file=sys.stderr)"
    )
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(
        '{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s",'
        '"message":{"role":"user","content":"hi"}}\n'
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(transcript)], capture_output=True, text=True,
        env={"SESSIONTREE_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert out.stderr.strip().splitlines()[-1:] in ([], [""]), out.stderr
    detail = WORKLOADS["python-libraries"](tmp_path, None)()
    assert detail["returncode"] == 0
