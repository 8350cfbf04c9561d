"""Continue (``-c``) and resume (``-r``): which session each one picks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.catalog.resolve import latest_session, resume_session
from sessiontree.cli.main import cli
from sessiontree.errors import Ambiguous, NotFound
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout


def _session(layout: Layout, cwd: str, prompt: str, mtime: int) -> Session:
    session = Session.create(layout, cwd)
    session.append_prompt(prompt)
    session.append_response([{"type": "text", "text": "ok"}])
    session.end_turn()
    os.utime(session.path, (mtime, mtime))
    return session


@pytest.fixture
def store(tmp_path: Path) -> tuple[Layout, list[Session]]:
    layout = Layout(tmp_path / "root")
    made = [
        _session(layout, "/work/alpha", "fix the parser bug", 1_000),
        _session(layout, "/work/alpha", "write the release notes", 2_000),
        _session(layout, "/work/beta", "profile the parser", 3_000),
    ]
    return layout, made


def test_continue_takes_the_newest_session_of_the_directory(
    store: tuple[Layout, list[Session]],
) -> None:
    layout, made = store
    assert latest_session(layout, "/work/alpha") == made[1].path
    assert latest_session(layout, "/work/beta") == made[2].path
    assert latest_session(layout, "/work/gamma") is None
    continued = Session.continue_latest(layout, "/work/alpha")
    assert continued.session_id == made[1].session_id
    assert continued.tip == made[1].tip  # new records hang on the end of its path
    with pytest.raises(NotFound):
        Session.continue_latest(layout, "/work/gamma")


def test_continue_finds_a_long_directory_by_its_recorded_cwd(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    long_cwd = "/work/" + "deep/" * 60 + "project"
    made = _session(layout, long_cwd, "long path", 1_000)
    other = long_cwd[:-1] + "X"  # the same 200-character folder prefix, another directory
    assert latest_session(layout, long_cwd) == made.path
    assert latest_session(layout, other) is None


def test_resume_by_id_prefix_title_or_search(store: tuple[Layout, list[Session]]) -> None:
    layout, made = store
    made[0].set_title("Parser work")
    cache = layout.root.parent / "cache" / "index.msgpack"
    assert resume_session(layout, made[2].session_id, cache_file=cache) == made[2].path
    assert resume_session(layout, made[2].session_id[:8], cache_file=cache) == made[2].path
    assert resume_session(layout, "Parser work", cache_file=cache) == made[0].path
    assert resume_session(layout, "release notes", cache_file=cache) == made[1].path  # first prompt
    assert resume_session(layout, "/work/beta", cache_file=cache) == made[2].path  # cwd
    with pytest.raises(Ambiguous) as ambiguous:
        resume_session(layout, "parser", cache_file=cache)  # a title and a first prompt
    assert set(ambiguous.value.candidates) == {made[0].session_id, made[2].session_id}
    with pytest.raises(NotFound):
        resume_session(layout, "nothing like this", cache_file=cache)


def test_sessions_search_lists_what_resume_would_find(
    store: tuple[Layout, list[Session]],
) -> None:
    layout, made = store
    result = CliRunner().invoke(
        cli, ["--root", str(layout.root), "sessions", "--all", "--search", "PARSER", "--json"]
    )
    assert result.exit_code == 0, result.output
    ids = [row["sessionId"] for row in json.loads(result.output)]
    assert ids == [made[2].session_id, made[0].session_id]  # newest first
