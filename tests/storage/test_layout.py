"""Paths under the config root: encoded project names, backup names, the root itself."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.storage.layout import (
    MAX_ENCODED_LENGTH,
    Layout,
    backup_name,
    encode_cwd,
    is_session_file,
    paste_hash,
    resolve_root,
    session_folder_name,
)
from tests.conftest import FIXTURES, scenario_names

# -- encoded cwd -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cwd", "encoded"),
    [
        ("/home/a_b.c", "-home-a-b-c"),
        ("C:\\Users\\x", "C--Users-x"),
        ("/home/dev/01-basic", "-home-dev-01-basic"),
        ("/a//b", "-a--b"),  # no collapsing
        ("/tmp/x y~z", "-tmp-x-y-z"),
        ("/home/é", "-home--"),
        ("/", "-"),
    ],
)
def test_encode_cwd_examples(cwd: str, encoded: str) -> None:
    assert encode_cwd(cwd) == encoded


@pytest.mark.parametrize("scenario", scenario_names())
def test_fixture_project_folders_are_encoded_cwds(scenario: str) -> None:
    facts = json.loads((FIXTURES / scenario / "scenario.json").read_text(encoding="utf-8"))
    project_dirs = [p.name for p in (FIXTURES / scenario / "claude-home" / "projects").iterdir()]
    assert project_dirs == [encode_cwd(facts["project"])]


def test_long_cwd_is_cut_and_suffixed() -> None:
    cwd = "/home/" + "a" * 120 + "/" + "b_" * 60
    encoded = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    assert len(encoded) > MAX_ENCODED_LENGTH == 200
    name = encode_cwd(cwd)
    assert name.startswith(encoded[:200] + "-")
    suffix = name[201:]
    assert suffix and re.fullmatch(r"[0-9a-z]+", suffix)
    assert encode_cwd(cwd) == name  # stable
    other = cwd + "c"
    assert encode_cwd(other)[:201] == name[:201]
    assert encode_cwd(other) != name  # same prefix, different folder


def test_long_cwd_suffix_is_the_real_clients() -> None:
    # observed with the real client 2.1.328 (`claude -p` run in this folder)
    cwd = "/tmp/exp-cwd-zlw1d81p/long_" + "x" * 230
    real = "-tmp-exp-cwd-zlw1d81p-long-" + "x" * 173 + "-jrs34p"
    assert len(real) == 207
    assert encode_cwd(cwd) == real


def test_encode_cwd_counts_utf16_units_like_the_client() -> None:
    assert encode_cwd("/tmp/exp-cwd-zlw1d81p/emoji😀dir") == "-tmp-exp-cwd-zlw1d81p-emoji--dir"


def test_encoded_name_of_exactly_200_is_kept_whole() -> None:
    cwd = "/" + "a" * 199
    assert encode_cwd(cwd) == "-" + "a" * 199
    assert len(encode_cwd(cwd + "b")) > 201


def test_find_project_dirs_exact_for_short_paths(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    assert layout.find_project_dirs("/home/dev/p") == []  # no projects folder at all
    (tmp_path / "projects" / "-home-dev-p").mkdir(parents=True)
    (tmp_path / "projects" / "-home-dev-p-other").mkdir()
    assert layout.find_project_dirs("/home/dev/p") == [tmp_path / "projects" / "-home-dev-p"]
    assert layout.find_project_dirs("/home/dev/q") == []
    assert layout.project_dir("/home/dev/p") == tmp_path / "projects" / "-home-dev-p"


def test_find_project_dirs_by_prefix_for_long_paths(tmp_path: Path) -> None:
    cwd = "/work/" + "deep/" * 50
    prefix = re.sub(r"[^A-Za-z0-9]", "-", cwd)[:200]
    projects = tmp_path / "projects"
    projects.mkdir()
    # whatever hash the client appended (its runtime's own hash), and the name we compute
    theirs = projects / f"{prefix}-1x2y3z"
    ours = projects / encode_cwd(cwd)
    other_long = projects / f"{prefix}-another"  # a different long cwd, same prefix
    for folder in (theirs, ours, other_long):
        folder.mkdir(exist_ok=True)
    (projects / (prefix[:199] + "X-1x2y3z")).mkdir()  # differs inside the prefix
    (projects / "-short").mkdir()
    (projects / f"{prefix}-afile").write_text("not a folder")
    found = Layout(tmp_path).find_project_dirs(cwd)
    assert found == sorted({theirs, ours, other_long})


# -- backup names ------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", scenario_names())
def test_backup_names_match_the_fixture_hashes(scenario: str) -> None:
    facts = json.loads((FIXTURES / scenario / "scenario.json").read_text(encoding="utf-8"))
    project = facts["project"]
    hashes: dict[str, str] = facts["facts"]["path_hashes"]
    assert hashes
    for relative, digest in hashes.items():
        assert backup_name(f"{project}/{relative}", 3) == f"{digest}@v3"
    # every backup file on disk is named for a file of the project
    names = [p.name for p in (FIXTURES / scenario / "claude-home" / "file-history").glob("*/*")]
    assert names
    for name in names:
        digest, _, version = name.partition("@v")
        assert digest in hashes.values(), name
        assert version.isdigit()


def test_backup_names_in_records_are_their_files_hash() -> None:
    """Every backup a snapshot or delta names is sha256(realParentDir/trackingPath)@v<N>."""
    seen = set()
    for scenario in scenario_names():
        for path in (FIXTURES / scenario / "claude-home" / "projects").glob("*/*.jsonl"):
            transcript = Transcript.open(path)
            entries = []
            for record in transcript.metadata("file-history-snapshot", "file-history-delta"):
                if record.type == "file-history-delta":
                    entries.append((record.get("trackingPath"), record.get("backup")))
                else:
                    entries.extend(record.get("snapshot")["trackedFileBackups"].items())
            for tracking_path, backup in entries:
                name = backup["backupFileName"]
                if name is None:
                    continue
                absolute = f"{backup['realParentDir']}/{tracking_path}"
                assert name == backup_name(absolute, backup["version"])
                seen.add(name)
    assert len(seen) >= 15


def test_backup_name_is_sha256_of_the_path_as_given() -> None:
    path = "/home/ü/x.txt"
    digest = hashlib.sha256(path.encode("utf-8")).hexdigest()[:16]
    assert backup_name(path, 1) == f"{digest}@v1"
    assert backup_name(path, 12) == f"{digest}@v12"


def test_paste_hash_matches_the_fixture_paste() -> None:
    paste = next((FIXTURES / "12-big-paste" / "claude-home" / "paste-cache").glob("*.txt"))
    assert paste_hash(paste.read_bytes().decode("utf-8")) == paste.stem == "50aff5fcc655a735"


def test_session_file_names() -> None:
    assert is_session_file("0f31836f-46f1-45f6-85ba-7878a822a884.jsonl")
    assert not is_session_file("agent-affb34be16ea94168.jsonl")
    assert not is_session_file("0f31836f-46f1-45f6-85ba-7878a822a884.jsonl.bak")
    assert not is_session_file("0f31836f.jsonl")


# -- the root ----------------------------------------------------------------------------------


def test_resolve_root_precedence(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"), "HOME": str(tmp_path / "home")}
    assert resolve_root(tmp_path / "explicit", env) == tmp_path / "explicit"
    assert resolve_root(str(tmp_path / "explicit"), env) == tmp_path / "explicit"
    assert resolve_root(None, env) == tmp_path / "cfg"
    assert resolve_root("", env) == tmp_path / "cfg"
    assert resolve_root(None, {"HOME": str(tmp_path / "home")}) == tmp_path / "home" / ".claude"
    assert (
        resolve_root(None, {"CLAUDE_CONFIG_DIR": "  ", "HOME": str(tmp_path / "home")})
        == tmp_path / "home" / ".claude"
    )


def test_resolve_root_expands_user(tmp_path: Path, isolated_home: Path) -> None:
    assert resolve_root("~/r", {}) == isolated_home / "r"
    assert resolve_root(None, {"CLAUDE_CONFIG_DIR": "~/cfg"}) == isolated_home / "cfg"


def test_resolve_root_default_is_the_isolated_home(isolated_home: Path) -> None:
    import os

    env = dict(os.environ)
    assert resolve_root(None, env) == isolated_home / ".claude"
    del env["CLAUDE_CONFIG_DIR"]
    assert resolve_root(None, env) == isolated_home / ".claude"


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", "", ".hidden", "x\0y", "a..b"])
def test_no_path_built_from_a_session_id_walks_out(tmp_path: Path, bad: str) -> None:
    layout = Layout(tmp_path)
    for build in (
        layout.backup_dir,
        layout.session_env_path,
        lambda sid: layout.transcript_path("/work", sid),
    ):
        with pytest.raises(Refused):
            build(bad)
    assert session_folder_name("0f1e2d3c-0000-4000-8000-000000000001").endswith("0001")
