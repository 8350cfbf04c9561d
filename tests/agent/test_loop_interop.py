"""``chat`` against the real client, both run on the same directive scenarios against the
same scripted Messages API (``mock_api.py``):

* the real client resumes every session ``chat`` wrote (``claude -p -r``) and sends the
  context sessiontree computes for it (``sessiontree context --json``);
* ``chat -r`` resumes a session the real client wrote, and sends its context;
* the conversations the two write for one scenario have the same shape: the same user and
  assistant records, block by block, each hung where the other hangs its own (parallel
  results on their own calls), and the project's files end the same. What ``chat`` adds on
  purpose is named: file checkpoints, the turn end and an AI title, which the client's
  ``-p`` does not write; what the client adds and ``chat`` does not (its attachments,
  request bookkeeping) is left out of the comparison.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree.model.context import NO_RESPONSE
from tests.agent.loop_harness import MockAPI, mock_api, mock_api_reporting, needs_mock_api
from tests.agent.test_provider_anthropic import server
from tests.interop.realclient import (
    ClientUnavailable,
    client_env,
    install_client,
    normalize,
    resume,
)

pytestmark = [pytest.mark.interop, needs_mock_api]

MAIN = "from sessiontree.cli.main import main; main()"

SCENARIOS = {
    "plain": ["hello", "and again"],
    "big-output": ["[[BIG 40000]]", "[[BASH echo small]]"],
    "write-edit": ["[[WRITE notes.md|alpha\\nbeta]] [[EDIT notes.md|beta|gamma]]"],
    "parallel": [
        "[[WRITE a.txt|one]]",
        "[[PAR READ a.txt ;; READ notes.txt ;; BASH echo hi]]",
        "[[PAR EDIT a.txt|one|two ;; BASH cat a.txt]]",
    ],
}

#: What an Edit's result says of the file after ``-c``: the client rebuilds what the model
#: has seen of each file from the transcript (a whole Read, a Write; an Edit forgets it),
#: and notes an Edit of a file changed on disk since it was read (``staleRecovered``).
FILE_STATE_SCENARIOS = {
    "write-then-edit": ["[[WRITE a.txt|one]]", "[[EDIT a.txt|one|two]]"],
    "edit-forgets": [
        "[[READ notes.txt]]",
        "[[EDIT notes.txt|some|many]]",
        "[[EDIT notes.txt|many|few]]",
    ],
    "changed-since-read": [
        "[[READ notes.txt]]",
        "[[BASH echo new > notes.txt]]",
        "[[EDIT notes.txt|new|old]]",
    ],
    "changed-in-one-turn": [
        "[[READ notes.txt]] [[BASH echo new > notes.txt]] [[EDIT notes.txt|new|old]]"
    ],
    "read-again": [
        "[[READ notes.txt]]",
        "[[BASH echo new > notes.txt]]",
        "[[READ notes.txt]]",
        "[[EDIT notes.txt|new|old]]",
    ],
}


@pytest.fixture(scope="module")
def claude() -> Path:
    try:
        return install_client()
    except ClientUnavailable as exc:
        pytest.skip(f"REAL CLIENT UNAVAILABLE: {exc}")


def chat_env(root: Path, api: MockAPI) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return env | {
        "CLAUDE_CONFIG_DIR": str(root),
        "ANTHROPIC_API_KEY": "sk-ant-mock",
        "ANTHROPIC_BASE_URL": api.url,
    }


def run_chat(root: Path, cwd: Path, api: MockAPI, args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "chat", *args, "--json", "--dangerously-skip-permissions"],
        cwd=cwd,
        env=chat_env(root, api),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def chat_scenario(
    base: Path, prompts: list[str], *, settings: dict[str, Any] | None = None
) -> tuple[Path, Path, dict[str, Any]]:
    """The scenario run through ``chat -p`` (then ``-c``): ``(root, cwd, last --json)``;
    ``settings``: the config root's ``settings.json``."""
    root, cwd = base / "chat-root", base / "chat-work"
    cwd.mkdir(parents=True)
    if settings is not None:
        root.mkdir(parents=True, exist_ok=True)
        (root / "settings.json").write_text(json.dumps(settings))
    (cwd / "notes.txt").write_text("some notes\n")
    with mock_api(base / "chat-api") as api:
        doc: dict[str, Any] = {}
        for n, prompt in enumerate(prompts):
            doc = run_chat(root, cwd, api, ["-p", prompt] if n == 0 else ["-c", "-p", prompt])
    return root, cwd, doc


def client_scenario(
    claude: Path, base: Path, prompts: list[str], *, settings: dict[str, Any] | None = None
) -> tuple[Path, Path, Path]:
    """The scenario run through the real client's ``-p`` (then ``-c -p``): ``(home,
    cwd, transcript)``; ``settings``: its ``~/.claude/settings.json``."""
    home, cwd = base / "client-home", base / "client-work"
    home.mkdir(parents=True)
    cwd.mkdir(parents=True)
    if settings is not None:
        (home / ".claude").mkdir()
        (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    (cwd / "notes.txt").write_text("some notes\n")
    with mock_api(base / "client-api") as api:
        for n, prompt in enumerate(prompts):
            args = ["-p", prompt] if n == 0 else ["-c", "-p", prompt]
            done = subprocess.run(
                [str(claude), *args, "--dangerously-skip-permissions"],
                cwd=cwd,
                env=client_env(home, api.port),
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
            assert done.returncode == 0, done.stderr
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    return home, cwd, transcript


def conversation_shape(path: Path) -> list[tuple[str, tuple[str, ...], int | None]]:
    """The user and assistant records in file order: role, block kinds (tool calls by
    tool name), and the position of the record it hangs on (attachments and other rows
    between them passed over to the conversation record above them)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_uuid = {r["uuid"]: r for r in rows if r.get("uuid")}
    kept = [r for r in rows if r.get("type") in ("user", "assistant") and not r.get("isMeta")]
    position = {r["uuid"]: n for n, r in enumerate(kept)}
    shape = []
    for record in kept:
        content = record["message"]["content"]
        blocks = [{"type": "text"}] if isinstance(content, str) else content
        kinds = tuple(
            f"tool_use:{b['name']}" if b["type"] == "tool_use" else b["type"] for b in blocks
        )
        parent = record.get("parentUuid")
        while parent is not None and parent not in position:
            parent = by_uuid.get(parent, {}).get("parentUuid")
        shape.append((record["type"], kinds, position.get(parent) if parent else None))
    return _results_by_call(shape)


def _results_by_call(
    shape: list[tuple[str, tuple[str, ...], int | None]],
) -> list[tuple[str, tuple[str, ...], int | None]]:
    """Parallel calls' results, written in the order they finish (which no run decides),
    put in the order of their calls."""
    out: list[tuple[str, tuple[str, ...], int | None]] = []
    run: list[tuple[str, tuple[str, ...], int | None]] = []
    for row in [*shape, ("end", (), None)]:
        if row[1] == ("tool_result",):
            run.append(row)
            continue
        out.extend(sorted(run, key=lambda r: -1 if r[2] is None else r[2]))
        run = []
        if row[0] != "end":
            out.append(row)
    return out


def tool_results(path: Path, cwd: Path) -> list[str]:
    """Each tool result record's content, ``is_error`` and ``toolUseResult``, the project
    folder and saved-output paths masked, sorted (parallel results finish in any order).

    Known difference: a spilled output's ``persistedOutputSize`` (the client counts the
    output before its trailing newline is cut; the tools give the engine the cut one)."""
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if "toolUseResult" not in record:
            continue
        block = record["message"]["content"][0]
        result = record["toolUseResult"]
        if isinstance(result, dict):
            result = {k: v for k, v in result.items() if k != "persistedOutputSize"}
        text = json.dumps(
            [block.get("content"), block.get("is_error"), result], sort_keys=True
        ).replace(str(cwd), "<cwd>")
        out.append(re.sub(r"/[^\s\"]+/tool-results/[^\s\"]+", "<saved>", text))
    return sorted(out)


def context_json(root: Path, session_id: str, cwd: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "--root", str(root), "context", session_id, "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    doc = json.loads(done.stdout)
    messages: list[dict[str, Any]] = doc["messages"] if isinstance(doc, dict) else doc
    return messages


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_real_client_resumes_what_chat_wrote_with_its_context(
    claude: Path, tmp_path: Path, scenario: str
) -> None:
    root, cwd, doc = chat_scenario(tmp_path, SCENARIOS[scenario])
    ours = context_json(root, doc["sessionId"], cwd)
    theirs = resume(claude, root, doc["sessionId"], cwd)
    assert normalize(theirs) == normalize(ours)
    assert "Tool result missing" not in json.dumps(theirs)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_chat_and_the_client_write_the_same_conversation(
    claude: Path, tmp_path: Path, scenario: str
) -> None:
    prompts = SCENARIOS[scenario]
    _root, chat_cwd, doc = chat_scenario(tmp_path, prompts)
    _home, client_cwd, transcript = client_scenario(claude, tmp_path, prompts)
    assert conversation_shape(Path(doc["path"])) == conversation_shape(transcript)
    for name in ("notes.md", "a.txt", "notes.txt"):  # the files end the same
        ours, theirs = chat_cwd / name, client_cwd / name
        assert ours.exists() == theirs.exists(), name
        if ours.exists():
            assert ours.read_bytes() == theirs.read_bytes(), name
    # every tool result the same, for the model and in toolUseResult (paths aside)
    assert tool_results(Path(doc["path"]), chat_cwd) == tool_results(transcript, client_cwd)
    # what chat writes beyond the client's -p, on purpose
    rows = [json.loads(x) for x in Path(doc["path"]).read_text().splitlines()]
    kinds = {r["type"] for r in rows} | {r.get("subtype") for r in rows}
    assert {"file-history-snapshot", "turn_duration", "ai-title"} <= kinds


@pytest.mark.parametrize("scenario", sorted(FILE_STATE_SCENARIOS))
def test_an_edit_after_resume_knows_what_the_session_read_as_the_client_does(
    claude: Path, tmp_path: Path, scenario: str
) -> None:
    prompts = FILE_STATE_SCENARIOS[scenario]
    _root, chat_cwd, doc = chat_scenario(tmp_path, prompts)
    _home, client_cwd, transcript = client_scenario(claude, tmp_path, prompts)
    ours, theirs = tool_results(Path(doc["path"]), chat_cwd), tool_results(transcript, client_cwd)
    assert ours == theirs
    assert (chat_cwd / "notes.txt").exists() == (client_cwd / "notes.txt").exists()


def test_a_command_runs_after_what_the_session_start_hooks_exported_as_in_the_client(
    claude: Path, tmp_path: Path
) -> None:
    exports = (
        'echo "export HOOKED=from-the-hook" >> "$CLAUDE_ENV_FILE"; '
        'echo "PLAIN=plain; echo sourced" >> "$CLAUDE_ENV_FILE"'
    )
    hook = {"type": "command", "command": exports}
    settings = {"hooks": {"SessionStart": [{"matcher": "", "hooks": [hook]}]}}
    prompts = ["[[BASH echo v=$HOOKED p=$PLAIN]]", "[[BASH echo again v=$HOOKED]]"]
    _root, chat_cwd, doc = chat_scenario(tmp_path, prompts, settings=settings)
    _home, client_cwd, transcript = client_scenario(claude, tmp_path, prompts, settings=settings)
    ours = tool_results(Path(doc["path"]), chat_cwd)
    assert ours == tool_results(transcript, client_cwd)
    assert "sourced\\nv=from-the-hook p=plain" in ours[1]  # (-c: the resume hook's)


def _compactions(path: Path) -> list[tuple[str, list[str], list[str], list[str], bool]]:
    """Each compaction of a transcript: its trigger, its metadata's keys, the summary's
    extra keys, the kinds of the records it kept verbatim, and whether the summary says
    some were kept."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_uuid = {r["uuid"]: r for r in rows if r.get("uuid")}
    out = []
    for at, row in enumerate(rows):
        if row.get("subtype") != "compact_boundary":
            continue
        metadata = row["compactMetadata"]
        summary = next(r for r in rows[at:] if r.get("isCompactSummary"))
        listed = metadata.get("preservedMessages", {}).get("uuids", [])
        kept = [by_uuid[u] for u in listed]
        kinds = [
            "result" if "toolUseResult" in r else r["type"]
            for r in kept
            if r["type"] in ("user", "assistant")
        ]
        keys = ("summarizedTurnPromptUuids", "isVisibleInTranscriptOnly")
        summary_keys = sorted(k for k in keys if k in summary)
        says_kept = "The messages after this summary" in summary["message"]["content"]
        out.append((metadata["trigger"], sorted(metadata), summary_keys, kinds, says_kept))
    return out


def test_chat_compacts_by_itself_as_the_client_does(claude: Path, tmp_path: Path) -> None:
    """Both against a stand-in whose every response reports 199,000 tokens read: the
    client (its auto-compact window set to 200k, chat's default) compacts before the
    request after a tool's result and after a new prompt; chat the same way."""
    script = mock_api_reporting(tmp_path / "mock", 199_000)
    prompts = ["hello", "[[BASH echo 1]] [[BASH echo 2]]", "third"]
    # a SessionStart hook for compactions: both run it after each, its output recorded
    hook = {"type": "command", "command": "echo after-compacting"}
    settings = {"hooks": {"SessionStart": [{"matcher": "compact", "hooks": [hook]}]}}
    root, cwd = tmp_path / "chat-root", tmp_path / "chat-work"
    cwd.mkdir(parents=True)
    root.mkdir()
    (root / "settings.json").write_text(json.dumps(settings))
    with mock_api(tmp_path / "chat-api", script=script) as api:
        for n, prompt in enumerate(prompts):
            doc = run_chat(root, cwd, api, ["-p", prompt] if n == 0 else ["-c", "-p", prompt])
        ours_sent = [r["kind"] for r in api.requests() if r["kind"] != "title"]
    home, client_cwd = tmp_path / "client-home", tmp_path / "client-work"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    client_cwd.mkdir()
    with mock_api(tmp_path / "client-api", script=script) as api:
        for n, prompt in enumerate(prompts):
            args = ["-p", prompt] if n == 0 else ["-c", "-p", prompt]
            env = client_env(home, api.port) | {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000"}
            done = subprocess.run(
                [str(claude), *args, "--dangerously-skip-permissions"],
                cwd=client_cwd, env=env, capture_output=True, text=True, timeout=180,
                check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
        theirs_sent = [r["kind"] for r in api.requests() if r["kind"] != "title"]
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    ours = _compactions(Path(doc["path"]))
    assert ours == _compactions(transcript)
    assert [trigger for trigger, *_ in ours] == ["auto", "auto"]
    assert ours_sent == theirs_sent  # main, main, compact, main, compact, main
    assert conversation_shape(Path(doc["path"])) == conversation_shape(transcript)
    hooked = [
        [json.loads(x).get("attachment", {}).get("hookName") for x in p.read_text().splitlines()]
        for p in (Path(doc["path"]), transcript)
    ]
    ours_hooks, theirs_hooks = ([h for h in names if h] for names in hooked)
    assert ours_hooks == theirs_hooks == ["SessionStart:compact"] * 2
    # and the real client resumes what chat wrote with the context sessiontree computes
    ours_context = context_json(root, doc["sessionId"], cwd)
    assert "SessionStart:compact hook success: after-compacting" in json.dumps(ours_context)
    assert normalize(resume(claude, root, doc["sessionId"], cwd)) == normalize(ours_context)


def test_a_read_before_a_compaction_is_not_known_after_it_as_in_the_client(
    claude: Path, tmp_path: Path
) -> None:
    """Against the stand-in reporting a full context: every prompt after the first
    compacts first; the Edit (resumed) does not count the Read the summary replaced."""
    script = mock_api_reporting(tmp_path / "mock", 199_000)
    prompts = ["[[READ notes.txt]]", "again", "third", "[[EDIT notes.txt|some|many]]"]
    root, cwd = tmp_path / "chat-root", tmp_path / "chat-work"
    cwd.mkdir(parents=True)
    (cwd / "notes.txt").write_text("some notes\n")
    with mock_api(tmp_path / "chat-api", script=script) as api:
        for n, prompt in enumerate(prompts):
            doc = run_chat(root, cwd, api, ["-p", prompt] if n == 0 else ["-c", "-p", prompt])
    home, client_cwd = tmp_path / "client-home", tmp_path / "client-work"
    home.mkdir()
    client_cwd.mkdir()
    (client_cwd / "notes.txt").write_text("some notes\n")
    with mock_api(tmp_path / "client-api", script=script) as api:
        for n, prompt in enumerate(prompts):
            args = ["-p", prompt] if n == 0 else ["-c", "-p", prompt]
            env = client_env(home, api.port) | {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000"}
            done = subprocess.run(
                [str(claude), *args, "--dangerously-skip-permissions"],
                cwd=client_cwd, env=env, capture_output=True, text=True, timeout=180,
                check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    ours = tool_results(Path(doc["path"]), cwd)
    assert ours == tool_results(transcript, client_cwd)
    assert any("contentNotInModelContext" in result for result in ours)
    # a compaction before each of the last three prompts' requests, keeping the last
    # response and the prompt; then one after the Edit's result that keeps nothing (the
    # turn had compacted already)
    compactions = _compactions(Path(doc["path"]))
    assert compactions == _compactions(transcript)
    assert [(c[3], c[4]) for c in compactions] == [
        (["assistant", "user"], True),
        (["assistant", "user"], True),
        (["assistant", "user"], True),
        ([], False),
    ]
    assert conversation_shape(Path(doc["path"])) == conversation_shape(transcript)


def test_the_real_client_resumes_a_session_that_began_with_hook_output(
    claude: Path, tmp_path: Path
) -> None:
    root = tmp_path / "chat-root"
    root.mkdir()
    hook = {"type": "command", "command": "echo from-the-hook"}
    settings = {"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [hook]}]}}
    (root / "settings.json").write_text(json.dumps(settings))
    root, cwd, doc = chat_scenario(tmp_path, ["hello [[BASH echo hi]]"])
    ours = context_json(root, doc["sessionId"], cwd)
    assert "SessionStart:startup hook success: from-the-hook" in json.dumps(ours)
    theirs = resume(claude, root, doc["sessionId"], cwd)
    assert normalize(theirs) == normalize(ours)
    assert "SessionStart:startup hook success: from-the-hook" in json.dumps(theirs)


def test_the_real_client_resumes_after_an_interruption_and_an_api_error(
    claude: Path, tmp_path: Path
) -> None:
    root, cwd, doc = chat_scenario(tmp_path, ["hello"])
    with server(["400"]) as (url, _seen):  # an API that refuses: recorded, exit 1
        env = chat_env(root, MockAPI(int(url.rsplit(":", 1)[1]), tmp_path / "none"))
        failed = subprocess.run(
            [sys.executable, "-c", MAIN, "chat", "-c", "-p", "then this"],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert failed.returncode == 1 and "the model API failed (400)" in failed.stderr
    with mock_api(tmp_path / "api-2") as api:  # stopped by Ctrl+C while a command ran
        process = subprocess.Popen(
            [sys.executable, "-c", MAIN, "chat", "-c", "-p", "[[BASH sleep 3]]",
             "--dangerously-skip-permissions"],
            cwd=cwd, env=chat_env(root, api), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not any(r.get("kind") == "main" for r in api.requests()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1)
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
        assert process.returncode == 130
        run_chat(root, cwd, api, ["-c", "-p", "still there?"])
    text = Path(doc["path"]).read_text()
    assert '"isApiErrorMessage": true' in text.replace('":true', '": true')
    assert "[Request interrupted by user for tool use]" in text
    ours = context_json(root, doc["sessionId"], cwd)
    theirs = resume(claude, root, doc["sessionId"], cwd)
    assert normalize(theirs) == normalize(ours)
    assert "API Error" not in json.dumps(theirs)


def wait_then(started: Callable[[], bool], after_s: float) -> None:
    """Until ``started()``, then ``after_s`` seconds more."""
    deadline = time.monotonic() + 60
    while not started():
        assert time.monotonic() < deadline, "no request came"
        time.sleep(0.05)
    time.sleep(after_s)


def client_interrupted(
    claude: Path, base: Path, prompt: str, port: int, started: Callable[[], bool], after_s: float
) -> tuple[Path, Path]:
    """The real client, interactive in tmux against the API at ``port``: ``prompt``, then
    Esc ``after_s`` seconds after ``started()``. ``(transcript, cwd)``."""
    home, cwd = base / "client-home", base / "client-work"
    (home / ".claude").mkdir(parents=True)
    cwd.mkdir(parents=True)
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "lastOnboardingVersion": "2.1.328",
                "customApiKeyResponses": {"approved": ["sk-ant-mock"], "rejected": []},
                "projects": {str(cwd): {"hasTrustDialogAccepted": True, "allowedTools": []}},
                "bypassPermissionsModeAccepted": True,
            }
        )
    )
    settings = {"skipDangerousModePermissionPrompt": True}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    tmux = ["tmux", "-L", f"st-{os.getpid()}", "-f", "/dev/null"]
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in client_env(home, port).items())
    command = f"env -i {env} {claude} --dangerously-skip-permissions; sleep 600"
    size = ["-x", "160", "-y", "50"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "c", *size, "-c", str(cwd), command])
    try:
        time.sleep(6)
        subprocess.run([*tmux, "send-keys", "-t", "c", "-l", prompt], check=True)
        time.sleep(0.5)
        subprocess.run([*tmux, "send-keys", "-t", "c", "Enter"], check=True)
        wait_then(started, after_s)
        subprocess.run([*tmux, "send-keys", "-t", "c", "Escape"], check=True)
        time.sleep(3)
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    return transcript, cwd


def chat_interrupted(
    base: Path, prompt: str, api: MockAPI, started: Callable[[], bool], after_s: float
) -> Path:
    """``chat -p prompt``, SIGINT ``after_s`` seconds after ``started()``: its transcript."""
    root, cwd = base / "chat-root", base / "chat-work"
    cwd.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-c", MAIN, "chat", "-p", prompt, "--json",
         "--dangerously-skip-permissions"],
        cwd=cwd, env=chat_env(root, api), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    wait_then(started, after_s)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    return Path(json.loads(out)["path"])


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_ctrl_c_while_a_command_runs_is_written_as_the_client_writes_it(
    claude: Path, tmp_path: Path
) -> None:
    prompt = "[[BASH sleep 20]] [[BASH echo after]]"
    with mock_api(tmp_path / "client-api") as api:
        asked = lambda: any(r.get("kind") == "main" for r in api.requests())  # noqa: E731
        transcript, client_cwd = client_interrupted(claude, tmp_path, prompt, api.port, asked, 2)
    with mock_api(tmp_path / "chat-api") as api:
        asked = lambda: any(r.get("kind") == "main" for r in api.requests())  # noqa: E731
        ours = chat_interrupted(tmp_path, prompt, api, asked, 2)
    assert conversation_shape(ours) == conversation_shape(transcript)
    assert tool_results(ours, tmp_path / "chat-work") == tool_results(transcript, client_cwd)
    last = [json.loads(x) for x in ours.read_text().splitlines()][-1]
    assert last["type"] == "last-prompt"  # no turn end after an interruption, as the client


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_ctrl_c_while_the_answer_streams_is_written_as_the_client_writes_it(
    claude: Path, tmp_path: Path
) -> None:
    """Stopped after the first words of a slow answer: both keep what had streamed as a
    response with no stop reason, then the interruption."""
    # the first words come 6 s after the request, the next 3 s later
    with server(["ok"], delay=3.0) as (url, seen):
        port = int(url.rsplit(":", 1)[1])
        transcript, _cwd = client_interrupted(
            claude, tmp_path, "tell me", port, lambda: len(seen) >= 1, 7.5
        )
        count = len(seen)
        ours = chat_interrupted(
            tmp_path, "tell me", MockAPI(port, tmp_path / "x"), lambda: len(seen) > count, 7.5
        )
    assert conversation_shape(ours) == conversation_shape(transcript)
    for path in (ours, transcript):
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        answer = next(r for r in rows if r["type"] == "assistant")
        assert answer["message"]["stop_reason"] is None
        assert answer["message"]["content"][0]["text"].startswith("all")


def test_chat_resumes_what_the_real_client_wrote(claude: Path, tmp_path: Path) -> None:
    home, cwd, transcript = client_scenario(claude, tmp_path, SCENARIOS["parallel"])
    root = tmp_path / "root"
    shutil.copytree(home / ".claude", root)
    session_id = transcript.stem
    before = context_json(root, session_id, cwd)
    with mock_api(tmp_path / "resume-api") as api:
        doc = run_chat(root, cwd, api, ["-r", session_id, "-p", "and now?"])
        body = [r for r in api.requests() if r["kind"] == "main"][-1]["body"]
    assert doc["sessionId"] == session_id and doc["result"] == "Echo: and now?"
    sent = json.loads(
        json.dumps(body["messages"]).replace(', "cache_control": {"type": "ephemeral"}', "")
    )
    # what chat sent: the session's context then the new prompt (its last message)
    placeholder = {"role": "assistant", "content": [{"type": "text", "text": NO_RESPONSE}]}
    if before and before[-1] == placeholder:  # resuming puts it after an unanswered end
        before = before[:-1]
    assert normalize(sent[:-1]) == normalize(before)
    assert normalize(sent)[-1] == ("user", [("text", "and now?")])
    # and the client resumes what chat appended to its session
    theirs = resume(claude, root, session_id, cwd)
    assert normalize(theirs) == normalize(context_json(root, session_id, cwd))
