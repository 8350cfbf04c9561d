"""The bench's own logic (no timing): where the warm run cuts the transcript, which cases
repeat, what a ratio is over, how a ratio target reads without its baseline, and that the
libraries' floor row names what ``context`` loads; the 2.0.x-shaped transcript and its rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.__main__ import (
    RESUME_COLD_TARGET,
    Case,
    Result,
    add_ratios,
    plan_resume_cases,
    unique_cases,
)
from bench.datasets import TRANSCRIPT_NAME, DataSet
from bench.generate import MB, write_transcript
from bench.resume import LIBRARIES, WORKLOADS, split_tail

from sessiontree.conversation.transcript import Transcript
from sessiontree.storage.skeleton_cache import SkeletonCache
from tests.conversation.test_open_tail import resumed


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


def test_the_2_0_shaped_transcript_is_compacted_as_2_0_clients_compact(tmp_path: Path) -> None:
    """``python -m bench resume``'s 2.0.x-shaped transcript: its boundaries are 2.0.76's
    (nothing preserved), it has no ``last-prompt``, and it resumes from its tail, exactly
    as the whole file does."""
    path = tmp_path / "s.jsonl"
    write_transcript(path, target_bytes=12 * MB, seed=3, compactions="2.0")
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    boundaries = [r for r in records if r.get("subtype") == "compact_boundary"]
    assert boundaries
    assert all("preservedSegment" not in r["compactMetadata"] for r in boundaries)
    assert all(r["version"] == "2.0.76" and r["parentUuid"] is None for r in boundaries)
    assert not [r for r in records if r["type"] == "last-prompt"]
    transcript = Transcript.open_to_resume(path, SkeletonCache(tmp_path / "cache"))
    assert not transcript.whole
    assert resumed(transcript) == resumed(Transcript.open(path))


def test_the_resume_rows_hold_the_2_0_shaped_transcript(tmp_path: Path) -> None:
    def data(name: str) -> DataSet:
        return DataSet(tmp_path / name, {}, 200 * MB, 0.0, reused=True)

    cases = plan_resume_cases(data("a"), data("b"), [], None, 10, data("old"))
    rows = {c.name: c for c in cases if c.target_path == tmp_path / "old" / TRANSCRIPT_NAME}
    client = "client resume: 2.0.x-shaped"
    assert rows[client].workload == "client-resume"
    assert rows["context cold: 2.0.x-shaped"].baseline == client
    assert rows["context warm (+1 MB): 2.0.x-shaped"].baseline == client
