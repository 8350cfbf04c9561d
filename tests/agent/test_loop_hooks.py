"""SessionStart hooks: read from the settings files, matched on the source, run with the
client's environment and stdin; what they print becomes the ``hook_success`` attachment."""

from __future__ import annotations

import json
from pathlib import Path

from sessiontree.agent.hooks import (
    HookCommand,
    read_session_start_hooks,
    run_session_start_hooks,
    settings_files,
)


def test_hooks_are_read_from_every_settings_file_in_order(tmp_path: Path) -> None:
    config, cwd = tmp_path / "claude", tmp_path / "work"
    files = settings_files(config_dir=config, cwd=cwd)
    for n, path in enumerate(files):
        path.parent.mkdir(parents=True, exist_ok=True)
        hooks = [{"type": "command", "command": f"echo {n}", "timeout": 5}, {"type": "prompt"}]
        path.write_text(
            json.dumps({"hooks": {"SessionStart": [{"matcher": "resume", "hooks": hooks}]}})
        )
    files.append(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    files.append(tmp_path / "bad.json")
    assert read_session_start_hooks(files) == [
        HookCommand("echo 0", "resume", 5.0),
        HookCommand("echo 1", "resume", 5.0),
        HookCommand("echo 2", "resume", 5.0),
    ]


def test_matchers() -> None:
    assert HookCommand("x").matches("startup") and HookCommand("x", "*").matches("clear")
    assert HookCommand("x", "startup|resume").matches("resume")
    assert not HookCommand("x", "startup").matches("resume")
    assert HookCommand("x", "[").matches("[") and not HookCommand("x", "[").matches("startup")


def test_a_run_gets_its_env_file_and_stdin(tmp_path: Path) -> None:
    hooks = [
        HookCommand('echo "export A=1" >> "$CLAUDE_ENV_FILE"; cat; echo; echo $CLAUDE_PROJECT_DIR'),
        HookCommand("echo never", "resume"),
        HookCommand("echo oops >&2; exit 3"),
        HookCommand("sleep 5", timeout_s=0.2),
    ]
    runs = run_session_start_hooks(
        hooks,
        source="startup",
        session_id="s1",
        transcript_path=tmp_path / "s1.jsonl",
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        env_file=lambda n: tmp_path / f"sessionstart-hook-{n}.sh",
    )
    assert [r.exit_code for r in runs] == [0, 3, 124]
    assert (tmp_path / "sessionstart-hook-0.sh").read_text() == "export A=1\n"
    stdin, project = runs[0].stdout.strip().splitlines()
    assert json.loads(stdin)["source"] == "startup" and project == str(tmp_path)
    assert runs[1].stderr == "oops\n" and not runs[1].succeeded
    attachment, text = runs[0].attachment(tool_use_id="t1")
    assert attachment["hookName"] == "SessionStart:startup" and attachment["toolUseID"] == "t1"
    assert text.startswith("<system-reminder>\nSessionStart:startup hook success: {")
