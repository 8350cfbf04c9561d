"""Files that are not sessions: empty, only summaries, snapshots, metadata or sidechain
records. The client answers "No conversation found" to them (tests/interop checks the
same files); sessiontree leaves them out of listings, -c and -r, and says why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.catalog.index import (
    list_sessions,
    read_no_conversation,
    read_session_info,
    transcript_no_conversation,
)
from sessiontree.catalog.resolve import latest_session, resume_session
from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import NotASession
from sessiontree.model.conversation import find_no_conversation, format_no_conversation
from sessiontree.session.session import Session
from sessiontree.storage.jsonl import parse_line, scan_transcript
from sessiontree.storage.layout import Layout
from tests.conftest import FIXTURES, WILD, needs_wild
from tests.not_sessions import (
    CASES,
    CLEARED,
    CWD,
    SID,
    SIDECHAIN_LAST,
    SIDECHAIN_LEAF,
    SNAPSHOT,
    SUMMARY,
    assistant,
    lines,
    user,
)

OTHER = "99999999-2222-4333-8444-555555555555"


def _store(tmp_path: Path, files: dict[str, str]) -> tuple[Layout, Path]:
    """A config root with one project holding ``files`` (session id -> text)."""
    layout = Layout(tmp_path / "root")
    project = layout.project_dir(CWD)
    project.mkdir(parents=True)
    for sid, text in files.items():
        (project / f"{sid}.jsonl").write_text(text)
    return layout, project


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_kind_of_file(tmp_path: Path, name: str) -> None:
    text, expected = CASES[name]
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(text)
    from sessiontree.catalog.index import scan_no_conversation

    assert scan_no_conversation(scan_transcript(path)) == expected
    assert read_no_conversation(path) == expected
    assert read_session_info(path).noConversation == expected


def test_predicate_is_pure_over_records() -> None:
    records = [parse_line(json.dumps(r).encode()) for r in (SUMMARY, SNAPSHOT)]
    assert find_no_conversation(records) == "only-metadata"
    assert find_no_conversation([]) == "empty"
    assert find_no_conversation([], unreadable_lines=True) == "not-json"
    side = [parse_line(json.dumps(user("x", isSidechain=True)).encode())]
    assert find_no_conversation(side) == "only-sidechain"
    assert find_no_conversation(side, subagent=True) is None  # a subagent's own transcript
    assert format_no_conversation("only-summaries") == "only summary records"


def test_subagent_transcript_is_its_own_conversation(tmp_path: Path) -> None:
    text, _ = CASES["only-sidechain"]
    path = tmp_path / "agent-1234abcd.jsonl"
    path.write_text(text)
    assert read_no_conversation(path) is None


def test_conversation_after_a_long_head_is_found(tmp_path: Path) -> None:
    """A head read (up to 4 MiB) that sees no conversation is not the last word."""
    big = {**SUMMARY, "summary": "x" * 1000}
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(lines(*[big] * 5000) + lines(user("late prompt"), assistant("hi")))
    assert path.stat().st_size > 4 * 1024 * 1024
    assert read_no_conversation(path) is None
    assert read_session_info(path).noConversation is None
    path.write_text(lines(*[big] * 5000))
    assert read_no_conversation(path) == "only-summaries"


def test_listing_leaves_them_out_unless_asked(tmp_path: Path) -> None:
    files = {
        f"{i:08d}-2222-4333-8444-555555555555": text
        for i, (text, _) in enumerate(CASES[name] for name in sorted(CASES))
    }
    layout, _ = _store(tmp_path, files)
    expected = {
        f"{i:08d}-2222-4333-8444-555555555555": CASES[name][1]
        for i, name in enumerate(sorted(CASES))
    }
    listed = {r.sessionId for r in list_sessions(layout)}
    assert listed == {sid for sid, reason in expected.items() if reason is None}
    every = {r.sessionId: r.noConversation for r in list_sessions(layout, include_empty=True)}
    assert every == expected


def test_cached_row_becomes_a_session_when_the_file_grows(tmp_path: Path) -> None:
    layout, project = _store(tmp_path, {SID: lines(SUMMARY)})
    cache = tmp_path / "cache.msgpack"
    assert list_sessions(layout, cache_file=cache) == []
    with (project / f"{SID}.jsonl").open("a") as handle:
        handle.write(lines(user("hello there"), assistant("hi")))
    rows = list_sessions(layout, cache_file=cache)
    assert [(r.sessionId, r.firstPrompt, r.noConversation) for r in rows] == [
        (SID, "hello there", None)
    ]


def test_resume_refuses_them_as_the_client_does(tmp_path: Path) -> None:
    layout, _ = _store(tmp_path, {SID: lines(SUMMARY)})
    with pytest.raises(NotASession) as info:
        resume_session(layout, SID)
    assert info.value.reason == "only-summaries"
    assert "holds no conversation: only summary records" in str(info.value)
    with pytest.raises(NotASession):
        Session.resume(layout, SID[:8])


def _aged(path: Path, seconds: int) -> None:
    moment = path.stat().st_mtime - seconds
    os.utime(path, (moment, moment))


@pytest.mark.parametrize(
    "name", ["only-summary", "only-file-history", "only-sidechain", "blank-lines"]
)
def test_continue_passes_over_them(tmp_path: Path, name: str) -> None:
    layout, project = _store(tmp_path, {OTHER: CASES["only-prompt"][0], SID: CASES[name][0]})
    _aged(project / f"{OTHER}.jsonl", 3600)
    assert latest_session(layout, CWD) == project / f"{OTHER}.jsonl"
    assert Session.continue_latest(layout, CWD).session_id == OTHER


def test_continue_takes_a_zero_byte_file_as_the_client_does(tmp_path: Path) -> None:
    """The client's -c continues a newest 0-byte file (a conversation starting empty)."""
    layout, project = _store(tmp_path, {OTHER: CASES["only-prompt"][0], SID: ""})
    _aged(project / f"{OTHER}.jsonl", 3600)
    assert latest_session(layout, CWD) == project / f"{SID}.jsonl"


def _run(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--root", str(root), *args], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def test_cli_sessions_include_empty(tmp_path: Path) -> None:
    layout, _ = _store(tmp_path, {OTHER: CASES["only-prompt"][0], SID: lines(SUMMARY)})
    code, out, _ = _run(layout.root, "sessions", "--all", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["sessionId"] for r in rows] == [OTHER]
    assert "noConversation" not in rows[0]  # the contract's keys, unchanged
    code, out, _ = _run(layout.root, "sessions", "--all", "--include-empty", "--json")
    assert {r["sessionId"]: r["noConversation"] for r in json.loads(out)} == {
        OTHER: None,
        SID: "only-summaries",
    }
    code, out, _ = _run(layout.root, "sessions", "--all", "--include-empty")
    assert "(not a session: only-summaries)" in out
    code, out, _ = _run(layout.root, "sessions", "--all", "--search", "hello")
    assert "hello there" in out and "not shown" not in out
    code, out, _ = _run(layout.root, "sessions", "--all")
    assert "1 file(s) holding no conversation not shown" in out
    code, out, _ = _run(layout.root, "sessions", "--help")
    assert "--include-empty" in out


@pytest.mark.parametrize("command", ["context", "show"])
@pytest.mark.parametrize("as_json", [False, True])
def test_cli_context_and_show_say_why(tmp_path: Path, command: str, as_json: bool) -> None:
    layout, project = _store(tmp_path, {SID: lines(SUMMARY)})
    code, out, err = _run(layout.root, command, SID, *(["--json"] if as_json else []))
    assert code == 1
    path = project / f"{SID}.jsonl"
    said = (
        f"{path} holds no conversation: only summary records "
        "(the client answers 'No conversation found')"
    )
    if as_json:  # the error as JSON, on stdout (docs/CLI.md, "Errors")
        assert err == ""
        assert json.loads(out) == {
            "error": said,
            "code": "not-a-session",
            "path": str(path),
            "reason": "only-summaries",
        }
    else:
        assert out == ""
        assert err == f"sessiontree: {said}\n"


def test_cli_doctor_reports_them(tmp_path: Path) -> None:
    layout, _ = _store(tmp_path, {OTHER: CASES["only-prompt"][0], SID: ""})
    code, out, _ = _run(layout.root, "doctor", "--json")
    assert code == 1
    problems = json.loads(out)["problems"]
    assert [(p["kind"], Path(p["path"]).stem) for p in problems] == [("not-a-session", SID)]
    assert "(empty)" in problems[0]["detail"]
    code, out, _ = _run(layout.root, "doctor", SID)
    assert code == 1
    assert "not-a-session" in out and "the file is empty" in out
    code, _, _ = _run(layout.root, "doctor", OTHER)
    assert code == 0


def test_real_client_fixtures_are_all_sessions() -> None:
    for path in sorted(FIXTURES.glob("*/claude-home/projects/*/*.jsonl")):
        assert read_no_conversation(path) is None, path


@needs_wild
@pytest.mark.parametrize("scenario", ["ccl-1-sample", "dk-1-sample"])
def test_wild_files_the_client_refused_are_not_sessions(scenario: str) -> None:
    """truth/ holds resume-<sid>.json for exactly the files the client resumed."""
    home = WILD / scenario / "claude-home"
    resumed = {p.stem.removeprefix("resume-") for p in (WILD / scenario / "truth").glob("*")}
    rows = list_sessions(Layout(home), include_empty=True)
    assert {r.sessionId for r in rows if r.noConversation is None} == resumed
    assert {r.sessionId for r in list_sessions(Layout(home))} == resumed
    assert not any(r.sessionId.startswith("agent-") for r in rows)  # subagents, not sessions


@pytest.mark.parametrize(
    ("text", "expected"),
    [(SIDECHAIN_LEAF, "sidechain-leaf"), (SIDECHAIN_LAST, None), (CLEARED, None)],
)
def test_a_leaf_on_a_sidechain_finds_no_conversation(
    tmp_path: Path, text: str, expected: str | None
) -> None:
    layout, project = _store(tmp_path, {SID: text})
    path = project / f"{SID}.jsonl"
    assert transcript_no_conversation(Transcript.open(path)) == expected
    assert read_session_info(path).noConversation == expected  # the bookmark is in the tail
    assert [r.sessionId for r in list_sessions(layout)] == ([] if expected else [SID])
    code, _, err = _run(layout.root, "context", SID)
    assert code == (1 if expected else 0)
    if expected:
        assert "ends on a sidechain (subagent) record" in err
        with pytest.raises(NotASession):
            Session.resume(layout, SID)
    else:
        assert Session.resume(layout, SID).session_id == SID


def test_a_title_names_a_file_without_conversation_so_it_can_say_why(tmp_path: Path) -> None:
    layout, _ = _store(tmp_path, {SID: CASES["only-custom-title"][0]})
    code, _, err = _run(layout.root, "show", "My title")
    assert code == 1
    assert "holds no conversation: only metadata records" in err
    with pytest.raises(NotASession):
        resume_session(layout, "My title")
