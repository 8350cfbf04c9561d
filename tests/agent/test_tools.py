"""The Toolbox on real files: checkpoints as the client takes them, Bash's shell, input
checks, and what the loop records."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from sessiontree.agent.permissions import Permissions
from sessiontree.agent.tools import INTERRUPTED_TEXT, Toolbox
from sessiontree.agent.tools.shell import timeout_of
from sessiontree.checkpoints.code import plan_restore_code, restore_code
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.conversation.transcript import Transcript
from sessiontree.session import Session
from sessiontree.storage.layout import Layout, backup_name, tool_results_dir
from tests.agent.live import start


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_write_and_edit_are_checkpointed_as_the_client_does(tmp_path: Path, project: Path) -> None:
    (project / "notes.md").write_text("original line\n")
    live = start(tmp_path, project)
    p1 = live.prompt("p1")
    live.call("Write", {"file_path": str(project / "a.txt"), "content": "alpha\n"})
    live.call(
        "Edit",
        {
            "file_path": str(project / "notes.md"),
            "old_string": "original",
            "new_string": "edited",
        },
    )
    live.call(
        "Edit", {"file_path": str(project / "a.txt"), "old_string": "alpha", "new_string": "beta"}
    )
    live.session.end_turn()
    p2 = live.prompt("p2")
    live.session.end_turn()

    records = lines(live.session.path)
    deltas = [r for r in records if r["type"] == "file-history-delta"]
    # one delta per file, at its first edit, right after the tool_use record (as in 01-basic)
    assert len(deltas) == 2
    for delta in deltas:
        before = records[records.index(delta) - 1]
        assert before["type"] == "assistant" and before["uuid"] == delta["messageId"]
    created, existed = (d["backup"] for d in deltas)
    assert created["backupFileName"] is None and created["version"] == 1
    name = backup_name(str(project / "notes.md"), 1)
    assert existed["backupFileName"] == name
    backup = live.layout.backup_path(live.session.session_id, name)
    assert backup.read_text() == "original line\n"

    # the readers see what the client would: v1 at p1, the new versions at p2
    checkpoints = {c.message_id: c for c in read_checkpoints(live.session.transcript())}
    assert {k: v.version for k, v in checkpoints[p2].files.items()} == {"a.txt": 2, "notes.md": 2}
    plan = plan_restore_code(live.layout, Transcript.open(live.session.path), p1)
    assert {s.path.name: (s.action, s.source) for s in plan.steps} == {
        "a.txt": ("delete", "checkpoint"),
        "notes.md": ("restore", "checkpoint"),
    }
    restore_code(plan)
    assert not (project / "a.txt").exists()
    assert (project / "notes.md").read_text() == "original line\n"


def test_a_session_without_checkpoints_still_writes(tmp_path: Path, project: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, project)
    toolbox = Toolbox(
        session,
        cwd=project,
        permissions=Permissions(project=project, ask=None, skip=True),
        env={"PATH": "/usr/bin:/bin"},
    )
    session.append_prompt("p")
    session.append_response([{"type": "tool_use", "id": "t1", "name": "Write", "input": {}}])
    outcome = toolbox.run(
        "Write", {"file_path": str(project / "x"), "content": "x"}, tool_use_id="t1"
    )
    assert not outcome.is_error and (project / "x").read_text() == "x"
    assert "file-history" not in session.path.read_text()


def test_bash_is_followed_by_the_untracked_changes_snapshot(tmp_path: Path, project: Path) -> None:
    live = start(tmp_path, project)
    live.prompt("p")
    live.call("Bash", {"command": "echo one"})
    live.call("Bash", {"command": "echo two"})
    kinds = [
        (r["type"], r.get("snapshot", {}).get("hasUntrackedChanges"))
        for r in lines(live.session.path)
        if r["type"] in ("file-history-snapshot", "user", "assistant")
    ]
    flagged = kinds.index(("file-history-snapshot", True))
    assert kinds[flagged - 1][0] == "assistant" and kinds[flagged + 1][0] == "user"
    assert kinds.count(("file-history-snapshot", True)) == 1  # once per prompt


def test_a_big_output_is_spilled_as_the_client_does(tmp_path: Path, project: Path) -> None:
    live = start(tmp_path, project)
    live.prompt("p")
    outcome, record = live.call("Bash", {"command": "seq 1 20000"})
    assert len(outcome.tool_use_result["stdout"]) > 30_000
    (block,) = record["message"]["content"]
    assert block["content"].startswith("<persisted-output>\nOutput too large (")
    assert record["toolUseResult"]["persistedOutputSize"] == len(
        "\n".join(map(str, range(1, 20001)))
    )
    (spilled,) = tool_results_dir(live.session.path).iterdir()
    assert spilled.read_text().startswith("1\n2\n3\n")
    assert block["is_error"] is False and record["sandboxed"] is False


def test_cancel_stops_a_command_and_its_children(tmp_path: Path, project: Path) -> None:
    live = start(tmp_path, project, capture_bash=False)
    live.session.append_prompt("p")
    live.session.append_response([{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}])
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    outcome = live.toolbox.run(
        "Bash",
        {"command": "echo started; sleep 30 & sleep 30; wait"},
        tool_use_id="t",
        cancel=cancel,
    )
    assert time.monotonic() - started < 10
    assert outcome.is_error and outcome.content == INTERRUPTED_TEXT
    assert outcome.tool_use_result["interrupted"] is True
    assert outcome.tool_use_result["stdout"] == "started"
    left = subprocess.run(["pgrep", "-f", "sleep 30"], capture_output=True, text=True).stdout
    assert left.strip() == ""


def test_a_background_child_does_not_hold_the_call(tmp_path: Path, project: Path) -> None:
    live = start(tmp_path, project, capture_bash=False)
    live.prompt("p")
    started = time.monotonic()
    outcome, _ = live.call("Bash", {"command": "(sleep 5 > /dev/null 2>&1 &); echo back"})
    assert outcome.content == "back" and time.monotonic() - started < 4


def test_the_working_directory_survives_a_folder_removed_under_it(
    tmp_path: Path, project: Path
) -> None:
    (project / "sub").mkdir()
    live = start(tmp_path, project, capture_bash=False)
    live.prompt("p")
    live.call("Bash", {"command": "cd sub"})
    (project / "sub").rmdir()
    outcome, _ = live.call("Bash", {"command": "pwd"})
    assert outcome.content == str(project)


def test_input_is_checked_as_the_client_checks_it(tmp_path: Path, project: Path) -> None:
    live = start(tmp_path, project)
    live.prompt("p")
    unknown, record = live.call("Frobnicate", {})
    assert record["message"]["content"][0]["content"] == (
        "<tool_use_error>Error: No such tool available: Frobnicate</tool_use_error>"
    )
    missing, _ = live.call("Edit", {"file_path": str(project / "a")})
    assert missing.content == (
        "<tool_use_error>InputValidationError: Edit failed due to the following issues:\n"
        "The required parameter `old_string` is missing\n"
        "The required parameter `new_string` is missing</tool_use_error>"
    )
    typed, _ = live.call("Read", {"file_path": 3, "color": "red"})
    assert "The parameter `file_path` type is expected as `string` but provided as `number`" in str(
        typed.content
    )
    assert "An unexpected parameter `color` was provided" in str(typed.content)
    assert all(o.is_error for o in (unknown, missing, typed))
    # refused before permission was asked: no permissionDecision (the client writes none)
    assert all(o.permission_decision is None for o in (unknown, missing, typed))
    read, _ = live.call("Read", {"file_path": str(project / "nothing.txt")})
    assert read.permission_decision == {
        "decision": "accept",
        "source": "config",
        "reasonType": "mode",
    }


def test_timeouts_are_bounded() -> None:
    assert timeout_of(None) == 120_000
    assert timeout_of(10**9) == 600_000
    assert timeout_of(1500.7) == 1500
    assert timeout_of(True) == 120_000


def test_search_leaves_out_what_git_ignores_and_glob_does_not(
    tmp_path: Path, project: Path
) -> None:
    (project / "a.txt").write_text("needle\n")
    (project / "ignored.txt").write_text("needle\n")
    (project / ".hidden.txt").write_text("needle\n")
    (project / ".gitignore").write_text("ignored.txt\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    for ripgrep in ("rg", None):
        live = start(tmp_path / str(ripgrep), project, ripgrep=ripgrep and "/usr/bin/rg")
        if ripgrep and not Path("/usr/bin/rg").exists():
            continue
        live.prompt("p")
        grep, _ = live.call("Grep", {"pattern": "needle"})
        assert sorted(grep.tool_use_result["filenames"]) == [".hidden.txt", "a.txt"], ripgrep
        glob, _ = live.call("Glob", {"pattern": "*.txt"})
        assert sorted(glob.tool_use_result["filenames"]) == [".hidden.txt", "a.txt", "ignored.txt"]


def test_an_image_is_read_as_an_image(tmp_path: Path, project: Path) -> None:
    png = bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 16
    (project / "dot.png").write_bytes(png)
    (project / "blob.bin").write_bytes(b"\x00\x01\x02")
    live = start(tmp_path, project)
    live.prompt("p")
    image, _ = live.call("Read", {"file_path": str(project / "dot.png")})
    assert isinstance(image.content, list)
    (block,) = image.content
    assert block["type"] == "image" and block["source"]["media_type"] == "image/png"
    binary, _ = live.call("Read", {"file_path": str(project / "blob.bin")})
    assert binary.is_error and "cannot read binary files" in str(binary.content)


def test_parallel_calls_from_threads(tmp_path: Path, project: Path) -> None:
    """A response's calls run from several threads, as a loop running parallel tool use
    does: reads run side by side, commands that change files one at a time, so each
    command's capture names only its own files."""
    from sessiontree.checkpoints.bash_capture import read_capture_log

    (project / "r.txt").write_text("read me\n")
    live = start(tmp_path, project)
    live.prompt("p")
    calls = [
        ("t1", "Bash", {"command": "sleep 0.3; echo a > a.txt"}),
        ("t2", "Bash", {"command": "sleep 0.3; echo b > b.txt"}),
        ("t3", "Read", {"file_path": str(project / "r.txt")}),
        ("t4", "Grep", {"pattern": "read"}),
    ]
    live.session.append_response(
        [{"type": "tool_use", "id": i, "name": n, "input": inp} for i, n, inp in calls],
        stop_reason="tool_use",
    )
    box = live.toolbox
    assert [box.concurrency_safe(n, inp) for _, n, inp in calls] == [False, False, True, True]
    assert box.concurrency_safe("Bash", {"command": "git status && ls"})
    results: dict[str, object] = {}
    threads = [
        threading.Thread(
            target=lambda i=i, n=n, inp=inp: results.update({i: box.run(n, inp, tool_use_id=i)})
        )
        for i, n, inp in calls
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert time.monotonic() - started >= 0.6  # the two commands did not overlap
    assert len(results) == 4
    logged = [[f.path for f in r.files] for r in read_capture_log(live.session.path)]
    assert sorted(logged) == [["a.txt"], ["b.txt"]]


def test_a_resumed_toolbox_knows_what_the_session_read_and_wrote(
    tmp_path: Path, project: Path
) -> None:
    live = start(tmp_path, project)
    (project / "r.txt").write_text("read me\n")
    (project / "e.txt").write_text("edit me\n")
    (project / "part.txt").write_text("a\nb\n")
    live.prompt("p")
    live.call("Read", {"file_path": str(project / "r.txt")})
    live.call("Write", {"file_path": str(project / "w.txt"), "content": "written\n"})
    live.call("Read", {"file_path": str(project / "e.txt")})
    live.call(
        "Edit", {"file_path": str(project / "e.txt"), "old_string": "edit", "new_string": "E"}
    )
    live.call("Read", {"file_path": str(project / "part.txt"), "offset": 1, "limit": 1})
    reopened = Session.open(live.session.path)
    again = Toolbox(
        reopened,
        cwd=project,
        permissions=Permissions(project=project, ask=None, skip=True),
        env={"PATH": "/usr/bin:/bin"},
    )
    # a whole Read and a Write are known again; an Edit's result (seen on resume) and a
    # Read in part are not
    assert again.in_context == {project / "r.txt": "read me\n", project / "w.txt": "written\n"}

    def edit(name: str, old: str, new: str) -> dict[str, Any]:
        tool_input = {"file_path": str(project / name), "old_string": old, "new_string": new}
        outcome = again.run("Edit", tool_input, tool_use_id=f"toolu_{name}")
        assert not outcome.is_error, outcome.content
        assert isinstance(outcome.tool_use_result, dict)
        return {"text": outcome.content, **outcome.tool_use_result}

    assert "file state is current" in edit("r.txt", "read", "READ")["text"]
    forgotten = edit("e.txt", "E", "e")
    assert forgotten["contentNotInModelContext"] and "staleRecovered" not in forgotten
    (project / "w.txt").write_text("written\nby a command\n")  # changed since it was seen
    stale = edit("w.txt", "written", "WRITTEN")
    assert stale["staleRecovered"] and stale["contentNotInModelContext"]
    assert "modified on disk since you last read it" in stale["text"]
    assert project / "w.txt" not in again.in_context  # not in context after that
    assert "file state is current" not in edit("w.txt", "by", "BY")["text"]


def test_a_toolbox_on_a_cleared_session_knows_no_files(tmp_path: Path, project: Path) -> None:
    live = start(tmp_path, project)
    live.prompt("p")
    live.call("Write", {"file_path": str(project / "w.txt"), "content": "written\n"})
    assert project / "w.txt" in live.toolbox.in_context
    live.toolbox.session = Session.create(live.layout, project)
    assert live.toolbox.in_context == {}


def test_a_command_runs_after_the_session_env_script_kept_until_reloaded(
    tmp_path: Path, project: Path
) -> None:
    scripts = {"now": "export HOOKED=one\nfalse"}  # how its last line ends does not matter
    asked: list[str] = []

    def session_env(session_id: str) -> str:
        asked.append(session_id)
        return scripts["now"]

    layout = Layout(tmp_path / "root")
    session = Session.create(layout, project)
    toolbox = Toolbox(
        session,
        cwd=project,
        permissions=Permissions(project=project, ask=None, skip=True),
        env={"PATH": "/usr/bin:/bin"},
        session_env=session_env,
    )

    def echo() -> str:
        outcome = toolbox.run("Bash", {"command": "echo v=$HOOKED"}, tool_use_id="t")
        assert not outcome.is_error, outcome.content
        return str(outcome.content)

    assert echo() == "v=one"
    scripts["now"] = "export HOOKED=two"
    assert echo() == "v=one" and asked == [session.session_id]  # read once, kept
    toolbox.reload_session_env()
    assert echo() == "v=two"
    toolbox.session = Session.create(layout, project)  # another session: its own script
    echo()
    assert asked[-1] == toolbox.session.session_id and len(asked) == 3
