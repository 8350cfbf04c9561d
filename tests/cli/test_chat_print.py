"""``sessiontree chat -p``, end to end: a real process, the official SDK talking to the
scripted Messages API stand-in the real client is run against (``mock_api.py``, through
``ANTHROPIC_BASE_URL``), the real tools on real files, then the other commands reading
what it wrote (``restore`` finds its checkpoints)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.agent.loop_harness import MockAPI, mock_api, needs_mock_api

pytestmark = needs_mock_api

MAIN = "from sessiontree.cli.main import main; main()"


@dataclass
class Chat:
    """A project folder, a config root, and the stand-in to run ``sessiontree`` with."""

    cwd: Path
    root: Path
    api: MockAPI

    def env(self, *, key: bool = True) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env["CLAUDE_CONFIG_DIR"] = str(self.root)
        if key:
            env |= {"ANTHROPIC_API_KEY": "sk-ant-mock", "ANTHROPIC_BASE_URL": self.api.url}
        return env

    def run(self, *args: str, key: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", MAIN, *args],
            cwd=self.cwd,
            env=self.env(key=key),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def chat(self, *args: str) -> dict[str, Any]:
        """``chat ARGS --json``, which must succeed; its document."""
        done = self.run("chat", *args, "--json", "--dangerously-skip-permissions")
        assert done.returncode == 0, done.stderr
        doc: dict[str, Any] = json.loads(done.stdout)
        return doc

    def records(self, doc: dict[str, Any]) -> list[dict[str, Any]]:
        text = Path(doc["path"]).read_text()
        return [json.loads(line) for line in text.splitlines() if line]


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Chat]:
    cwd = tmp_path / "work"
    cwd.mkdir()
    with mock_api(tmp_path) as api:
        yield Chat(cwd, tmp_path / "claude", api)


def kinds(records: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in records:
        kind = r["type"]
        if kind in ("user", "assistant"):
            content = r["message"]["content"]
            kind += ":" + ("text" if isinstance(content, str) else content[0]["type"])
        elif kind == "system":
            kind += ":" + r.get("subtype", "")
        out.append(kind)
    return out


def test_a_plain_turn(chat: Chat) -> None:
    done = chat.run("chat", "-p", "hello there")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Echo: hello there\n"
    assert done.stderr == ""  # a key is set: no notice
    doc = chat.chat("-p", "hello again")
    assert doc["result"] == "Echo: hello again" and doc["provider"] == "anthropic"
    assert doc["usage"]["inputTokens"] == 120 and doc["responses"] == 1
    records = chat.records(doc)
    assert kinds(records) == [
        "file-history-snapshot",
        "user:text",
        "assistant:text",
        "system:turn_duration",
        "last-prompt",
        "ai-title",
    ]
    assert records[1]["entrypoint"] == "sdk-cli" and records[1]["cwd"] == str(chat.cwd)
    assert next(r for r in records if r["type"] == "ai-title")["aiTitle"] == "Mock session title"
    sent = [r for r in chat.api.requests() if r["kind"] == "main"]
    assert sent[-1]["model"] == "claude-opus-5-5" and sent[-1]["stream"] is True
    # the live registry entry is gone after a clean exit; the shell snapshot stays
    assert not list((chat.root / "sessions").glob("*.json"))
    assert not (chat.root / "session-env" / doc["sessionId"]).exists()


def test_the_model_named_is_asked_recorded_and_priced(chat: Chat) -> None:
    doc = chat.chat("-p", "hello there", "--model", "claude-sonnet-4-5")
    assert doc["model"] == "claude-sonnet-4-5"
    assert {r["model"] for r in chat.api.requests()} == {"claude-sonnet-4-5"}
    (answer,) = [r for r in chat.records(doc) if r["type"] == "assistant"]
    assert answer["message"]["model"] == "claude-sonnet-4-5"
    usage = doc["usage"]  # the list price of the model asked ($3 in, $15 out per million)
    expected = (usage["inputTokens"] * 3 + usage["outputTokens"] * 15) / 1_000_000
    assert usage["costUSD"] == pytest.approx(expected) and expected > 0


def test_write_then_edit_checkpointed_and_restored(chat: Chat) -> None:
    target = chat.cwd / "notes.md"
    first = chat.chat("-p", "[[WRITE notes.md|alpha\\nbeta]]")
    assert first["result"] == "Done with 1 steps." and first["toolCalls"] == 1
    assert target.read_text() == "alpha\nbeta"
    second = chat.chat("-c", "-p", "[[EDIT notes.md|beta|gamma]]")
    assert second["sessionId"] == first["sessionId"]
    assert target.read_text() == "alpha\ngamma"
    records = chat.records(second)
    assert kinds(records).count("file-history-snapshot") == 2
    assert kinds(records).count("file-history-delta") >= 1
    # `restore` finds the checkpoints: back to before the Edit, then before the Write
    sid = first["sessionId"]
    done = chat.run("restore", sid, "--to", "2", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "alpha\nbeta"
    done = chat.run("restore", sid, "--to", "1", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    listed = chat.run("checkpoints", sid, "--json")
    assert listed.returncode == 0 and "notes.md" in listed.stdout


def test_parallel_calls(chat: Chat) -> None:
    for name in ("a", "b", "c"):
        (chat.cwd / f"{name}.txt").write_text(f"file {name}\n")
    doc = chat.chat("-p", "[[PAR READ a.txt ;; READ b.txt ;; READ c.txt]]")
    assert doc["toolCalls"] == 3 and doc["responses"] == 2
    assert doc["result"] == "Done with 1 steps."
    records = chat.records(doc)
    calls = {
        b["id"]: r["uuid"]
        for r in records
        if r["type"] == "assistant"
        for b in r["message"]["content"]
        if b["type"] == "tool_use"
    }
    results = [r for r in records if r["type"] == "user" and "toolUseResult" in r]
    assert len(calls) == 3 and len(results) == 3
    for r in results:  # each result on its own call
        assert r["parentUuid"] == calls[r["message"]["content"][0]["tool_use_id"]]
    # the request after them sent all three results in one user message
    main = [r for r in chat.api.requests() if r["kind"] == "main"]
    last = main[-1]["messages"][-1]
    assert last["role"] == "user"
    assert sorted(
        b["tool_use_id"] for b in last["content"] if b["type"] == "tool_result"
    ) == sorted(calls)


def test_what_chat_sends_is_the_context_sessiontree_computes(chat: Chat) -> None:
    (chat.cwd / "a.txt").write_text("one\n")
    doc = chat.chat("-p", "first [[READ a.txt]]")
    chat.chat("-c", "-p", "[[PAR READ a.txt ;; EDIT a.txt|one|two]]")
    body = [r for r in chat.api.requests() if r["kind"] == "main"][-1]["body"]
    context = chat.run("context", doc["sessionId"], "--json")
    assert context.returncode == 0, context.stderr
    ours = json.loads(context.stdout)
    ours_messages = ours["messages"] if isinstance(ours, dict) else ours
    sent = json.loads(
        json.dumps(body["messages"]).replace(', "cache_control": {"type": "ephemeral"}', "")
    )
    # the last request is the context, and the context adds only its answer
    assert ours_messages[: len(sent)] == sent
    assert ours_messages[len(sent) :] == [
        {"role": "assistant", "content": [{"type": "text", "text": "Done with 1 steps."}]}
    ]


def test_a_big_bash_output_is_saved_beside_the_transcript(chat: Chat) -> None:
    doc = chat.chat("-p", "[[BIG 40000]]")
    (result,) = [r for r in chat.records(doc) if "toolUseResult" in r]
    text = result["message"]["content"][0]["content"]
    assert text.startswith("<persisted-output>")
    saved = Path(result["toolUseResult"]["persistedOutputPath"])
    assert saved.parent == Path(doc["path"]).with_suffix("") / "tool-results"
    assert saved.stat().st_size > 30_000  # 800 lines of 46 bytes
    # and what the next request sent is the preview, not the whole output
    last = [r for r in chat.api.requests() if r["kind"] == "main"][-1]["body"]["messages"][-1]
    assert len(json.dumps(last)) < 10_000


def write_hook(chat: Chat) -> None:
    command = (
        "echo 'export HOOKED=yes' >> \"$CLAUDE_ENV_FILE\"; echo hook-said-hello; "
        'cat > "$CLAUDE_PROJECT_DIR/stdin.json"'
    )
    settings = {
        "hooks": {
            "SessionStart": [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]
        }
    }
    chat.root.mkdir(parents=True, exist_ok=True)
    (chat.root / "settings.json").write_text(json.dumps(settings))


def test_session_start_hooks_run_and_reach_the_model(chat: Chat) -> None:
    write_hook(chat)
    doc = chat.chat("-p", "hi")
    records = chat.records(doc)
    first = records[0]
    assert first["type"] == "attachment" and first["parentUuid"] is None
    assert first["attachment"]["type"] == "hook_success"
    assert first["attachment"]["hookName"] == "SessionStart:startup"
    assert first["attachment"]["content"] == "hook-said-hello"
    prompt = next(r for r in records if r["type"] == "user")
    assert prompt["parentUuid"] == first["uuid"]
    stdin = json.loads((chat.cwd / "stdin.json").read_text())
    assert stdin == {
        "session_id": doc["sessionId"],
        "transcript_path": doc["path"],
        "cwd": str(chat.cwd),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    body = next(r for r in chat.api.requests() if r["kind"] == "main")["body"]
    assert {
        "role": "system",
        "content": [{"type": "text", "text": "SessionStart:startup hook success: hook-said-hello"}],
    } in [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in body["messages"]
        if m["role"] == "system"
    ]
    again = chat.chat("-c", "-p", "more")
    assert json.loads((chat.cwd / "stdin.json").read_text())["source"] == "resume"
    assert again["sessionId"] == doc["sessionId"]


def test_resume_and_fork_session(chat: Chat) -> None:
    first = chat.chat("-p", "one")
    again = chat.chat("-r", first["sessionId"][:8], "-p", "two")
    assert again["sessionId"] == first["sessionId"]
    fork = chat.chat("-r", first["sessionId"], "--fork-session", "-p", "three")
    assert fork["sessionId"] != first["sessionId"]
    fork_records = chat.records(fork)
    assert any(r.get("forkedFrom") for r in fork_records)
    texts = json.dumps(fork_records)
    assert "one" in texts and "two" in texts and "three" in texts
    assert "three" not in Path(first["path"]).read_text()


def test_offline_without_a_key(chat: Chat) -> None:
    done = chat.run(
        "chat", "-p", "hi [[WRITE x.txt|offline]]", "--dangerously-skip-permissions", key=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Done with 1 steps.\n"
    assert "ANTHROPIC_API_KEY is not set: using the offline provider" in done.stderr
    assert (chat.cwd / "x.txt").read_text() == "offline"
    assert chat.api.requests() == []


@pytest.mark.parametrize(
    ("args", "code", "line"),
    [
        (["-p", ""], 2, "the prompt is empty"),
        (["--json"], 2, "--json goes with -p"),
        (["-c", "-r", "x", "-p", "hi"], 2, "-c and -r do not go together"),
        (["--fork-session", "-p", "hi"], 2, "--fork-session goes with -c or -r"),
        (["-r", "-p", "hi"], 2, "-r needs a SESSION with -p"),
        (["-c", "-p", "hi"], 1, "sessiontree: no session to continue in matches"),
        (["-r", "nothing-like-it", "-p", "hi"], 1, "sessiontree: no session matches"),
        (["--provider", "anthropic", "-p", "hi"], 1, "needs ANTHROPIC_API_KEY"),
    ],
)
def test_bad_input_is_one_clear_line(chat: Chat, args: list[str], code: int, line: str) -> None:
    key = "--provider" not in args
    (chat.root / "projects").mkdir(parents=True)
    done = chat.run("chat", *args, key=key)
    assert done.returncode == code, done.stderr
    said = done.stdout if "--json" in args else done.stderr  # --json: the error as JSON
    assert line in said
    assert "Traceback" not in done.stderr


def test_no_api_is_one_clear_line(chat: Chat, tmp_path: Path) -> None:
    env = chat.env() | {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "chat", "-p", "hi"],
        cwd=chat.cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("sessiontree: the model API failed")
    assert "Traceback" not in done.stderr


def test_the_live_entry_says_busy_during_the_turn(chat: Chat) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            MAIN,
            "chat",
            "-p",
            "[[BASH sleep 3]]",
            "--dangerously-skip-permissions",
        ],
        cwd=chat.cwd,
        env=chat.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    entries: list[dict[str, Any]] = []
    sessions = chat.root / "sessions"
    while time.monotonic() < deadline and not any(e.get("status") == "busy" for e in entries):
        time.sleep(0.05)
        if sessions.is_dir():
            try:
                entries = [json.loads(p.read_text()) for p in sessions.glob("*.json")]
            except (OSError, ValueError):
                entries = []  # read while it was replaced
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    (entry,) = entries
    assert entry["status"] == "busy"
    assert entry["pid"] == process.pid and entry["kind"] == "interactive"
    assert entry["entrypoint"] == "sdk-cli" and entry["cwd"] == str(chat.cwd)
    assert not list((chat.root / "sessions").glob("*.json"))  # removed at the end
    assert list((chat.root / "shell-snapshots").glob("snapshot-*"))


def test_ctrl_c_mid_turn_is_recorded(chat: Chat) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            MAIN,
            "chat",
            "-p",
            "[[BASH sleep 2]] [[BASH echo after]]",
            "--dangerously-skip-permissions",
            "--json",
        ],
        cwd=chat.cwd,
        env=chat.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(r.get("kind") == "main" for r in chat.api.requests()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(1.0)  # the first Bash call is running
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    doc = json.loads(stdout)
    assert doc["interrupted"] is True
    records = [json.loads(x) for x in Path(doc["path"]).read_text().splitlines()]
    last = [r for r in records if r["type"] == "user"][-1]
    assert last["message"]["content"] == [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}
    ]
    assert "echo after" not in json.dumps([r for r in records if "toolUseResult" in r])
