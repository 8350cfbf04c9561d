"""``restore --undo``: what it undoes is said, what changed since the restore is a
conflict (never lost without a word), and the undo record is untrusted input: every
entry is checked before anything changes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from tests.conftest import lay_out

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"
BASIC_P1 = "db0ed167-2321-4078-b143-2eb86bf8529a"  # before a.txt existed; notes.md original
BASIC_P3 = "8d6b6ac3-f16d-4be4-8495-0b4662ef079f"  # a.txt@v2 "alpha", notes.md@v2


def tree_of(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def invoke(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--root", str(root), "restore", BASIC, *args])


def restore(root: Path, *args: str) -> dict[str, Any]:
    result = invoke(root, *args, "--json")
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def prompt_number(root: Path, prompt_uuid: str) -> int:
    transcript = Transcript.open(next((root / "projects").glob(f"*/{BASIC}.jsonl")))
    return transcript.numbered_prompts().index(prompt_uuid) + 1


# -- item 2: later work is a conflict, and the undo says which restore it undoes ---------


def test_an_edit_after_the_restore_is_a_conflict_of_its_undo(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    restore(root, "--to", BASIC_P3, "--yes")  # a.txt: gamma -> alpha
    clean = restore(root, "--undo", "--dry-run")
    assert clean["conflicts"] == []  # nothing changed since the restore
    a = project / "a.txt"
    a.write_text("alpha\nlater work\n")
    preview = restore(root, "--undo", "--dry-run")
    [conflict] = preview["conflicts"]
    assert conflict["path"] == str(a)
    assert conflict["reason"].startswith("changed since the restore")
    text = invoke(root, "--undo", "--dry-run")
    assert text.exit_code == 0, text.output
    assert f"conflict {a}: changed since the restore" in text.output
    assert a.read_text() == "alpha\nlater work\n"  # a dry run changes nothing
    # Applied as restore applies over conflicts (asked for: --yes), but the later work is
    # kept where the output says, not lost.
    done = restore(root, "--undo", "--yes")
    assert a.read_text() == "gamma\n"
    [kept] = done["conflicts"]
    assert Path(kept["keptAs"]).read_text() == "alpha\nlater work\n"


def test_a_file_made_where_the_restore_deleted_one_is_a_conflict(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    restore(root, "--to", BASIC_P1, "--yes")  # a.txt did not exist yet: deleted
    (project / "a.txt").write_text("new work\n")
    [conflict] = restore(root, "--undo", "--dry-run")["conflicts"]
    assert conflict["path"] == str(project / "a.txt")
    assert conflict["reason"].startswith("made since the restore")


def test_the_confirmation_names_the_conflicts(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    restore(root, "--to", BASIC_P3, "--yes")
    (project / "a.txt").write_text("later work\n")
    # (not a terminal: refused before asking, nothing changed, the reason said)
    refused = invoke(root, "--undo")
    assert refused.exit_code == 1
    assert "conflict" in refused.output and "pass --yes" in refused.output
    assert (project / "a.txt").read_text() == "later work\n"


def test_the_undo_says_which_restore_it_undoes(tmp_path: Path) -> None:
    root, _project = lay_out("01-basic", tmp_path)
    start = datetime.now(UTC) - timedelta(seconds=1)
    first = restore(root, "--to", BASIC_P1, "--yes")
    assert first["code"]["deleted"]
    restore(root, "--to", BASIC_P3, "--yes")
    end = datetime.now(UTC) + timedelta(seconds=1)

    latest = restore(root, "--undo", "--dry-run")["restore"]
    assert latest["sessionId"] == BASIC and latest["promptUuid"] == BASIC_P3
    assert latest["promptNumber"] == prompt_number(root, BASIC_P3)
    assert start <= datetime.fromisoformat(latest["restoredAt"]) <= end
    assert Path(latest["folder"]).is_dir()
    text = invoke(root, "--undo", "--dry-run").output
    assert f"undo the restore of session {BASIC[:8]} to prompt {latest['promptNumber']}" in text
    assert latest["restoredAt"][:19].replace("T", " ") in text

    restore(root, "--undo", "--yes")
    # The next undo walks back the older restore: it says so, and that the newer is undone.
    older = restore(root, "--undo", "--dry-run")["restore"]
    assert older["promptUuid"] == BASIC_P1 and older["folder"] != latest["folder"]
    text = invoke(root, "--undo", "--dry-run").output
    assert f"to prompt {prompt_number(root, BASIC_P1)}" in text
    assert "1 later restore of this session is undone already" in text


# -- item 10: the undo record is checked whole before anything changes -------------------


def undo_folder(root: Path) -> Path:
    [folder] = (root / "backups" / "sessiontree-restore").iterdir()
    return folder


def rewrite_manifest(folder: Path, edit: Any) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("not the project's\n")
    return victim


BAD_ENTRIES = {
    "climbs out with ..": lambda project, victim, saved: {
        "path": f"{project}/../../{victim.name}",
        "saved": saved,
    },
    "an absolute path elsewhere": lambda project, victim, saved: {
        "path": str(victim),
        "saved": saved,
    },
    "a path elsewhere to delete": lambda project, victim, saved: {
        "path": str(victim),
        "saved": None,
    },
    "a relative path": lambda project, victim, saved: {"path": "a.txt", "saved": saved},
    "a saved copy outside the undo folder": lambda project, victim, saved: {
        "path": str(project / "a.txt"),
        "saved": f"../../../{victim.name}",
    },
    "a saved copy that is not there": lambda project, victim, saved: {
        "path": str(project / "a.txt"),
        "saved": "99999",
    },
    "not an object": lambda project, victim, saved: ["a.txt"],
}


@pytest.mark.parametrize("bad", list(BAD_ENTRIES))
def test_a_tampered_undo_record_changes_nothing(tmp_path: Path, bad: str) -> None:
    root, project = lay_out("01-basic", tmp_path / "t")
    victim = _victim(tmp_path / "t")
    restore(root, "--to", BASIC_P1, "--yes")  # deletes a.txt, restores notes.md
    folder = undo_folder(root)
    saved = next(e["saved"] for e in json.loads((folder / "manifest.json").read_text())["files"]
                 if e["saved"])  # fmt: skip
    # the good entries first: nothing of them may be applied either
    rewrite_manifest(
        folder,
        lambda m: m["files"].append(BAD_ENTRIES[bad](project, victim, saved)),
    )
    before = tree_of(project)
    result = invoke(root, "--undo", "--yes")
    assert result.exit_code == 1, result.output
    assert result.stdout == "" and result.stderr.count("\n") == 1, result.output
    assert "undo record" in result.stderr
    assert tree_of(project) == before
    assert victim.read_text() == "not the project's\n"
    assert not (folder / "undone.json").exists()


def test_the_config_root_is_outside_the_project_too(tmp_path: Path) -> None:
    root, _project = lay_out("01-basic", tmp_path)
    restore(root, "--to", BASIC_P1, "--yes")
    settings = root / "settings.json"
    settings.write_text("{}\n")
    rewrite_manifest(
        undo_folder(root), lambda m: m["files"].append({"path": str(settings), "saved": None})
    )
    result = invoke(root, "--undo", "--yes")
    assert result.exit_code == 1 and "outside the project" in result.stderr
    assert settings.read_text() == "{}\n"


@pytest.mark.parametrize("text", ["not json", "[]", '{"files": 3}', '{"sessionId": "x"}'])
def test_an_unreadable_undo_record_is_one_line(tmp_path: Path, text: str) -> None:
    root, project = lay_out("01-basic", tmp_path)
    restore(root, "--to", BASIC_P1, "--yes")
    (undo_folder(root) / "manifest.json").write_text(text)
    before = tree_of(project)
    for args in (["--undo", "--yes"], ["--undo", "--dry-run"]):
        result = invoke(root, *args)
        assert result.exit_code == 1, result.output
        assert result.stdout == "" and result.stderr.count("\n") == 1, result.output
        assert "undo record" in result.stderr
    assert tree_of(project) == before


def test_a_saved_copy_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    victim = _victim(tmp_path)
    restore(root, "--to", BASIC_P1, "--yes")
    folder = undo_folder(root)
    entry = next(e for e in json.loads((folder / "manifest.json").read_text())["files"]
                 if e["saved"])  # fmt: skip
    (folder / entry["saved"]).unlink()
    (folder / entry["saved"]).symlink_to(victim)  # would copy the victim into the project
    before = tree_of(project)
    result = invoke(root, "--undo", "--yes")
    assert result.exit_code == 1 and "undo record" in result.stderr
    assert tree_of(project) == before


def test_outside_paths_need_allow_outside_as_the_restore_did(tmp_path: Path) -> None:
    root, _project = lay_out("01-basic", tmp_path)
    victim = _victim(tmp_path)
    restore(root, "--to", BASIC_P1, "--yes")
    rewrite_manifest(
        undo_folder(root), lambda m: m["files"].append({"path": str(victim), "saved": None})
    )
    refused = invoke(root, "--undo", "--yes")
    assert refused.exit_code == 1 and "pass --allow-outside" in refused.stderr
    restore(root, "--undo", "--yes", "--allow-outside")
    assert not victim.exists()  # asked for: the entry is undone as named


# -- as root in a user's project: what is written keeps the user's ownership -------------

OWNER = (4242, 4343)  # a user and group that are not root's


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_restore_and_undo_as_root_keep_the_projects_owner(tmp_path: Path) -> None:
    root, project = lay_out("01-basic", tmp_path)
    (project / "a.txt").unlink()  # the restore makes it again: it takes its folder's owner
    (project / "sub").mkdir()
    for path in [project, *project.rglob("*"), root, *root.rglob("*")]:
        os.lchown(path, *OWNER)  # (the user's config root too: root ran with --root)
    restore(root, "--to", BASIC_P3, "--yes")  # notes.md replaced, a.txt made
    saved = root / "backups"  # the undo record, in the user's config root
    assert {(p.stat().st_uid, p.stat().st_gid) for p in [saved, *saved.rglob("*")]} == {OWNER}
    assert (project / "a.txt").read_text() == "alpha\n"
    owners = {p.name: (p.stat().st_uid, p.stat().st_gid) for p in project.iterdir()}
    assert owners == dict.fromkeys(("a.txt", "b.txt", "notes.md", "sub"), OWNER)
    (project / "a.txt").unlink()
    (project / "notes.md").write_text("edited by the user\n")
    os.chown(project / "notes.md", *OWNER)
    restore(root, "--undo", "--yes")
    owners = {p.name: (p.stat().st_uid, p.stat().st_gid) for p in project.iterdir()}
    assert owners == dict.fromkeys(("b.txt", "notes.md", "sub"), OWNER)


def test_an_undo_into_a_project_folder_that_is_gone_is_refused(tmp_path: Path) -> None:
    # As restore refuses: it puts files back into the project, it does not make it again.
    root, project = lay_out("01-basic", tmp_path)
    restore(root, "--to", BASIC_P1, "--yes")
    shutil.rmtree(project)
    result = invoke(root, "--undo", "--yes")
    assert result.exit_code == 1 and f"the project folder {project} is gone" in result.stderr
    assert not project.exists()
