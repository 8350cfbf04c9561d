"""The real client refuses exactly the files sessiontree says are not sessions, and
resumes (-r) or continues (-c) the ones sessiontree lists (tests/not_sessions.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessiontree.catalog.index import list_sessions
from sessiontree.catalog.resolve import latest_session
from sessiontree.storage.layout import Layout
from tests.interop.realclient import run_probe
from tests.not_sessions import CASES, CLEARED, CWD, SID, SIDECHAIN_LAST, SIDECHAIN_LEAF

pytestmark = pytest.mark.interop

OLDER = "99999999-2222-4333-8444-555555555555"


def _root(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    """A config root whose project is a fresh folder under tmp_path: (root, cwd)."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    layout = Layout(tmp_path / "root")
    project = layout.project_dir(str(cwd))
    project.mkdir(parents=True)
    for sid, text in files.items():
        (project / f"{sid}.jsonl").write_text(text.replace(CWD, str(cwd)))
    return layout.root, cwd


TREE_CASES = {
    "sidechain-leaf": (SIDECHAIN_LEAF, "sidechain-leaf"),
    "sidechain-written-last": (SIDECHAIN_LAST, None),
    "rewound-to-empty": (CLEARED, None),
}
ALL_CASES = {**CASES, **TREE_CASES}


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_resume_refuses_what_is_not_a_session(claude: Path, tmp_path: Path, name: str) -> None:
    text, reason = ALL_CASES[name]
    root, cwd = _root(tmp_path, {SID: text})
    listed = [r.sessionId for r in list_sessions(Layout(root))]
    run = run_probe(claude, root, ["-r", SID], cwd)
    if reason is None:
        assert listed == [SID]
        assert run.returncode == 0 and run.messages is not None, run.stderr
    else:
        assert listed == []
        assert run.returncode == 1
        assert run.stderr.strip() == f"No conversation found with session ID: {SID}"
        assert run.messages is None


@pytest.mark.parametrize("name", ["empty", "only-summary", "only-sidechain", "metadata-mix"])
def test_continue_passes_over_what_is_not_a_session(
    claude: Path, tmp_path: Path, name: str
) -> None:
    """-c with a non-session written last: the older session, except a 0-byte file,
    which the client continues (its conversation starting empty)."""
    older = CASES["summary-then-conversation"][0].replace(SID, OLDER)
    root, cwd = _root(tmp_path, {OLDER: older, SID: CASES[name][0]})
    project = Layout(root).project_dir(str(cwd))
    moment = (project / f"{OLDER}.jsonl").stat().st_mtime - 3600
    os.utime(project / f"{OLDER}.jsonl", (moment, moment))
    ours = latest_session(Layout(root), str(cwd))
    run = run_probe(claude, root, ["-c"], cwd)
    assert run.returncode == 0 and run.messages is not None, run.stderr
    continued_older = "hello there" in str(run.messages)
    assert ours is not None
    assert ours.stem == (SID if name == "empty" else OLDER)
    assert continued_older == (ours.stem == OLDER)
