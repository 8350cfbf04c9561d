"""Restore edge cases: binary previews, files that cannot be restored (each skipped with a
reason, never a false "restored"), idempotence, and undo of a restore that created a file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.checkpoints.restore import FileStep, RestorePlan, format_diff, plan_restore
from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.storage.layout import Layout
from tests.conftest import lay_out

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"
BASIC_P1 = "db0ed167-2321-4078-b143-2eb86bf8529a"  # before a.txt existed; notes.md original
BASIC_P3 = "8d6b6ac3-f16d-4be4-8495-0b4662ef079f"  # a.txt@v2 "alpha", notes.md@v2
NOTES_V1 = "1129dc4b8e8aef4f@v1"


def tree_of(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def restore(root: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["--root", str(root), "restore", *args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def plan(root: Path, project: Path, prompt: str) -> RestorePlan:
    transcript = Transcript.open(next((root / "projects").glob(f"*/{BASIC}.jsonl")))
    return plan_restore(Layout(root), BASIC, project, read_checkpoints(transcript), prompt)


def step_for(restore_plan: RestorePlan, name: str) -> FileStep:
    return next(s for s in restore_plan.steps if s.path.name == name)


# -- previews -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "backup"),
    [
        (b"PNG\x00\x01\x02", None),  # the file now is binary
        (None, b"\x89PNG\r\n\x1a\n\x00\x00"),  # the backup is
        (b"caf\xe9 latin-1\n", None),  # not UTF-8: named too
    ],
)
def test_binary_files_are_named_not_diffed(
    tmp_path: Path, now: bytes | None, backup: bytes | None
) -> None:
    root, project = lay_out("01-basic", tmp_path)
    if now is not None:
        (project / "notes.md").write_bytes(now)
    if backup is not None:
        (root / "file-history" / BASIC / NOTES_V1).write_bytes(backup)
    step = step_for(plan(root, project, BASIC_P1), "notes.md")
    assert step.action == "restore"
    assert format_diff(step) == f"binary file {project / 'notes.md'} differs\n"


def test_text_files_get_a_unified_diff(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    diff = format_diff(step_for(plan(root, project, BASIC_P1), "notes.md"))
    assert "-edited line\n" in diff and "+original line\n" in diff
    deleted = format_diff(step_for(plan(root, project, BASIC_P1), "a.txt"))
    assert "-gamma\n" in deleted  # a delete previews the lines that go


# -- files that cannot be restored ------------------------------------------------------


def test_directory_in_place_of_a_file_is_skipped_with_a_reason(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (project / "notes.md").unlink()
    (project / "notes.md").mkdir()
    (project / "notes.md" / "inside.txt").write_text("keep me\n")
    doc = restore(root, BASIC, "--to", BASIC_P1, "--yes")
    code = doc["code"]
    assert code["skipped"] == [{"path": str(project / "notes.md"), "reason": "not a regular file"}]
    assert str(project / "notes.md") not in code["restored"]
    assert (project / "notes.md" / "inside.txt").read_text() == "keep me\n"
    assert not (project / "a.txt").exists()  # the rest of the restore still happened


def _as_nobody(work: Callable[[], tuple[str, str | None]]) -> tuple[str, str | None]:
    """``work()`` run in a forked child as an unprivileged user (root reads any file, so
    an unreadable file can only be tested as someone else), its result sent back."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write_end, json.dumps(work()).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        sent = pipe.read()
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the unprivileged child failed"
    action, reason = json.loads(sent)
    return action, reason


NOBODY = 65534


def test_unreadable_file_is_skipped_with_a_reason(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # pytest's base temp folder is root's alone: lay the scenario out where the
        # unprivileged child can reach it.
        shared = Path(tempfile.mkdtemp(prefix="sessiontree-unreadable-"))
        shared.chmod(0o755)
        cleanup_folder = shared
    else:
        shared, cleanup_folder = tmp_path, None
    try:
        root, project = lay_out("01-basic", shared)
        notes = project / "notes.md"
        assert notes.stat().st_size != (root / "file-history" / BASIC / NOTES_V1).stat().st_size
        notes.chmod(0)

        def planned() -> tuple[str, str | None]:
            step = step_for(plan(root, project, BASIC_P1), "notes.md")
            return step.action, step.reason

        got = _as_nobody(planned) if os.geteuid() == 0 else planned()
        # Not "restore": apply_restore could not save it for undo and would fail midway.
        assert got == ("skip", "unreadable: cannot be saved for undo")
    finally:
        if cleanup_folder is not None:
            shutil.rmtree(cleanup_folder)


def test_missing_backup_is_skipped_never_reported_restored(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (root / "file-history" / BASIC / NOTES_V1).unlink()
    before = (project / "notes.md").read_bytes()
    doc = restore(root, BASIC, "--to", BASIC_P1, "--yes")
    code = doc["code"]
    assert code["skipped"] == [
        {
            "path": str(project / "notes.md"),
            "reason": f"backup {NOTES_V1} is missing: the checkpoint is gone for this file"
            " (the client keeps only its newest checkpoints' backups)",
        }
    ]
    assert code["restored"] == []
    assert code["deleted"] == [str(project / "a.txt")]
    assert (project / "notes.md").read_bytes() == before


# -- doing it again, and undoing it -------------------------------------------------------


@pytest.mark.parametrize("prompt", [BASIC_P1, BASIC_P3])
def test_restoring_twice_changes_nothing_the_second_time(tmp_path: Path, prompt: str) -> None:
    root, project = lay_out("01-basic", tmp_path)
    first = restore(root, BASIC, "--to", prompt, "--yes")["code"]
    assert first["restored"] or first["deleted"]
    after_first = tree_of(project)
    second = restore(root, BASIC, "--to", prompt, "--yes")["code"]
    assert second["restored"] == second["deleted"] == second["skipped"] == []
    assert sorted(second["unchanged"]) == sorted(str(project / n) for n in ("a.txt", "notes.md"))
    assert tree_of(project) == after_first
    undo_root = root / "backups" / "sessiontree-restore"
    assert len(list(undo_root.iterdir())) == 1  # a no-op restore saves nothing to undo


def test_undo_deletes_a_file_the_restore_created(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (project / "a.txt").unlink()  # say, removed by Bash
    before = tree_of(project)
    code = restore(root, BASIC, "--to", BASIC_P3, "--yes")["code"]
    assert code["restored"] == [str(project / "a.txt")]
    assert (project / "a.txt").read_text() == "alpha\n"
    restore(root, BASIC, "--undo", "--yes")
    assert not (project / "a.txt").exists()
    assert tree_of(project) == before


def test_undo_puts_back_a_file_the_restore_deleted_byte_for_byte(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (project / "a.txt").write_bytes(b"\x00binary\xff by hand\r\n")
    os.chmod(project / "a.txt", 0o600)
    before = tree_of(project)
    restore(root, BASIC, "--to", BASIC_P1, "--yes")
    assert not (project / "a.txt").exists()
    restore(root, BASIC, "--undo", "--yes")
    assert tree_of(project) == before
    assert (project / "a.txt").stat().st_mode & 0o777 == 0o600


def test_undo_never_writes_through_a_symlink_put_in_a_files_place(tmp_path: Path) -> None:
    """Undo writes each saved file back atomically: a symlink now where a restored file
    was is refused, not followed (``shutil.copy2`` wrote into its target)."""
    root, project = lay_out("01-basic", tmp_path)
    restore(root, BASIC, "--to", BASIC_P3, "--yes")
    outside = tmp_path / "outside.txt"
    outside.write_text("not the project's\n")
    (project / "a.txt").unlink()
    (project / "a.txt").symlink_to(outside)
    result = CliRunner().invoke(cli, ["--root", str(root), "restore", BASIC, "--undo", "--yes"])
    assert result.exit_code == 1, result.output
    assert outside.read_text() == "not the project's\n"
    assert (project / "a.txt").is_symlink()


def test_an_undone_restore_is_marked_not_renamed(tmp_path: Path) -> None:
    root, _project = lay_out("01-basic", tmp_path)
    restore(root, BASIC, "--to", BASIC_P3, "--yes")
    [folder] = (root / "backups" / "sessiontree-restore").iterdir()
    restore(root, BASIC, "--undo", "--yes")
    assert (folder / "undone.json").is_file() and (folder / "manifest.json").is_file()
    result = CliRunner().invoke(cli, ["--root", str(root), "restore", BASIC, "--undo", "--yes"])
    assert result.exit_code == 1 and "no restore" in result.output
