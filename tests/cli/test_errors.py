"""How the CLI fails (docs/CLI.md, "Errors"): one line on stderr, or one JSON document on
stdout under ``--json``, with the same exit code; a ``--root`` that is no config root
said as such; ``--root`` after the command too; conflicting options refused alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sessiontree.cli.main import cli, error_json
from sessiontree.errors import DataError
from tests.conftest import lay_out

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"
REWIND = "b06189e0-a90e-451c-aa38-609447827575"


def invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)


def json_error(result: Result, exit_code: int) -> dict[str, Any]:
    """The JSON error of a failed ``--json`` run: alone on stdout, nothing on stderr."""
    assert result.exit_code == exit_code, result.output
    assert result.stderr == ""
    doc: dict[str, Any] = json.loads(result.stdout)
    assert doc["error"] and "\n" not in doc["error"]
    return doc


def one_line(result: Result, exit_code: int) -> str:
    """The one line on stderr of a failed run, nothing on stdout."""
    assert result.exit_code == exit_code, result.output
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr


def transcript(root: Path) -> Path:
    return next((root / "projects").glob("*/*.jsonl"))


# --json errors --------------------------------------------------------------------------


def test_not_found_under_json_is_a_json_error_with_the_same_exit(basic: Path) -> None:
    doc = json_error(invoke("--root", str(basic), "show", "deadbeef", "--json"), 1)
    assert doc == {
        "error": "no session matches 'deadbeef'",
        "code": "not-found",
        "what": "session",
        "ref": "deadbeef",
    }
    line = one_line(invoke("--root", str(basic), "show", "deadbeef"), 1)
    assert line == "sessiontree: no session matches 'deadbeef'\n"


def test_ambiguous_under_json_lists_the_candidates_and_exits_2(basic: Path) -> None:
    project = transcript(basic).parent
    twin = BASIC[:4] + "ffff" + BASIC[8:]
    shutil.copy(project / f"{BASIC}.jsonl", project / f"{twin}.jsonl")
    doc = json_error(invoke("--root", str(basic), "tree", BASIC[:4], "--json"), 2)
    assert doc["code"] == "ambiguous" and doc["ref"] == BASIC[:4]
    assert sorted(doc["candidates"]) == sorted([BASIC, twin])


def test_refused_under_json(basic: Path) -> None:
    doc = json_error(invoke("--root", str(basic), "search", "  ", "--all", "--json"), 1)
    assert doc == {"error": "an empty query matches everything; give some text", "code": "refused"}


def test_a_prompt_out_of_range_under_json(rewind: Path) -> None:
    before = transcript(rewind).read_bytes()
    result = invoke("--root", str(rewind), "rewind", REWIND, "--to", "99", "--json")
    doc = json_error(result, 1)
    assert doc["code"] == "not-found" and doc["error"].startswith("no prompt of the 2")
    assert transcript(rewind).read_bytes() == before


def test_not_a_session_under_json_names_the_file_and_why(basic: Path) -> None:
    empty = transcript(basic).parent / "11111111-2222-4333-8444-555555555555.jsonl"
    empty.write_bytes(b"")
    doc = json_error(invoke("--root", str(basic), "context", str(empty), "--json"), 1)
    assert doc["code"] == "not-a-session"
    assert doc["path"] == str(empty) and doc["reason"] == "empty"


def test_data_error_json_has_its_path_and_reason() -> None:
    doc = error_json(DataError("/x/s.jsonl", "Permission denied"))
    assert doc == {
        "error": "/x/s.jsonl: Permission denied",
        "code": "data-error",
        "path": "/x/s.jsonl",
        "reason": "Permission denied",
    }


def test_an_os_error_under_json_is_a_json_error(
    basic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(basic / "projects"))

    monkeypatch.setattr("sessiontree.cli.listing.list_sessions", unreadable)
    doc = json_error(invoke("--root", str(basic), "sessions", "--all", "--json"), 1)
    assert doc == {"error": f"{basic / 'projects'}: Permission denied", "code": "io-error"}


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["show", BASIC, "--bogus", "--json"], id="unknown-option"),
        pytest.param(["show", "--json"], id="missing-argument"),
        pytest.param(["rewind", BASIC, "--json"], id="missing-required-option"),
        pytest.param(["cleanup", "--json", "--days", "0"], id="bad-value"),
        pytest.param(["cleanup", "--days", "0", "--json"], id="bad-value-before-json"),
    ],
)
def test_usage_errors_under_json_are_json_errors_exit_2(basic: Path, args: list[str]) -> None:
    doc = json_error(invoke("--root", str(basic), *args), 2)
    assert doc["code"] == "usage"


def test_usage_errors_without_json_are_one_line(basic: Path) -> None:
    result = invoke("--root", str(basic), "show", BASIC, "--bogus")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == "sessiontree: No such option '--bogus'. (see 'cli show --help')\n"


def test_json_after_double_dash_is_not_the_flag(basic: Path) -> None:
    """``search -- --json`` searches for the text "--json": its usage error is click's."""
    result = invoke("--root", str(basic), "search", "--bogus", "--", "--json")
    assert result.exit_code == 2 and result.stdout == ""
    assert "No such option" in result.stderr


def test_a_command_without_json_is_unchanged(basic: Path) -> None:
    line = one_line(invoke("--root", str(basic), "export", "deadbeef", "-o", "-"), 1)
    assert line == "sessiontree: no session matches 'deadbeef'\n"


# the config root ------------------------------------------------------------------------


READ_COMMANDS = [
    ["sessions", "--all"],
    ["show", BASIC],
    ["tree", BASIC],
    ["prompts", BASIC],
    ["history"],
    ["search", "hello", "--all"],
    ["doctor"],
    ["cleanup", "--dry-run"],
    ["usage", "--all"],
    ["switch", BASIC, "--to", "abcd", "--dry-run"],
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: a[0])
def test_a_root_that_does_not_exist_is_said_so(tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "nope"
    line = one_line(invoke("--root", str(missing), *args), 1)
    assert line == f"sessiontree: --root {missing} does not exist\n"
    assert not missing.exists()


def test_a_root_that_is_a_file_or_holds_no_projects_is_said_so(tmp_path: Path) -> None:
    a_file = tmp_path / "settings.json"
    a_file.write_text("{}")
    line = one_line(invoke("--root", str(a_file), "sessions", "--all"), 1)
    assert line == f"sessiontree: --root {a_file} is a file, not a folder\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_line(invoke("--root", str(empty), "sessions", "--all"), 1)
    assert line == (
        f"sessiontree: --root {empty} holds no projects/ folder: is it a Claude Code config root?\n"
    )


def test_claude_config_dir_is_named_when_the_root_came_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "gone"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(missing))
    line = one_line(invoke("history"), 1)
    assert line == f"sessiontree: $CLAUDE_CONFIG_DIR {missing} does not exist\n"
    doc = json_error(invoke("sessions", "--json"), 1)
    assert doc == {
        "error": f"$CLAUDE_CONFIG_DIR {missing} does not exist",
        "code": "not-a-root",
        "root": str(missing),
        "source": "$CLAUDE_CONFIG_DIR",
        "problem": "missing",
    }


def test_the_default_root_is_named_with_what_to_do(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    line = one_line(invoke("sessions"), 1)
    assert line == (
        f"sessiontree: the default root {isolated_home / '.claude'} does not exist "
        "(pass --root DIR or set $CLAUDE_CONFIG_DIR)\n"
    )


def test_a_transcript_named_by_its_path_needs_no_root(basic: Path, tmp_path: Path) -> None:
    """CLAUDE_CONFIG_DIR names a folder that does not exist (conftest)."""
    path = transcript(basic)
    doc = json.loads(invoke("show", str(path), "--json").stdout)
    assert doc["sessionId"] == BASIC
    line = one_line(invoke("--root", str(tmp_path / "nope"), "show", BASIC[:8]), 1)
    assert "does not exist" in line


def test_demo_makes_a_root_that_does_not_exist_but_not_in_a_file(tmp_path: Path) -> None:
    root = tmp_path / "new"
    result = invoke("--root", str(root), "demo", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["root"] == str(root)
    a_file = tmp_path / "file"
    a_file.write_text("")
    line = one_line(invoke("--root", str(a_file), "demo"), 1)
    assert line == f"sessiontree: --root {a_file} is a file, not a folder\n"


def test_demo_makes_the_root_claude_config_dir_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "from-env"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    result = invoke("demo", "--json")
    assert result.exit_code == 0, result.output
    assert (root / "projects").is_dir()


# --root after the command ---------------------------------------------------------------


def test_root_after_the_command_is_the_same_as_before_it(basic: Path) -> None:
    before = invoke("--root", str(basic), "sessions", "--all", "--json")
    after = invoke("sessions", "--all", "--root", str(basic), "--json")
    between = invoke("sessions", "--root", str(basic), "--all", "--json")
    assert before.exit_code == after.exit_code == between.exit_code == 0, after.output
    assert json.loads(before.stdout) == json.loads(after.stdout) == json.loads(between.stdout)
    assert json.loads(after.stdout)[0]["sessionId"] == BASIC


def test_root_given_twice_the_later_one_wins(basic: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    good = invoke("--root", str(missing), "context", BASIC[:8], "--root", str(basic), "--json")
    assert good.exit_code == 0, good.output
    bad = invoke("--root", str(basic), "context", BASIC[:8], "--root", str(missing))
    assert one_line(bad, 1) == f"sessiontree: --root {missing} does not exist\n"


def test_root_after_a_writing_command(rewind: Path) -> None:
    result = invoke("rewind", REWIND, "--to", "1", "--dry-run", "--json", "--root", str(rewind))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["dryRun"] is True


def test_help_shows_root_once() -> None:
    top = invoke("--help").stdout
    assert top.count("--root") == 1
    assert "--root" not in invoke("sessions", "--help").stdout
    assert "\n  --root " in invoke("demo", "--help").stdout  # demo's own, shown


# conflicting options --------------------------------------------------------------------


CONFLICTS = [
    (["cleanup", "--dry-run", "--yes"], "--dry-run and --yes"),
    (["rewind", REWIND, "--to", "1", "--dry-run", "--yes"], "--dry-run and --yes"),
    (["rewind", REWIND, "--to", "1", "--code", "--conversation"], "--conversation and --code"),
    (["rewind", REWIND, "--to", "1", "--both", "--code"], "--code and --both"),
    (
        ["rewind", REWIND, "--to", "1", "--both", "--code", "--conversation"],
        "--conversation, --code and --both",
    ),
    (["restore", REWIND, "--to", "1", "--dry-run", "--yes"], "--dry-run and --yes"),
    (["restore", REWIND, "--to", "1", "--undo"], "--to and --undo"),
    (
        ["summarize", REWIND, "--at", "1", "--from", "--up-to", "--summary", "S"],
        "--from and --up-to",
    ),
    (["compact", REWIND, "--summary", "S", "--summary-file", "-"], "--summary and --summary-file"),
    (["compact", REWIND, "--summary", "", "--summary-file", "-"], "--summary and --summary-file"),
    (["sessions", "--all", "--project", "."], "--all and --project"),
    (["search", "x", "--all", "--project", "."], "--all and --project"),
    (["usage", "--all", "--project", "."], "--all and --project"),
]


@pytest.mark.parametrize(("args", "names"), CONFLICTS, ids=lambda v: " ".join(v)[:40])
def test_conflicting_options_are_refused_alike(rewind: Path, args: list[str], names: str) -> None:
    before = transcript(rewind).read_bytes()
    result = invoke("--root", str(rewind), *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"sessiontree: {names} do not go together (see ")
    assert len(result.stderr.splitlines()) == 1
    assert transcript(rewind).read_bytes() == before
    doc = json_error(invoke("--root", str(rewind), *args, "--json"), 2)
    assert doc == {"error": f"{names} do not go together", "code": "usage"}


def test_one_of_each_group_still_works(tmp_path: Path) -> None:
    # the project laid out here: --code plans a restore into it, which needs the folder
    root, _project = lay_out("02-rewind-both", tmp_path)
    for mode in ("--conversation", "--code", "--both"):
        result = invoke("--root", str(root), "rewind", REWIND, "--to", "1", mode, "--dry-run")
        assert result.exit_code == 0, (mode, result.output)
    result = invoke("--root", str(root), "rewind", REWIND, "--to", "1", "--dry-run", "--json")
    assert json.loads(result.stdout)["code"] is None  # --conversation is the default
