"""The demo store: every session reads back with the structure it is meant to show."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.demo import DemoSummary, demo_session_ids, write_demo
from sessiontree.model.records import NULL_UUID
from sessiontree.storage.layout import Layout, backup_name, paste_hash, subagents_dir

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> DemoSummary:
    return write_demo(Layout(tmp_path_factory.mktemp("demo") / "root"), now=NOW)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def roles_alternate(messages: list[dict[str, Any]]) -> bool:
    roles = [m["role"] for m in messages if m["role"] != "system"]
    return all(a != b for a, b in itertools.pairwise(roles))


def test_sessions_ids_and_projects(built: DemoSummary) -> None:
    assert tuple(s.session_id for s in built.sessions) == demo_session_ids()
    assert len({s.cwd for s in built.sessions}) >= 3
    layout = Layout(built.root)
    assert len(list(layout.iter_project_dirs())) >= 3
    for session in built.sessions:
        assert session.path == layout.transcript_path(session.cwd, session.session_id)
        assert Path(session.cwd).is_dir() and Path(session.cwd).parent == built.projects_dir
        transcript = Transcript.open(session.path)
        assert transcript.problems == [], session.role
        ids = {r["sessionId"] for r in records(session.path) if "sessionId" in r}
        assert ids == {session.session_id}


def test_rewind_session(built: DemoSummary) -> None:
    session = built.session("rewinds")
    transcript = Transcript.open(session.path)
    points = transcript.fork_points()
    assert len(points) >= 2
    assert max(len(p.children) for p in points) >= 3  # one prompt re-sent three times
    assert len(transcript.off_path_leaves()) >= 3
    lines = records(session.path)
    chain = [r for r in lines if "uuid" in r]
    prompts = [r for r in chain if r["type"] == "user" and r.get("origin") == {"kind": "human"}]
    newest = prompts[-1]
    assert newest["uuid"] in transcript.active_path
    # the last-prompt names the record written last (the turn end); the leaf is the
    # reply above it, and the turn end still closes the path
    last_prompt = [r for r in lines if r["type"] == "last-prompt"][-1]
    assert last_prompt["leafUuid"] == chain[-1]["uuid"]
    assert chain[-1]["type"] == "system" and chain[-1]["subtype"] == "turn_duration"
    assert transcript.leaf == chain[-1]["parentUuid"] == chain[-2]["uuid"]
    assert chain[-2]["type"] == "assistant"
    assert transcript.active_path[-2:] == [transcript.leaf, chain[-1]["uuid"]]
    # every prompt sent after a rewind is followed by the all-zero marker
    for point in points:
        for child in point.children[1:]:
            at = next(i for i, r in enumerate(lines) if r.get("uuid") == child)
            assert lines[at + 1] == {
                "type": "last-prompt",
                "leafUuid": NULL_UUID,
                "explicit": True,
                "sessionId": session.session_id,
            }
    context = transcript.context()
    assert context[0]["role"] == "user"
    # the demo's model (Sonnet 4.5) takes no mid-conversation system message: the
    # session's system-role attachment texts lead the first prompt, as the client sends them
    *reminders, first = context[0]["content"]
    assert first == {"type": "text", "text": prompts[0]["message"]["content"]}
    assert reminders and all(b["text"].startswith("<system-reminder>") for b in reminders)
    assert roles_alternate(context)
    assert "Add a --json option, but keep plain text" in json.dumps(context)
    assert "kelvin" not in json.dumps(context)  # a rewound branch is not sent


def test_checkpoints_have_real_backups(built: DemoSummary) -> None:
    layout = Layout(built.root)
    entries = 0
    for session in built.sessions:
        for record in records(session.path):
            if record["type"] == "file-history-snapshot":
                backups = record["snapshot"]["trackedFileBackups"].items()
            elif record["type"] == "file-history-delta":
                backups = [(record["trackingPath"], record["backup"])]
            else:
                continue
            for tracking_path, backup in backups:
                name = backup["backupFileName"]
                if name is None:
                    continue
                entries += 1
                # trackingPath is relative to the cwd; realParentDir is the file's own folder
                absolute = f"{session.cwd}/{tracking_path}"
                assert backup["realParentDir"] == str(Path(absolute).parent)
                assert name == backup_name(absolute, backup["version"])
                assert layout.backup_path(session.session_id, name).is_file()
    assert entries > 10
    assert built.backups == sum(1 for _ in layout.file_history_dir.glob("*/*"))


def test_v1_is_the_content_before_the_first_edit(built: DemoSummary) -> None:
    session = built.session("rewinds")
    layout = Layout(built.root)
    lines = records(session.path)
    deltas = {r["trackingPath"]: r["backup"] for r in lines if r["type"] == "file-history-delta"}
    assert deltas["tests/test_units.py"]["backupFileName"] is None  # created by Write
    first_edit = next(
        r["toolUseResult"]
        for r in lines
        if isinstance(r.get("toolUseResult"), dict)
        and r["toolUseResult"].get("filePath", "").endswith("/weather.py")
        and "originalFile" in r["toolUseResult"]
    )
    v1 = layout.backup_path(session.session_id, deltas["weather.py"]["backupFileName"])
    assert v1.read_text() == first_edit["originalFile"]
    final = (Path(session.cwd) / "weather.py").read_text()
    assert "--json" in final and "kelvin" not in final and "imperial" not in final
    assert "--units" in (Path(session.cwd) / "README.md").read_text()


def test_compacted_session(built: DemoSummary) -> None:
    session = built.session("compacted")
    transcript = Transcript.open(session.path)
    boundary = transcript.record(transcript.active_path[0])
    assert boundary is not None and boundary.subtype == "compact_boundary"
    assert boundary.get("parentUuid") is None and boundary.get("logicalParentUuid")
    segment = boundary.get("compactMetadata")["preservedSegment"]
    assert segment["headUuid"] in transcript.active_path
    assert transcript.active_path[1] == segment["anchorUuid"]
    context = transcript.context()
    assert context[0]["role"] == "user"
    assert context[0]["content"].startswith("This session is being continued")
    assert "Done so far: `search`" in context[0]["content"]
    assert roles_alternate(context)
    before = [u for u in transcript.tree.nodes if u not in transcript.active_path]
    assert len(before) > 10  # the summarized history stays on disk


def test_fork_shares_uuids_and_context(built: DemoSummary) -> None:
    parent_session, fork_session = built.session("subagent-and-fork"), built.session("fork")
    parent, fork = Transcript.open(parent_session.path), Transcript.open(fork_session.path)
    copies = [r for r in records(fork_session.path) if "forkedFrom" in r]
    assert [r["uuid"] for r in copies] == parent.active_path
    for copy in copies:
        assert copy["forkedFrom"] == {
            "sessionId": parent_session.session_id,
            "messageUuid": copy["uuid"],
        }
    assert fork.active_path[: len(parent.active_path)] == parent.active_path
    assert len(fork.active_path) > len(parent.active_path)
    parent_context = parent.context()
    assert fork.context()[: len(parent_context)] == parent_context
    titles = [r for r in records(fork_session.path) if r["type"] == "custom-title"]
    assert titles[-1]["customTitle"] == f"{parent_session.title} (Branch)"
    assert fork_session.title == titles[-1]["customTitle"]


def test_subagent_sidechain(built: DemoSummary) -> None:
    session = built.session("subagent-and-fork")
    (sidechain,) = subagents_dir(session.path).glob("agent-*.jsonl")
    agent_id = sidechain.stem.removeprefix("agent-")
    lines = records(sidechain)
    assert lines[0]["parentUuid"] is None
    assert all(r["isSidechain"] is True and r["agentId"] == agent_id for r in lines)
    assert sidechain.with_suffix(".meta.json").is_file()
    main = records(session.path)
    launched = [
        r
        for r in main
        if isinstance(r.get("toolUseResult"), dict)
        and r["toolUseResult"].get("agentId") == agent_id
    ]
    assert len(launched) == 1
    notified = [r for r in main if r.get("origin", {}).get("kind") == "task-notification"]
    assert len(notified) == 1 and agent_id in notified[0]["message"]["content"]
    context = Transcript.open(session.path).context()
    assert roles_alternate(context)


def test_history_and_pastes(built: DemoSummary) -> None:
    layout = Layout(built.root)
    history = records(layout.history_path)
    assert [h["timestamp"] for h in history] == sorted(h["timestamp"] for h in history)
    assert {h["sessionId"] for h in history} == {s.session_id for s in built.sessions}
    assert {"/rewind", "/compact", "/branch"} <= {h["display"] for h in history}
    pasted = [p for h in history for p in h["pastedContents"].values()]
    large = [p for p in pasted if "contentHash" in p]
    inline = [p for p in pasted if "content" in p]
    assert large and inline
    for paste in large:
        path = layout.paste_path(paste["contentHash"])
        assert path.is_file() and paste_hash(path.read_text()) == paste["contentHash"]
    entry = next(h for h in history if h["pastedContents"].get("1", {}).get("contentHash"))
    assert "[Pasted text #1 +" in entry["display"]
    session = built.session("paste")
    first_prompt = next(r for r in records(session.path) if r.get("type") == "user")
    assert '<pasted_content id="' in first_prompt["message"]["content"]
    assert json.loads(layout.settings_path.read_text())["cleanupPeriodDays"] == 30


def test_deterministic_and_rerunnable(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    first = write_demo(layout, now=NOW)
    contents = {s.path: s.path.read_bytes() for s in first.sessions}
    history = layout.history_path.read_bytes()
    again = write_demo(layout, now=NOW)
    assert again == first
    assert {s.path: s.path.read_bytes() for s in again.sessions} == contents
    assert layout.history_path.read_bytes() == history
    later = write_demo(layout, now=datetime(2027, 1, 1, tzinfo=UTC))
    assert [s.session_id for s in later.sessions] == [s.session_id for s in first.sessions]
    assert len(records(layout.history_path)) == len(history.splitlines())


def test_cli_demo(tmp_path: Path) -> None:
    root = tmp_path / "root"
    result = CliRunner().invoke(cli, ["--root", str(root), "demo"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    layout = Layout(root)
    for session_id in demo_session_ids():
        assert session_id in result.output
        assert any(
            t.stem == session_id
            for d in layout.iter_project_dirs()
            for t in layout.iter_transcripts(d)
        )
    assert f"sessiontree --root {root} tree " in result.output
    result = CliRunner().invoke(cli, ["demo", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["root"] == str(root)
    assert [s["sessionId"] for s in document["sessions"]] == list(demo_session_ids())
    assert all(Path(s["path"]).is_file() and s["title"] for s in document["sessions"])


def test_cli_demo_refuses_a_real_root(tmp_path: Path) -> None:
    root = tmp_path / "real"
    real = root / "projects" / "-home-me-work" / "0f31836f-46f1-45f6-85ba-7878a822a884.jsonl"
    real.parent.mkdir(parents=True)
    real.write_text('{"type":"user"}\n')
    result = CliRunner().invoke(cli, ["--root", str(root), "demo"])
    assert result.exit_code == 1
    assert "already holds 1 Claude Code session" in result.output
    assert "--force" in result.output
    assert list(root.rglob("*.jsonl")) == [real]
    result = CliRunner().invoke(cli, ["--root", str(root), "demo", "--force"])
    assert result.exit_code == 0, result.output
    assert real.read_text() == '{"type":"user"}\n'


def test_force_keeps_the_users_history(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "real")
    layout.root.mkdir()
    mine = b'{"display":"mine","pastedContents":{},"timestamp":1,"project":"/x","sessionId":"s"}\n'
    layout.history_path.write_bytes(mine)
    write_demo(layout, now=NOW)
    assert layout.history_path.read_bytes().startswith(mine)


def test_summarized_session_and_an_old_one(built: DemoSummary) -> None:
    paste = Transcript.open(built.session("paste").path)
    messages = paste.context()
    assert "This session is being continued" in json.dumps(messages[0])
    sent = json.dumps(messages)
    assert "Also accept this timestamp format" in sent  # kept verbatim after the summary
    assert "The parser crashes on this log" not in sent  # summarized
    assert roles_alternate(messages)
    from sessiontree.cleanup import plan_cleanup

    plan = plan_cleanup(Layout(built.root), now=NOW.timestamp())
    assert {i.session_id for i in plan.delete} == {built.session("old").session_id}
