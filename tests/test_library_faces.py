"""The library as complete as the CLI: doctor as data, plans before writes, paths as
``str`` or ``os.PathLike``, no environment read and nothing written outside the root."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path, PurePath

import pytest
from click.testing import CliRunner

import sessiontree
from sessiontree import (
    Layout,
    Session,
    StoreCheck,
    Transcript,
    check_store,
    check_transcript,
    iter_history,
    latest_session,
    list_sessions,
    resolve_session,
    resume_session,
)
from sessiontree.catalog.index import read_session_info
from sessiontree.cli.main import cli
from sessiontree.model.records import SessionId, is_session_id
from sessiontree.storage.layout import is_session_file

SID = "0f31836f-46f1-45f6-85ba-7878a822a884"


class OtherPath(os.PathLike[str]):
    """An ``os.PathLike`` that is not a ``pathlib.Path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)

    def __fspath__(self) -> str:
        return self.path


def _session(layout: Layout, cwd: str = "/work/alpha", prompt: str = "fix the bug") -> Session:
    session = Session.create(layout, cwd)
    session.append_prompt(prompt)
    session.append_response([{"type": "text", "text": "ok"}])
    session.end_turn()
    return session


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()


# -- doctor --------------------------------------------------------------------------------


def test_check_transcript_is_empty_for_a_sound_session(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = _session(layout)
    assert check_transcript(session.path) == []
    assert check_transcript(str(session.path)) == []
    assert check_transcript(Transcript.open(session.path), layout=layout) == []


def test_check_transcript_finds_what_doctor_reports(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = _session(layout)
    with session.path.open("ab") as handle:
        handle.write(b'{"type":"user","uuid":"u-9","parentUuid":"gone"')  # torn, no newline
    kinds = [p.kind for p in check_transcript(session.path)]
    assert kinds == ["torn-line"]
    empty = session.path.with_name(f"{SID}.jsonl")
    empty.write_text('{"type":"summary","summary":"x","leafUuid":"y"}\n')
    [problem] = check_transcript(empty)
    assert problem.kind == "not-a-session" and problem.line is None
    assert problem.as_json() == {
        "kind": "not-a-session",
        "path": str(empty),
        "line": None,
        "detail": problem.detail,
    }


def test_check_store_is_what_the_doctor_command_prints(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    _session(layout)
    broken = _session(layout, "/work/beta", "second")
    with broken.path.open("ab") as handle:
        handle.write(b"{not json}\n")
    layout.history_path.write_text(
        json.dumps(
            {"display": "[Pasted text #1]", "pastedContents": {"1": {"contentHash": "ab" * 8}}}
        )
        + "\n"
    )
    seen: list[tuple[int, int]] = []
    found = check_store(layout, on_progress=lambda done, total: seen.append((done, total)))
    assert isinstance(found, StoreCheck) and not found.ok
    assert len(found.transcripts) == 2 and seen == [(1, 2), (2, 2)]
    assert [p.kind for p in found.problems] == ["bad-json", "missing-paste"]
    result = CliRunner().invoke(cli, ["--root", str(layout.root), "doctor", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.output) == found.as_json()
    assert set(found.as_json()) == {"ok", "problems"}


def test_doctor_library_is_exported() -> None:
    assert sessiontree.check_store is check_store
    assert sessiontree.check_transcript is check_transcript


# -- plans ---------------------------------------------------------------------------------


def test_plan_compact_writes_nothing_and_compact_writes_the_plan(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = _session(layout)
    before = session.path.read_bytes()
    counter = iter(range(1000))
    session.new_id = lambda: f"id-{next(counter)}"
    plan = session.plan_compact("the summary")
    assert session.path.read_bytes() == before
    assert [r.get("type") for r in plan.records] == ["system", "user", "last-prompt"]
    counter = iter(range(1000))  # the same ids again: compact writes exactly the plan
    summary_uuid = session.compact("the summary")
    assert summary_uuid == plan.summary_uuid == session.tip
    written = session.path.read_bytes()[len(before) :].splitlines()
    assert [json.loads(line)["type"] for line in written] == ["system", "user", "last-prompt"]


def test_plan_clear_writes_nothing(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = _session(layout)
    plan = session.plan_clear()
    assert not plan.path.exists() and plan.path.parent == session.path.parent
    assert plan.records[-1]["uuid"] == plan.leaf_uuid
    fresh = session.clear()
    assert fresh.path.is_file() and fresh.tip is not None
    assert is_session_id(fresh.session_id)


# -- the environment -----------------------------------------------------------------------


def test_the_library_writes_no_cache_unless_given_one(tmp_path: Path, isolated_home: Path) -> None:
    layout = Layout(tmp_path / "root")
    made = _session(layout, prompt="profile the parser")
    made.set_title("Parser work")
    outside = _files(isolated_home)
    assert list_sessions(layout)[0].sessionId == made.session_id
    assert resolve_session(layout, "Parser work") == made.path
    assert resume_session(layout, "profile") == made.path
    assert Session.resume(layout, "Parser work").session_id == made.session_id
    assert _files(isolated_home) == outside  # no ~/.cache/sessiontree as a side effect
    cache = tmp_path / "cache" / "index.msgpack"
    assert Session.resume(layout, "Parser work", cache_file=cache).session_id == made.session_id
    assert cache.is_file()


def test_the_cli_keeps_its_cache_where_its_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = Layout(tmp_path / "root")
    _session(layout)
    monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(tmp_path / "cli-cache"))
    result = CliRunner().invoke(cli, ["--root", str(layout.root), "sessions", "--all", "--json"])
    assert result.exit_code == 0, result.output
    assert len(_files(tmp_path / "cli-cache")) == 1


def test_no_environment_is_read_outside_the_cli() -> None:
    """Outside ``cli/`` no code reads ``os.environ``, expands ``~`` or asks ``Path.home()``:
    ``resolve_root(explicit, env)`` (storage/layout.py) is the one function given an
    environment, by its caller. (Docstrings may show what a caller passes.)"""
    src = Path(sessiontree.__file__).parent
    for path in src.rglob("*.py"):
        if src / "cli" in path.parents or path == src / "storage" / "layout.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("environ", "getenv", "expanduser", "home"), (
                    path,
                    node.lineno,
                )


def test_the_old_env_argument_is_ignored_with_a_warning(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    made = _session(layout, prompt="profile the parser")
    with pytest.warns(DeprecationWarning, match="cache_file"):
        assert resolve_session(layout, made.session_id, {"HOME": str(tmp_path)}) == made.path


def test_session_history_layout_and_its_old_name(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    made = _session(layout)
    assert Session.open(made.path, history_layout=layout).history_layout == layout
    with pytest.warns(DeprecationWarning, match="history_layout"):
        assert Session.open(made.path, history=layout).history_layout == layout


# -- paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [str, Path, OtherPath])
def test_public_functions_take_str_and_pathlike(tmp_path: Path, kind: type) -> None:
    root = tmp_path / "root"
    layout = Layout(kind(root))
    assert layout == Layout(root) and isinstance(layout.root, Path)
    session = Session.create(layout, kind(tmp_path / "work"), record_history=True)
    session.append_prompt("hello")
    session.end_turn()
    path = kind(session.path)
    assert Transcript.open(path).session_id == session.session_id
    assert Session.open(path).tip == session.tip
    assert resolve_session(layout, path) == session.path
    assert resume_session(layout, path) == session.path
    assert latest_session(layout, kind(tmp_path / "work")) == session.path
    project_dir = kind(session.path.parent)
    assert [r.sessionId for r in list_sessions(layout, project_dirs=[project_dir])] == [
        session.session_id
    ]
    assert check_transcript(path) == []
    assert [e.display for e in iter_history(layout, project=kind(tmp_path / "work"))] == ["hello"]
    assert read_session_info(path).sessionId == session.session_id


def test_layout_refuses_what_is_no_path() -> None:
    with pytest.raises(TypeError):
        Layout(3)  # type: ignore[arg-type]
    assert Layout(PurePath("/r")).projects_dir == Path("/r/projects")


# -- one session-id rule -------------------------------------------------------------------


def test_one_session_id_rule() -> None:
    assert is_session_id(SID) and is_session_id(SID.upper())
    for bad in (SID + "\n", SID[:-1], "../" + SID[3:], "", "agent-a4ca7529859c158c2"):
        assert not is_session_id(bad)
    assert is_session_file(f"{SID}.jsonl") and not is_session_file(f"{SID}\n.jsonl")
    assert not is_session_file(SID) and not is_session_file(f"{SID}.json")
    typed: SessionId = SessionId(SID)
    assert typed == SID
