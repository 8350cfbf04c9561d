"""Restore code as a library: plan, preview, apply, undo, without the command line.

The golden cases are the CLI's (tests/checkpoints/test_restore.py): the project after
``restore_code(plan_restore_code(...))`` equals the project after the real client's
"Restore code" to that prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sessiontree
from sessiontree import (
    CodeRestorePlan,
    Layout,
    NotFound,
    Refused,
    Transcript,
    plan_restore_code,
    restore_code,
    undo_code_restore,
)
from tests.checkpoints.test_restore import CASES, UNEXPLAINED, tree_of
from tests.conftest import lay_out, scenario_id

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"
BASIC_P1 = "db0ed167-2321-4078-b143-2eb86bf8529a"  # before a.txt existed; notes.md original
BASIC_P3 = "8d6b6ac3-f16d-4be4-8495-0b4662ef079f"  # a.txt@v2 "alpha", notes.md@v2


def open_session(root: Path, session_id: str) -> Transcript:
    return Transcript.open(next((root / "projects").glob(f"*/{session_id}.jsonl")))


@pytest.mark.parametrize(
    ("scenario", "case"), CASES, ids=[f"{scenario_id(s)}-{c}" for s, c in CASES]
)
def test_library_restore_equals_real_client(scenario: Path, case: str, tmp_path: Path) -> None:
    meta = json.loads((scenario / "truth" / case / "meta.json").read_text())
    if (scenario_id(scenario), case) in UNEXPLAINED:
        pytest.xfail(UNEXPLAINED[(scenario_id(scenario), case)])
    root, project = lay_out(scenario, tmp_path)
    layout = Layout(root)
    transcript = open_session(root, meta["sessionId"])
    try:
        plan = plan_restore_code(layout, transcript, meta["promptUuid"], project=project)
    except NotFound:
        # No checkpoint for that prompt: only where the client offered no restore either.
        assert not meta.get("restored", True)
    else:
        restore_code(plan)
    assert tree_of(project) == tree_of(scenario / "truth" / case / "files")


def test_a_plan_is_a_preview_and_changes_nothing(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    before = tree_of(project)
    plan = plan_restore_code(Layout(root), open_session(root, BASIC), "db0ed167")
    assert isinstance(plan, CodeRestorePlan)
    assert plan.prompt_uuid == BASIC_P1 and plan.project == project
    assert tree_of(project) == before
    assert plan.as_json()["deleted"] == [str(project / "a.txt")]
    assert plan.as_json()["restored"] == [str(project / "notes.md")]
    assert sorted(s.path.name for s in plan.changes) == ["a.txt", "notes.md"]
    assert plan.conflicts == () and plan.conflicts_as_json() == []
    assert not (root / "backups" / "sessiontree-restore").exists()


def test_restore_then_undo(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    layout, transcript = Layout(root), open_session(root, BASIC)
    before = tree_of(project)
    undo = restore_code(plan_restore_code(layout, transcript, "-3"))
    assert undo is not None and (undo.folder / "manifest.json").is_file()
    assert tree_of(project) != before
    assert sorted(undo_code_restore(layout, BASIC)) == sorted(
        str(project / n) for n in ("a.txt", "notes.md")
    )
    assert tree_of(project) == before
    with pytest.raises(Refused):
        undo_code_restore(layout, BASIC)  # nothing left to undo


def test_nothing_to_change_saves_nothing(tmp_path: Path) -> None:
    root, _project = lay_out("01-basic", tmp_path)
    layout, transcript = Layout(root), open_session(root, BASIC)
    assert restore_code(plan_restore_code(layout, transcript, BASIC_P3)) is not None
    again = plan_restore_code(layout, transcript, BASIC_P3)
    assert again.changes == []
    assert restore_code(again) is None
    assert len(list((root / "backups" / "sessiontree-restore").iterdir())) == 1


def test_conflicts_are_in_the_plan_and_do_not_block(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (project / "a.txt").write_text("changed by hand\n")
    layout, transcript = Layout(root), open_session(root, BASIC)
    plan = plan_restore_code(layout, transcript, BASIC_P3)
    assert [c.path for c in plan.conflicts] == [project / "a.txt"]
    assert plan.conflicts_as_json()[0]["path"] == str(project / "a.txt")
    restore_code(plan)
    assert (project / "a.txt").read_text() == "alpha\n"
    undo_code_restore(layout, BASIC)
    assert (project / "a.txt").read_text() == "changed by hand\n"


def test_a_prompt_without_a_checkpoint_is_not_found(tmp_path: Path) -> None:
    root, _project = lay_out("01-basic", tmp_path)
    with pytest.raises(NotFound):
        plan_restore_code(Layout(root), open_session(root, BASIC), "ffffffff")


def test_the_library_names_are_public() -> None:
    for name in ("plan_restore_code", "restore_code", "undo_code_restore", "CodeRestorePlan"):
        assert name in sessiontree.__all__
