"""Drift: a tracked file changed outside the session's tracked edits is a conflict
before a restore overwrites or deletes it; an untouched one never is."""

from __future__ import annotations

import difflib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.checkpoints.drift import (
    Conflict,
    KnownState,
    apply_structured_patch,
    find_drift,
    latest_state,
    same_content,
    written_content,
)
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.checkpoints.restore import RestorePlan, plan_restore
from sessiontree.conversation.transcript import Transcript
from sessiontree.storage.layout import Layout
from tests.conftest import FIXTURES, lay_out

SCENARIOS = sorted(p.name for p in FIXTURES.iterdir() if (p / "claude-home").is_dir())

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"
BASIC_P1 = "db0ed167-2321-4078-b143-2eb86bf8529a"  # before a.txt was created
BASIC_P3 = "8d6b6ac3-f16d-4be4-8495-0b4662ef079f"  # before a.txt: alpha -> gamma


def transcript_of(root: Path, session_id: str) -> Transcript:
    return Transcript.open(next((root / "projects").glob(f"*/{session_id}.jsonl")))


def drift(root: Path, project: Path, session_id: str, prompt: str) -> list[Conflict]:
    transcript = transcript_of(root, session_id)
    layout = Layout(root)
    plan = plan_restore(layout, session_id, project, read_checkpoints(transcript), prompt)
    return find_drift(transcript, plan, layout=layout)


def conflicts_by_name(conflicts: list[Conflict]) -> dict[str, str]:
    return {c.path.name: c.reason for c in conflicts}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_untouched_files_never_conflict(scenario: str, tmp_path: Path) -> None:
    """Every fixture as the real client left it, restored to each of its checkpoints."""
    root, project = lay_out(scenario, tmp_path)
    layout = Layout(root)
    planned = 0
    for path in (root / "projects").glob("*/*.jsonl"):
        transcript = Transcript.open(path)
        checkpoints = read_checkpoints(transcript)
        for checkpoint in checkpoints:
            plan = plan_restore(
                layout, transcript.session_id, project, checkpoints, checkpoint.message_id
            )
            planned += len(plan.by_action("restore") + plan.by_action("delete"))
            assert find_drift(transcript, plan, layout=layout) == [], checkpoint.message_id
    assert planned > 0


def test_hand_edited_file_is_a_conflict(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (project / "notes.md").write_text("# Notes\nedited line\nmy own line, typed by hand\n")
    conflicts = drift(root, project, BASIC, BASIC_P1)
    assert [c.path for c in conflicts] == [project / "notes.md"]
    assert conflicts[0].kind == "modified"
    # notes.md was last seen at p3's snapshot (backup v2), after the agent's Edit.
    assert conflicts[0].reason.startswith("changed since its backup notes.md v2")
    assert conflicts[0].as_json() == {
        "path": str(project / "notes.md"),
        "reason": conflicts[0].reason,
    }


def test_file_the_restore_deletes_is_checked_against_the_agents_last_edit(
    tmp_path: Path,
) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (project / "a.txt").write_text("gamma\nand more, by someone else\n")
    conflicts = drift(root, project, BASIC, BASIC_P1)  # a.txt: delete
    assert list(conflicts_by_name(conflicts)) == ["a.txt"]
    assert "the agent's Edit" in conflicts[0].reason


def test_bash_made_file_never_appears(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (project / "b.txt").write_text("changed by hand too\n")  # made by Bash: untracked
    for prompt in (BASIC_P1, BASIC_P3):
        assert drift(root, project, BASIC, prompt) == []


def test_line_endings_rewritten_are_not_drift(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (project / "a.txt").write_bytes(b"\xef\xbb\xbfgamma\r\n")
    assert drift(root, project, BASIC, BASIC_P3) == []


def test_missing_file_is_not_a_conflict(tmp_path: Path) -> None:
    """Restoring re-creates it: nothing there is overwritten."""
    root, project = lay_out("01-basic", tmp_path)
    (project / "a.txt").unlink()
    assert drift(root, project, BASIC, BASIC_P3) == []


def test_missing_backup_cannot_be_checked(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (root / "file-history" / BASIC / "1129dc4b8e8aef4f@v2").unlink()  # notes.md v2
    conflicts = drift(root, project, BASIC, BASIC_P1)
    assert [(c.path.name, c.kind) for c in conflicts] == [("notes.md", "unverifiable")]
    assert "missing from file-history" in conflicts[0].reason


def _append(root: Path, session_id: str, record: dict[str, Any]) -> None:
    path = next((root / "projects").glob(f"*/{session_id}.jsonl"))
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def test_file_last_seen_absent_but_present_is_created(tmp_path: Path) -> None:
    """A later snapshot saw a.txt gone (null); it is back now, made by someone else."""
    root, project = lay_out("01-basic", tmp_path)
    stamp = "2026-11-29T20:00:00.000Z"
    entry = {"backupFileName": None, "version": 4, "backupTime": stamp}
    _append(
        root,
        BASIC,
        {
            "type": "file-history-snapshot",
            "messageId": "later",
            "snapshot": {
                "messageId": "later",
                "trackedFileBackups": {"a.txt": {**entry, "realParentDir": str(project)}},
                "timestamp": stamp,
            },
            "isSnapshotUpdate": False,
        },
    )
    conflicts = drift(root, project, BASIC, BASIC_P1)
    assert [(c.path.name, c.kind) for c in conflicts] == [("a.txt", "created")]


def test_edit_that_cannot_be_replayed_is_reported(tmp_path: Path) -> None:
    """An Edit result whose patch and strings do not fit its originalFile: say so."""
    root, project = lay_out("01-basic", tmp_path)
    _append(
        root,
        BASIC,
        {
            "type": "user",
            "uuid": "aaaaaaaa-0000-4000-8000-000000000001",
            "parentUuid": None,
            "timestamp": "2026-11-29T20:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "tool_result"}]},
            "toolUseResult": {
                "filePath": str(project / "a.txt"),
                "oldString": "nowhere",
                "newString": "x",
                "originalFile": "gamma\n",
                "structuredPatch": [{"oldStart": 9, "oldLines": 1, "lines": ["-nowhere"]}],
            },
        },
    )
    conflicts = drift(root, project, BASIC, BASIC_P1)
    assert [(c.path.name, c.kind) for c in conflicts] == [("a.txt", "unverifiable")]


def test_nothing_to_overwrite_means_nothing_read(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    transcript = transcript_of(root, BASIC)
    empty = RestorePlan(BASIC, BASIC_P1, project)
    assert find_drift(transcript, empty, layout=Layout(root)) == []


# -- the pieces -----------------------------------------------------------------------


def test_every_fixture_edit_replays_to_the_same_text_as_its_strings() -> None:
    found = 0
    for path in FIXTURES.glob("*/claude-home/projects/*/*.jsonl"):
        for line in path.read_text().splitlines():
            result = json.loads(line).get("toolUseResult")
            if isinstance(result, dict) and isinstance(result.get("oldString"), str):
                found += 1
                expected = result["originalFile"].replace(
                    result["oldString"], result["newString"], 1
                )
                assert (
                    apply_structured_patch(result["originalFile"], result["structuredPatch"])
                    == expected
                )
                assert written_content(result) == expected
    assert found >= 10


def test_no_newline_at_end_markers() -> None:
    hunks = [
        {
            "oldStart": 1,
            "oldLines": 1,
            "lines": ["-alpha", "\\ No newline at end of file", "+gamma", "+delta"],
        }
    ]
    assert apply_structured_patch("alpha", hunks) == "gamma\ndelta\n"
    hunks = [{"oldStart": 2, "oldLines": 2, "lines": [" b", "-c", "+C", "\\ No newline"]}]
    assert apply_structured_patch("a\nb\nc\n", hunks) == "a\nb\nC"
    misplaced = [{**hunks[0], "oldStart": 1}]  # line 1 is "a", not the context "b"
    assert apply_structured_patch("a\nb\nc\n", misplaced) is None
    miscounted = [{**hunks[0], "oldLines": 3}]
    assert apply_structured_patch("a\nb\nc\n", miscounted) is None


def test_patch_that_does_not_fit_falls_back_to_the_strings() -> None:
    result = {
        "originalFile": "one\ntwo\n",
        "oldString": "two",
        "newString": "2",
        "structuredPatch": [{"oldStart": 5, "lines": ["-two", "+2"]}],
    }
    assert written_content(result) == "one\n2\n"
    assert written_content({**result, "replaceAll": True, "originalFile": "two two"}) == "2 2"
    assert written_content({**result, "originalFile": None}) is None


def test_same_content_ignores_only_line_endings_and_bom() -> None:
    assert same_content(b"a\r\nb\r\n", b"a\nb\n")
    assert same_content("héllo\n".encode("utf-16"), "héllo\n".encode())
    assert not same_content(b"a\nb\n", b"a\nb")
    assert not same_content(b"a b\n", b"a  b\n")


def test_latest_state_prefers_time_then_line() -> None:
    early = datetime(2026, 1, 1, tzinfo=UTC)
    late = datetime(2026, 1, 2, tzinfo=UTC)
    a = KnownState(line=9, time=early, source="a")
    b = KnownState(line=3, time=late, source="b")
    c = KnownState(line=4, time=late, source="c")
    assert latest_state([a, b, c]) is c
    assert latest_state([a, KnownState(line=5, time=None, source="d")]) is a  # by line
    assert latest_state([]) is None


# jsdiff's structuredPatch, built with difflib: ' '/'-'/'+' lines without their "\n",
# and "\ No newline at end of file" after a line that has none.
def _structured_patch(old: str, new: str) -> list[dict[str, Any]]:
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)

    def tagged(tag: str, line: str) -> list[str]:
        if line.endswith("\n"):
            return [tag + line[:-1]]
        return [tag + line, "\\ No newline at end of file"]

    hunks = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(3):
        lines: list[str] = []
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                for line in a[i1:i2]:
                    lines += tagged(" ", line)
                continue
            for line in a[i1:i2]:
                lines += tagged("-", line)
            for line in b[j1:j2]:
                lines += tagged("+", line)
        start = group[0][1]
        hunks.append({"oldStart": start + 1, "oldLines": group[-1][2] - start, "lines": lines})
    return hunks


texts = st.lists(st.sampled_from(["a", "b", "c", "", "d e"]), max_size=12).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(old=texts, new=texts, old_nl=st.booleans(), new_nl=st.booleans())
def test_patch_replays_any_edit(old: str, new: str, old_nl: bool, new_nl: bool) -> None:
    old += "\n" if old_nl and old else ""
    new += "\n" if new_nl and new else ""
    assert apply_structured_patch(old, _structured_patch(old, new)) == new
