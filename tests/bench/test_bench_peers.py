"""``python -m bench peers`` (issue 29) on a tiny generated archive, with sessiontree alone:
the peers are looked for in an empty data folder with ``--no-install`` (no network), so
each of their rows is a SKIP that says so. Also the archive it runs on: its
``file-history/`` backups and ``history.jsonl`` as sessiontree reads them, and
transcripts that are the plain archive's bytes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.__main__ import main as bench_main
from bench.agentsview_pg import Unavailable
from bench.archive_extras import write_extras
from bench.datasets import ARCHIVE_ROOT, ensure_peers_archive
from bench.generate import MB, ArchiveSpec, Corpus, write_archive
from bench.peer_tools import CCUSAGE_VERSION, find_ccusage, find_peers
from bench.peer_totals import compare_totals
from bench.peers import (
    HEADERS,
    QUICK,
    Bench,
    format_markdown,
    format_report,
    print_tables,
    run_bench,
    table_rows,
)
from rich.console import Console

from sessiontree.doctor import check_store
from sessiontree.history.log import iter_history
from sessiontree.storage.layout import Layout

SPEC = ArchiveSpec(sessions=6, projects=3, total_bytes=2 * MB, seed=7)
#: A word of the archive's typed prompts: search's totals are checked against them.
WORD = "edit"
TASKS = ["start-up", "sessions --all", f"search {WORD}", "usage --by day --all", "export html"]


def _typed_prompts(root: Path) -> list[tuple[str, str]]:
    """(sessionId, text) of every prompt the user typed, read from the transcripts."""
    found = []
    for transcript in root.glob("projects/*/*.jsonl"):
        for line in transcript.read_bytes().splitlines():
            record = json.loads(line)
            if record.get("type") == "user" and record.get("promptSource") == "typed":
                found.append((record["sessionId"], record["message"]["content"]))
    return sorted(found)


def test_the_backups_the_checkpoints_name_are_there_and_the_history_holds_every_prompt(
    tmp_path: Path,
) -> None:
    root = tmp_path / "claude-home"
    write_archive(root, SPEC, corpus=Corpus.load(SPEC.seed))
    transcripts = {p: p.read_bytes() for p in root.glob("projects/*/*.jsonl")}
    missing = [p for p in check_store(Layout(root)).problems if p.kind == "missing-backup"]
    assert missing  # the plain archive names backups it does not have

    write_extras(root)

    assert {p: p.read_bytes() for p in root.glob("projects/*/*.jsonl")} == transcripts
    after = check_store(Layout(root))
    assert [p for p in after.problems if p.kind == "missing-backup"] == []
    entries = list(iter_history(Layout(root)))
    assert sorted((e.session_id, e.text) for e in entries) == _typed_prompts(root)
    stamps = [e.timestamp for e in entries]
    assert stamps == sorted(stamps) and None not in stamps  # oldest first, as the client


def test_the_peers_archive_has_the_plain_archives_transcripts(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    write_archive(plain, SPEC, corpus=Corpus.load(SPEC.seed))
    data = ensure_peers_archive(tmp_path / "data", SPEC, corpus=lambda: Corpus.load(SPEC.seed))
    root = data.path / ARCHIVE_ROOT
    ours = {p.relative_to(root): p.read_bytes() for p in root.glob("projects/*/*.jsonl")}
    theirs = {p.relative_to(plain): p.read_bytes() for p in plain.glob("projects/*/*.jsonl")}
    assert ours == theirs
    assert (root / "history.jsonl").stat().st_size > 0
    assert any((root / "file-history").iterdir())


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Bench, Path]]:
    data = tmp_path_factory.mktemp("peers-data")
    archive = ensure_peers_archive(data, SPEC, corpus=lambda: Corpus.load(SPEC.seed))
    peers = find_peers(data, install=False)
    root = archive.path / ARCHIVE_ROOT
    yield run_bench(root, peers, runs=1, word=WORD), root


def test_sessiontree_alone_fills_every_table_and_the_peers_are_skipped(
    bench: tuple[Bench, Path],
) -> None:
    result, root = bench
    rows = result.rows
    assert list(dict.fromkeys(r.task for r in rows)) == TASKS
    assert not result.archive_changed
    sessions = len(list(root.glob("projects/*/*.jsonl")))
    for row in rows:
        if row.ours and row.skipped is None:
            assert row.error is None, row.error
            assert len(row.runs) == 1 and row.runs[0] > 0 and row.peak_rss_mb > 0
        elif not row.ours and "python" not in row.tool:
            assert row.runs == [] and row.skipped is not None
            assert "not installed" in row.skipped
    by_name = {(r.task, r.tool): r for r in rows}
    for cache in ("cold", "warm"):
        listing = by_name["sessions --all", f"sessiontree ({cache} cache)"]
        assert listing.totals == {"sessions": sessions}
    cold = by_name["usage --by day --all", "sessiontree (cold cache)"].totals
    warm = by_name["usage --by day --all", "sessiontree (warm cache)"].totals
    assert cold and cold == warm
    hits = by_name[f"search {WORD}", "sessiontree (warm index)"].totals
    typed = [(sid, text) for sid, text in _typed_prompts(root) if WORD in text.split()]
    assert typed  # the word is there to be found
    assert hits is not None and hits["hits"] >= len(typed)
    assert hits["sessions"] >= len({sid for sid, _ in typed})
    export = by_name["export html", "sessiontree html (cold cache)"].totals
    assert export is not None and export["bytes"] > 0


def test_the_tables_rows(bench: tuple[Bench, Path]) -> None:
    result, _ = bench
    for task in TASKS:
        cells = table_rows(result.rows, task)
        table = [r for r in result.rows if r.task == task]
        assert [c[0] for c in cells] == [r.tool for r in table]
        assert all(len(c) == len(HEADERS) for c in cells)
        for row, cell in zip(table, cells, strict=True):
            if row.reference:
                assert cell[5] == "1.00x"
            if row.skipped is not None:
                assert cell[1] == "-" and cell[6] == f"SKIP: {row.skipped}"
            elif row.ours:
                assert cell[1].endswith(("ms", " s")) and cell[7] == "(ours)"
    console = Console(record=True, width=200)
    print_tables(result.rows, 1, console)
    text = console.export_text()
    assert all(task in text for task in TASKS) and "SKIP: agentsview" in text
    markdown = format_markdown(result.rows, 1).split("**")[1:]
    assert markdown[::2] == TASKS
    for task, body in zip(TASKS, markdown[1::2], strict=True):
        lines = [line for line in body.splitlines() if line.startswith("| ")]
        tools = [r.tool for r in result.rows if r.task == task]
        assert len(lines) == 2 + len(tools)  # the header, its rule, a line a row
        names = [line.split(" | ")[0].removeprefix("| ") for line in lines[2:]]
        assert [name.removesuffix(" \\*") for name in names] == tools
        assert sum(name.endswith(" \\*") for name in names) == 1  # the reference row


def test_the_json_report(bench: tuple[Bench, Path]) -> None:
    result, _ = bench
    peers = {"agentsview": Unavailable("not installed")}
    report = json.loads(json.dumps(format_report(QUICK, {"mb": 2}, peers, result)))
    assert [t["task"] for t in report["tasks"]] == TASKS
    assert report["peers"] == {"agentsview": {"installed": False, "reason": "not installed"}}
    rows = [row for task in report["tasks"] for row in task["rows"]]
    assert len(rows) == len(result.rows)
    for row, kept in zip(rows, result.rows, strict=True):
        assert row["tool"] == kept.tool and row["runs_s"] == kept.runs
        assert row["median_s"] == kept.median and row["totals"] == kept.totals


def test_a_peers_totals_against_ours() -> None:
    ours = {"2026-01-05": 100, "2026-01-06": 50}
    assert compare_totals("usage --by day --all", ours, dict(ours)) == "yes"
    doubled = {day: 2 * n for day, n in ours.items()}
    assert compare_totals("usage --by day --all", ours, doubled) == (
        "no: 2 of 2 days differ, tokens 2.00x ours"
    )
    assert compare_totals("sessions --all", {"sessions": 600}, {"sessions": 500}) == (
        "no: sessions 500 vs 600"
    )
    assert compare_totals("export html", {"bytes": 1}, {"bytes": 2}) == ""


def test_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        bench_main(["peers", "--help"])
    assert done.value.code == 0
    assert "--quick" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        bench_main(["peers", "--runs", "0", "--no-install", "--data-dir", str(tmp_path / "d")])
    assert "must be positive" in str(refused.value.code)
    assert not (tmp_path / "d").exists()  # refused before anything was made


def test_a_peer_that_will_not_install_says_why_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no npm to install ccusage with
    peer = find_ccusage(tmp_path, install=True)
    assert isinstance(peer, Unavailable)
    assert peer.reason == f"npm install ccusage@{CCUSAGE_VERSION}: no npm on PATH"
    assert find_ccusage(tmp_path, install=False) == Unavailable(
        f"ccusage {CCUSAGE_VERSION} is not installed in the data folder (--no-install)"
    )  # the failed install left nothing that counts as installed
