"""Permission to run a tool: the client's rules and files, allow once / always / deny, skip."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from sessiontree.agent.permissions import Decision, PermissionRequest, Permissions
from sessiontree.agent.tools.commands import command_prefix, is_read_only
from sessiontree.agent.tools.outcome import REJECTED_TEXT as REJECTED
from tests.agent.live import start
from tests.agent.tool_cases import _Script

CLIENT = Path.home() / ".cache" / "sessiontree-realclient"


class Asker:
    """A user who answers with ``answers`` in turn, and remembers what was asked."""

    def __init__(self, *answers: Decision) -> None:
        self.answers = list(answers)
        self.asked: list[PermissionRequest] = []

    def __call__(self, request: PermissionRequest) -> Decision:
        self.asked.append(request)
        return self.answers.pop(0)


def settings(project: Path, body: dict[str, object], name: str = "settings.local.json") -> None:
    folder = project / ".claude"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps(body))


def test_skip_allows_everything(project: Path) -> None:
    permissions = Permissions(project=project, ask=None, skip=True)
    assert permissions.allowed("Bash", {"command": "rm -rf build"})
    assert permissions.allowed("Write", {"file_path": "/etc/passwd", "content": ""})


def test_nobody_to_ask_is_refused_in_the_clients_words(project: Path) -> None:
    permissions = Permissions(project=project, ask=None)
    edit = permissions.check("Edit", {"file_path": str(project / "x.txt")})
    assert not edit.allowed
    assert edit.message == (
        f"Claude requested permissions to write to {project / 'x.txt'}, but you haven't "
        "granted it yet."
    )
    read = permissions.check("Read", {"file_path": "/usr/share/dict/words"})
    assert read.message == (
        "Claude requested permissions to read from /usr/share/dict/words, but you haven't "
        "granted it yet."
    )
    bash = permissions.check("Bash", {"command": "make"})
    assert bash.message == "This command requires approval"  # the client's, for a command


def test_reading_inside_the_project_and_looking_commands_need_no_permission(project: Path) -> None:
    permissions = Permissions(project=project, ask=None)
    assert permissions.allowed("Read", {"file_path": str(project / "a.txt")})
    assert permissions.allowed("Grep", {"pattern": "x"})
    assert permissions.allowed("Glob", {"pattern": "*", "path": str(project)})
    assert permissions.allowed("Bash", {"command": "ls -la"})
    assert permissions.allowed("Bash", {"command": "git status && cat a.txt | wc -l"})
    assert not permissions.allowed("Bash", {"command": "ls > out.txt"})
    assert not permissions.allowed("Bash", {"command": "find . -delete"})


def test_the_clients_rules_from_its_three_files(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(make:*)"]}}))
    settings(project, {"permissions": {"allow": ["Read(//etc/**)"]}}, "settings.json")
    settings(project, {"permissions": {"allow": ["Bash(echo hi:*)"], "deny": ["Bash(rm:*)"]}})
    permissions = Permissions(project=project, ask=None, config_dir=config)
    assert permissions.allowed("Bash", {"command": "make test"})
    assert permissions.allowed("Bash", {"command": "echo hi there"})
    assert permissions.allowed("Bash", {"command": "echo hi && ls"})
    assert not permissions.allowed("Bash", {"command": "npm install"})
    assert permissions.allowed("Read", {"file_path": "/etc/hostname"})
    denied = permissions.check("Bash", {"command": "rm x.txt"})
    assert denied.message == "Permission to use Bash with command rm x.txt has been denied."
    assert denied.decision["ruleSource"] == "localSettings"
    # a deny anywhere in a compound command wins
    assert not permissions.allowed("Bash", {"command": "echo hi && rm x.txt"})


def test_accept_edits_mode_allows_edits_inside_the_project(project: Path) -> None:
    settings(project, {"permissions": {"defaultMode": "acceptEdits"}})
    permissions = Permissions(project=project, ask=None)
    assert permissions.allowed("Edit", {"file_path": str(project / "a.txt")})
    assert not permissions.allowed("Edit", {"file_path": "/tmp/elsewhere.txt"})


def test_once_always_and_deny(project: Path) -> None:
    settings(project, {"model": "opus", "permissions": {"allow": ["Bash(make:*)"]}})
    asker = Asker("once", "always", "deny")
    permissions = Permissions(project=project, ask=asker)
    assert permissions.allowed("Bash", {"command": "npm test -- --watch"})  # once
    assert permissions.allowed("Bash", {"command": "npm test"})  # always
    assert [a.rule for a in asker.asked] == ["Bash(npm test:*)", "Bash(npm test:*)"]
    saved = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert saved == {
        "model": "opus",
        "permissions": {"allow": ["Bash(make:*)", "Bash(npm test:*)"]},
    }
    # saved: not asked again, in this session or the next
    assert permissions.allowed("Bash", {"command": "npm test --coverage"})
    assert Permissions(project=project, ask=None).allowed("Bash", {"command": "npm test"})
    refused = permissions.check("Write", {"file_path": str(project / "a.txt"), "content": ""})
    assert not refused.allowed and refused.user_rejected
    assert refused.message == REJECTED
    assert len(asker.asked) == 3
    assert asker.asked[2].rule == "Edit(/**)" and asker.asked[2].summary.startswith("Write: ")


def test_always_outside_the_project_names_the_folder(project: Path, tmp_path: Path) -> None:
    permissions = Permissions(project=project, ask=Asker("always"))
    target = tmp_path / "elsewhere" / "x.txt"
    assert permissions.allowed("Write", {"file_path": str(target), "content": ""})
    saved = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"] == [f"Edit(/{target.parent}/**)"]
    assert permissions.allowed("Edit", {"file_path": str(target.parent / "y.txt")})


def test_a_settings_file_that_is_not_json_is_left_alone(project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text("{oops")
    permissions = Permissions(project=project, ask=Asker("always"))
    assert permissions.allowed("Bash", {"command": "cargo build"})
    assert (project / ".claude" / "settings.local.json").read_text() == "{oops"
    assert permissions.allowed("Bash", {"command": "cargo build --release"})  # this session


def test_prefixes() -> None:
    assert command_prefix("npm run build -- --prod") == "npm run build"
    assert command_prefix("git commit -m x") == "git commit"
    assert command_prefix("pytest -q tests") == "pytest"
    assert command_prefix("git --no-pager log") == "git"
    assert is_read_only("git log --oneline") and not is_read_only("git push")


def test_a_refusal_through_the_toolbox(tmp_path: Path, project: Path) -> None:
    live = start(tmp_path, project, permissions=Permissions(project=project, ask=Asker("deny")))
    live.prompt("go")
    outcome, record = live.call("Write", {"file_path": str(project / "a.txt"), "content": "x"})
    assert outcome.is_error and not (project / "a.txt").exists()
    assert outcome.permission_decision is not None
    assert outcome.permission_decision["decision"] == "reject"
    (block,) = record["message"]["content"]
    assert block["content"] == REJECTED and block["is_error"] is True
    assert record["toolUseResult"] == "User rejected tool use"
    live2 = start(tmp_path / "2", project, permissions=Permissions(project=project, ask=None))
    live2.prompt("go")
    outcome, record = live2.call("Bash", {"command": "touch made"})
    assert record["toolUseResult"] == "Error: This command requires approval"
    assert not (project / "made").exists()


@pytest.mark.skipif(
    not (CLIENT / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude").is_file(),
    reason="the real client is not installed here",
)
def test_the_real_client_honours_a_saved_rule(project: Path) -> None:
    """ "Allow always" saved by sessiontree, read by the real client: the command it would
    otherwise refuse in ``-p`` mode runs (``permissionDecision``: a localSettings rule)."""
    claude = CLIENT / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
    Permissions(project=project, ask=Asker("always")).allowed("Bash", {"command": "touch a b"})
    Permissions(project=project, ask=Asker("always")).allowed(
        "Write", {"file_path": str(project / "w.txt"), "content": ""}
    )
    saved = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"] == ["Bash(touch:*)", "Edit(/**)"]
    calls = [
        ("Bash", {"command": "touch made.txt", "description": "make"}),
        ("Write", {"file_path": str(project / "w.txt"), "content": "w\n"}),
        ("Edit", {"file_path": str(project / "w.txt"), "old_string": "w", "new_string": "W"}),
        ("Bash", {"command": "mkdir refused", "description": "not allowed"}),
    ]
    _Script.steps = [
        [{"type": "tool_use", "id": f"toolu_{n}perm", "name": name, "input": tool_input}]
        for n, (name, tool_input) in enumerate(calls)
    ]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Script)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home = Path(tempfile.mkdtemp(prefix="perm-home-"))
    env = dict(
        os.environ,
        HOME=str(home),
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}",
        ANTHROPIC_API_KEY="sk-ant-mock",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
    )
    env.pop("CLAUDE_CONFIG_DIR", None)
    try:
        subprocess.run(
            [str(claude), "-p", "go", "--tools", "Bash,Write,Edit"],
            cwd=project,
            env=env,
            check=True,
            timeout=300,
            capture_output=True,
        )
    finally:
        server.shutdown()
        server.server_close()
        _Script.steps = []
    assert (project / "made.txt").exists()
    assert (project / "w.txt").read_text() == "W\n"
    assert not (project / "refused").exists()
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    decisions = [
        json.loads(line).get("permissionDecision")
        for line in transcript.read_text().splitlines()
        if '"tool_result"' in line
    ]
    assert [d["decision"] for d in decisions] == ["accept", "accept", "accept", "reject"]
    shutil.rmtree(home, ignore_errors=True)
