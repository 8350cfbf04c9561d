"""Restore code: golden against the real client's "Restore code", plus safety and undo."""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from tests.conftest import FIXTURES, all_scenarios, lay_out, scenario_id

CASES = [
    (scenario, d.name)
    for scenario in all_scenarios()
    for d in sorted((scenario / "truth").glob("restore-*"))
    if d.is_dir()
]


def tree_of(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def restore(root: Path, *args: str, code: int = 0) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["--root", str(root), "restore", *args, "--json"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout) if code == 0 else {}


@pytest.mark.parametrize(
    ("scenario", "case"), CASES, ids=[f"{scenario_id(s)}-{c}" for s, c in CASES]
)
def test_restore_equals_real_client(scenario: Path, case: str, tmp_path: Path) -> None:
    """The project after ``restore --to PROMPT`` equals the project after the client's
    "Restore code" to that prompt. Where the client offered no "Restore code" (its
    ``meta.json`` says ``restored: false``; e.g. 1.0.x sessions have no file history),
    sessiontree may refuse, but must leave the project as the client did."""
    meta = json.loads((scenario / "truth" / case / "meta.json").read_text())
    if (scenario_id(scenario), case) in UNEXPLAINED:
        pytest.xfail(UNEXPLAINED[(scenario_id(scenario), case)])
    root, project = lay_out(scenario, tmp_path)
    if meta.get("restored", True):
        restore(root, meta["sessionId"], "--to", meta["promptUuid"], "--yes")
    else:
        args = ["--root", str(root), "restore", meta["sessionId"], "--to", meta["promptUuid"]]
        result = CliRunner().invoke(cli, [*args, "--yes", "--json"])
        assert result.exit_code in (0, 1), result.output
    assert tree_of(project) == tree_of(scenario / "truth" / case / "files")


#: Restores where sessiontree and the client differ for a reason not found yet.
UNEXPLAINED = {
    ("2.0.76/01-tools-par-task", "restore-4"): (
        "2.1.328 offers no 'Restore code' for p4 of a 2.0.76 session (an Edit of a.txt, "
        "alpha -> beta) though its checkpoint has a.txt's earlier version; sessiontree "
        "restores a.txt to alpha"
    ),
}


def test_restore_truths_cover_parallel_edits() -> None:
    """The parallel-edit scenario is among the cases: restores before and after one
    response that edited three files at once."""
    assert sum(1 for s, _ in CASES if s.name == "18-par-edits-rewind") >= 4


def test_dry_run_changes_nothing_and_reports(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    before = tree_of(project)
    doc = restore(root, "0f31836f", "--to", "db0ed167", "--dry-run")
    assert tree_of(project) == before
    code = doc["code"]
    assert isinstance(code, dict)
    assert code["deleted"] == [str(project / "a.txt")]
    assert code["restored"] == [str(project / "notes.md")]
    assert str(project / "b.txt") not in json.dumps(code)  # made by Bash: untracked


def test_undo_puts_everything_back(tmp_path: Path) -> None:
    root, project = lay_out("02-rewind-both", tmp_path)
    before = tree_of(project)
    restore(root, "b06189e0", "--to", "e42339f0", "--yes")
    assert tree_of(project) != before
    restore(root, "b06189e0", "--undo", "--yes")
    assert tree_of(project) == before
    restore(root, "b06189e0", "--undo", "--yes", code=1)  # nothing left to undo


def test_undo_dry_run_lists_what_the_undo_puts_back_and_changes_nothing(
    tmp_path: Path,
) -> None:
    root, project = lay_out("02-rewind-both", tmp_path)
    before = tree_of(project)
    done = restore(root, "b06189e0", "--to", "e42339f0", "--yes")
    code = done["code"]
    assert isinstance(code, dict)
    changed = sorted({*code["restored"], *code["deleted"]})
    restored = tree_of(project)
    plan = restore(root, "b06189e0", "--undo", "--dry-run")
    assert plan["dryRun"] is True
    assert sorted(plan["undone"]) == changed  # what the undo will put back, not 0 files
    assert len(changed) >= 2
    assert tree_of(project) == restored  # nothing changed
    text = CliRunner().invoke(
        cli, ["--root", str(root), "restore", "b06189e0", "--undo", "--dry-run"]
    )
    assert f"would put back {len(changed)} file(s)" in text.output
    assert "(after undo)" in text.output or "removed by undo" in text.output  # a diff
    undone = restore(root, "b06189e0", "--undo", "--yes")
    assert undone["dryRun"] is False and sorted(undone["undone"]) == changed
    assert tree_of(project) == before


def test_restore_refuses_when_the_project_folder_is_gone(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    shutil.rmtree(project)
    result = CliRunner().invoke(
        cli, ["--root", str(root), "restore", "0f31836f", "--to", "db0ed167", "--yes"]
    )
    assert result.exit_code == 1
    assert f"the project folder {project} is gone" in result.output
    assert not project.exists()  # not made again


def test_refuses_without_yes_when_not_a_terminal(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    before = tree_of(project)
    result = CliRunner().invoke(cli, ["--root", str(root), "restore", "0f31836f", "--to", "-3"])
    assert result.exit_code == 1
    assert "--yes" in result.output
    assert tree_of(project) == before


def _append(root: Path, record: dict[str, object]) -> None:
    transcript = next((root / "projects").rglob("*.jsonl"))
    with transcript.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


@pytest.mark.parametrize("absolute", [False, True], ids=["dot-dot", "absolute"])
def test_paths_outside_the_project_are_skipped(tmp_path: Path, absolute: bool) -> None:
    root, project = lay_out("01-basic", tmp_path)
    # Outside the project but inside this test's own folder: nothing global to collide
    # with, and a restore that wrongly writes it is seen here.
    outside = project.parent / "escaped.txt"
    tracking = str(outside) if absolute else "../escaped.txt"
    _append(
        root,
        {
            "type": "file-history-delta",
            "messageId": "db0ed167-2321-4078-b143-2eb86bf8529a",
            "trackingPath": tracking,
            "snapshotMessageId": "db0ed167-2321-4078-b143-2eb86bf8529a",
            "backup": {
                "backupFileName": "1129dc4b8e8aef4f@v2",
                "version": 1,
                "realParentDir": str(project),
            },
        },
    )
    doc = restore(root, "0f31836f", "--to", "db0ed167", "--yes")
    code = doc["code"]
    assert isinstance(code, dict)
    skipped = {s["path"]: s["reason"] for s in code["skipped"]}
    assert [p for p, reason in skipped.items() if "outside the project" in reason] == [
        str(project / tracking)
    ]
    assert str(outside) not in code["restored"]
    assert not outside.exists()


def test_symlinked_parent_is_skipped(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "link").symlink_to(outside)
    _append(
        root,
        {
            "type": "file-history-delta",
            "messageId": "x",
            "trackingPath": "link/planted.txt",
            "snapshotMessageId": "db0ed167-2321-4078-b143-2eb86bf8529a",
            "backup": {
                "backupFileName": "1129dc4b8e8aef4f@v2",
                "version": 1,
                "realParentDir": str(project),
            },
        },
    )
    doc = restore(root, "0f31836f", "--to", "db0ed167", "--yes")
    assert not (outside / "planted.txt").exists()
    assert "symlink" in json.dumps(doc["code"])


def test_drift_is_reported_as_a_conflict_but_does_not_block_with_yes(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    clean = restore(root, "0f31836f", "--to", "5fcb784a", "--dry-run")
    assert clean["conflicts"] == []  # every tracked file is as the agent left it
    (project / "a.txt").write_text("changed by hand\n")
    doc = restore(root, "0f31836f", "--to", "5fcb784a", "--yes")
    conflicts = doc["conflicts"]
    assert isinstance(conflicts, list)
    assert [c["path"] for c in conflicts] == [str(project / "a.txt")]
    assert (project / "a.txt").read_text() == "alpha\n"  # restored all the same
    restore(root, "0f31836f", "--undo", "--yes")
    assert (project / "a.txt").read_text() == "changed by hand\n"  # and undoable


def test_restore_gives_the_file_its_backups_mode(tmp_path: Path) -> None:
    # As the client does: the backup keeps the file's mode, the restore puts it back.
    root, project = lay_out("01-basic", tmp_path)
    backup = next(
        p
        for p in (root / "file-history").rglob("*@v*")
        if p.read_text() == "# Notes\noriginal line\n"
    )
    backup.chmod(0o640)
    notes = project / "notes.md"
    notes.chmod(0o600)
    restore(root, "0f31836f", "--to", "5fcb784a", "--yes")
    assert notes.read_text() == "# Notes\noriginal line\n"
    assert notes.stat().st_mode & 0o777 == 0o640


def test_subagent_edits_are_left_alone_unless_asked(tmp_path: Path) -> None:
    root, project = lay_out("14-subagent", tmp_path)
    for transcript in (root / "projects").rglob("agent-*.jsonl"):  # lay_out moves main ones
        original = json.loads((FIXTURES / "14-subagent" / "scenario.json").read_text())["project"]
        transcript.write_text(transcript.read_text().replace(original, str(project)))
    as_client = restore(root, "a771dff3", "--to", "e10ca784", "--dry-run")  # p2 delegates
    assert str(project / "sub.txt") not in json.dumps(as_client["code"])
    more = restore(root, "a771dff3", "--to", "e10ca784", "--yes", "--include-subagent-edits")
    code = more["code"]
    assert isinstance(code, dict)
    assert code["deleted"] == [str(project / "sub.txt")]  # the subagent created it in p2
    assert not (project / "sub.txt").exists()
    restore(root, "a771dff3", "--undo", "--yes")
    assert (project / "sub.txt").read_text() == "from subagent\n"


def test_the_undo_hint_is_runnable_as_printed(tmp_path: Path) -> None:
    root, project = lay_out("02-rewind-both", tmp_path)
    before = tree_of(project)
    args = ["--root", str(root), "restore", "b06189e0", "--to", "e42339f0", "--yes"]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    hint = next(line for line in done.output.splitlines() if "undo with:" in line)
    command = hint.split("undo with: ", 1)[1].split(" (saved in")[0]
    argv = shlex.split(command)
    assert argv[:3] == ["sessiontree", "--root", str(root)]
    undone = CliRunner().invoke(cli, [*argv[1:], "--yes"])
    assert undone.exit_code == 0, undone.output
    assert tree_of(project) == before
