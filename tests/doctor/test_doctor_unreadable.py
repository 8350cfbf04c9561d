"""What doctor cannot read it reports, and goes on: a ``file-history/<session>`` that is
a file (or a link) where the client keeps a folder, a transcript that is no file or
cannot be opened. The library returns each as an ``unreadable`` problem; it never
raises, and the CLI never stops on one with ``io-error``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.doctor import check_store, check_transcript
from sessiontree.storage.layout import Layout

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"


def _doctor(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--root", str(root), "doctor", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def backups_a_file(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    """01-basic with ``file-history/<session>`` a regular file, not a folder."""
    root: Path = fixture_root("01-basic")
    folder = root / "file-history" / BASIC
    shutil.rmtree(folder)
    folder.write_text("not a folder\n")
    return root


def test_a_backup_folder_that_is_a_file_is_one_problem(backups_a_file: Path) -> None:
    layout = Layout(backups_a_file)
    transcript = next(backups_a_file.glob(f"projects/*/{BASIC}.jsonl"))
    folder = str(backups_a_file / "file-history" / BASIC)
    for problems in (
        check_transcript(transcript),
        check_transcript(transcript, layout=layout),
        list(check_store(layout).problems),
    ):
        unreadable = [p for p in problems if p.kind == "unreadable"]
        assert [p.path for p in unreadable] == [folder]
        assert "not a folder" in unreadable[0].detail
        # one line for the folder, not one missing backup per checkpoint entry
        assert not [p for p in problems if p.kind == "missing-backup"]


@pytest.mark.parametrize("args", [(), (BASIC,)], ids=["store", "session"])
def test_doctor_reports_a_backup_folder_that_is_a_file(
    backups_a_file: Path, args: tuple[str, ...]
) -> None:
    folder = str(backups_a_file / "file-history" / BASIC)
    code, out, err = _doctor(backups_a_file, *args)
    assert code == 1 and err == ""
    assert f"unreadable {folder}: " in out
    assert out.endswith("1 transcript(s) checked, 1 problem(s)\n")
    code, out, _ = _doctor(backups_a_file, *args, "--json")
    document = json.loads(out)
    assert code == 1 and document["ok"] is False
    assert [(p["kind"], p["path"]) for p in document["problems"]] == [("unreadable", folder)]


def test_a_backup_folder_that_is_a_link_is_one_problem(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_root("01-basic")
    folder = root / "file-history" / BASIC
    folder.rename(root / "elsewhere")
    folder.symlink_to(root / "elsewhere")
    code, out, err = _doctor(root, BASIC)
    assert code == 1 and err == ""
    assert f"unreadable {folder}: " in out and "link" in out
