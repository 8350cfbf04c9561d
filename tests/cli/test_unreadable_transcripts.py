"""A transcript that cannot be read (a folder named ``<id>.jsonl``, a dangling link, a
file gone between the listing and the read) is skipped with one line on stderr naming
it, by every command that reads many; the rest is read and printed as usual, exit 0
(``doctor`` lists it among its problems instead). ``--json`` stays one document.

Tests run as root, so a file without read permission is no test here: it takes the same
path as a file gone meanwhile (an ``OSError`` on open)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.catalog.index import list_sessions
from sessiontree.catalog.usage import iter_usage_files
from sessiontree.catalog.usage_files import read_responses
from sessiontree.cli.main import cli
from sessiontree.doctor import check_store
from sessiontree.model.records import Problem
from sessiontree.storage.layout import Layout
from tests.conftest import FIXTURES, copy_writable

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"
FOLDER = "11111111-1111-4111-8111-111111111111.jsonl"
LINK = "22222222-2222-4222-8222-222222222222.jsonl"


@pytest.fixture
def unreadable(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    """01-basic with, beside its transcript, a folder and a dangling link named as
    transcripts, and a subagent transcript that is a folder."""
    root: Path = fixture_root("01-basic")
    project = next(root.glob("projects/*"))
    (project / FOLDER).mkdir()
    (project / LINK).symlink_to(project / "nowhere.jsonl")
    (project / BASIC / "subagents" / "agent-a1b2c3.jsonl").mkdir(parents=True)
    return root


def _paths(root: Path) -> dict[str, str]:
    project = next(root.glob("projects/*"))
    return {
        "folder": str(project / FOLDER),
        "link": str(project / LINK),
        "subagent": str(project / BASIC / "subagents" / "agent-a1b2c3.jsonl"),
    }


def _run(root: Path, *args: str) -> tuple[int, str, list[str]]:
    result = CliRunner().invoke(cli, ["--root", str(root), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr.splitlines()


def _skipped(lines: list[str]) -> dict[str, str]:
    """path -> why, of each ``sessiontree: skipped PATH: WHY`` line (and no other)."""
    found = {}
    for line in lines:
        assert line.startswith("sessiontree: skipped "), line
        path, why = line.removeprefix("sessiontree: skipped ").split(": ", 1)
        found[path] = why
    return found


@pytest.mark.parametrize(
    ("args", "subagents"),
    [
        (("sessions", "--all"), False),
        (("search", "p1", "--all"), True),
        (("search", "p1", "--all", "--no-index"), False),
        (("usage", "--all"), True),
        (("usage", "--all", "--by", "session"), True),
        (("secrets",), True),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else str(value),
)
def test_each_unreadable_file_is_one_line_and_the_rest_is_read(
    unreadable: Path, args: tuple[str, ...], subagents: bool
) -> None:
    paths = _paths(unreadable)
    code, out, err = _run(unreadable, *args)
    assert code == 0
    skipped = _skipped(err)
    wanted = {paths["folder"], paths["link"]} | ({paths["subagent"]} if subagents else set())
    assert set(skipped) == wanted
    assert "folder" in skipped[paths["folder"]] and "link" in skipped[paths["link"]]
    assert BASIC[:8] in out or "2026-11-29" in out or "0 secret(s)" in out  # the rest read
    code, out, err = _run(unreadable, *args, "--json")
    assert code == 0 and set(_skipped(err)) == wanted
    assert json.loads(out) or args == ("secrets",)  # one document, the rest's rows in it


def test_the_same_output_as_without_them(unreadable: Path, tmp_path: Path) -> None:
    clean = copy_writable(FIXTURES / "01-basic" / "claude-home", tmp_path / "clean")
    for args in (("usage", "--all", "--json"), ("search", "p1", "--all", "--json")):
        _, out, _ = _run(unreadable, *args)
        _, clean_out, _ = _run(clean, *args)
        assert out.replace(str(unreadable), "ROOT") == clean_out.replace(str(clean), "ROOT")


def test_doctor_lists_them_as_problems(unreadable: Path) -> None:
    paths = _paths(unreadable)
    code, out, err = _run(unreadable, "doctor", "--json")
    assert code == 1 and err == []
    problems = json.loads(out)["problems"]
    assert {p["path"] for p in problems if p["kind"] == "unreadable"} == {
        paths["folder"],
        paths["link"],
    }
    code, out, err = _run(unreadable, "doctor")
    assert code == 1 and f"unreadable {paths['folder']}: " in out


def test_a_file_gone_since_it_was_listed_is_reported(unreadable: Path) -> None:
    layout = Layout(unreadable)
    files = list(iter_usage_files(layout))
    gone = files[0]
    gone.rename(gone.with_suffix(".moved"))
    problems: list[Problem] = []
    assert read_responses(files, problems=problems) == {}
    assert [(p.kind, p.path) for p in problems] == [("unreadable", str(gone))]
    assert "gone" in problems[0].detail


def test_the_library_reports_what_it_skips(unreadable: Path) -> None:
    layout = Layout(unreadable)
    paths = _paths(unreadable)
    problems: list[Problem] = []
    rows = list_sessions(layout, problems=problems)
    assert [r.sessionId for r in rows] == [BASIC]
    assert {p.path for p in problems} == {paths["folder"], paths["link"]}
    found = check_store(layout).problems
    assert {p.path for p in found if p.kind == "unreadable"} == {paths["folder"], paths["link"]}
