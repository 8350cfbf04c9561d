"""``sessiontree chat`` driven as a person drives it: keys into tmux, against the stand-in
Messages API; what it wrote is checked with sessiontree's own readers."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from sessiontree.catalog.index import SessionInfo
from sessiontree.chat.picker import project_sessions
from sessiontree.conversation.transcript import Transcript
from sessiontree.history.log import iter_history
from sessiontree.model.records import Record
from sessiontree.storage.layout import Layout, encode_cwd
from tests.chat.conftest import ChatTerminal

pytestmark = pytest.mark.slow


def sessions(chat: ChatTerminal) -> list[SessionInfo]:
    return project_sessions(Layout(chat.root), str(chat.project))


def only_session(chat: ChatTerminal) -> Transcript:
    found = sessions(chat)
    assert len(found) == 1, [s.sessionId for s in found]
    return Transcript.open(found[0].path)


def prompts(transcript: Transcript) -> list[str]:
    return [r.text() for r in transcript.active_records() if r.is_prompt]


def answers(transcript: Transcript) -> list[str]:
    return [
        r.text()
        for r in transcript.active_records()
        if r.type == "assistant" and r.text() and not r.text().startswith("[")
    ]


def by_id(chat: ChatTerminal, session_id: str) -> Transcript:
    info = next(s for s in sessions(chat) if s.sessionId == session_id)
    return Transcript.open(info.path)


def test_a_plain_turn_then_ctrl_d(chat: ChatTerminal) -> None:
    chat.start()
    pid = chat.pid
    live = Layout(chat.root).live_session_path(pid)
    assert json.loads(live.read_text())["status"] == "idle"
    chat.prompt("hello there")
    chat.wait_for(r"^⏺ Echo: hello there")
    transcript = only_session(chat)
    assert prompts(transcript) == ["hello there"]
    assert answers(transcript)[-1] == "Echo: hello there"
    history = list(iter_history(Layout(chat.root)))
    assert [(h.display, h.project, h.session_id) for h in history] == [
        ("hello there", str(chat.project), transcript.session_id)
    ]
    chat.keys("C-d")
    chat.wait_exit()
    assert not live.exists()


def test_up_and_ctrl_r_recall_this_projects_prompts_first(chat: ChatTerminal) -> None:
    chat.start()
    chat.prompt("alpha one")
    chat.prompt("beta two")
    chat.keys("C-d")
    chat.wait_exit()
    layout = Layout(chat.root)
    with layout.history_path.open("a") as history:  # newer, of another project
        entry = {
            "display": "from another project",
            "pastedContents": {},
            "timestamp": 4102444800000,
            "project": "/somewhere/else",
            "sessionId": "x",
        }
        history.write(json.dumps(entry) + "\n")
    chat.start()
    chat.keys("Up")
    chat.wait_input("beta two")
    chat.keys("Up")
    chat.wait_input("alpha one")
    chat.keys("Up")
    chat.wait_input("from another project")  # after every prompt of this project
    chat.keys("Down")
    chat.wait_input("alpha one")
    marks = chat.prompt_marks()
    chat.keys("Enter")
    chat.wait_idle(marks)
    chat.keys("C-r")
    chat.type("beta")
    chat.wait_for(r"beta")
    chat.keys("Enter")  # takes the match into the input
    chat.wait_input("beta two")
    marks = chat.prompt_marks()
    chat.keys("Enter")
    chat.wait_idle(marks)
    found = sessions(chat)  # the first chat's and the second's, the same prompts typed
    assert len(found) == 2
    for info in found:
        assert prompts(Transcript.open(info.path)) == ["alpha one", "beta two"]
    assert [h.display for h in iter_history(layout)][-2:] == ["alpha one", "beta two"]


def test_a_long_paste_becomes_a_placeholder(chat: ChatTerminal) -> None:
    chat.start()
    pasted = "".join(f"line {n} of the paste\n" for n in range(1, 6))
    chat.type("summarize ")
    chat.paste(pasted)
    chat.type(" please")
    chat.wait_input("summarize [Pasted text #1 +5 lines] please")
    marks = chat.prompt_marks()
    chat.keys("Enter")
    chat.wait_idle(marks)
    transcript = only_session(chat)
    (prompt,) = prompts(transcript)
    assert "line 3 of the paste" in prompt and "<pasted_content id=" in prompt
    (entry,) = list(iter_history(Layout(chat.root)))
    assert entry.display == "summarize [Pasted text #1 +5 lines] please"
    assert "line 5 of the paste" in entry.text
    # a short paste goes in as typed
    chat.paste("two\nlines")
    chat.wait_input("two")


def test_a_multi_line_prompt(chat: ChatTerminal) -> None:
    chat.start()
    chat.type("first line\\")
    chat.keys("Enter")
    chat.type("second line")
    chat.chord("Escape", "Enter")
    chat.type("third line")
    marks = chat.prompt_marks()
    chat.keys("Enter")
    chat.wait_idle(marks)
    assert prompts(only_session(chat)) == ["first line\nsecond line\nthird line"]


def _rewind_to_last(chat: ChatTerminal, action: str) -> None:
    """Esc Esc on the empty input, the last prompt (selected first), then ``action``."""
    chat.chord("Escape", "Escape")
    chat.wait_for(r"Rewind: go back to before which prompt\?")
    chat.keys("Enter")
    chat.wait_for(r"Never mind")
    chat.keys(action)


def test_esc_esc_restores_the_conversation_and_puts_the_prompt_back(chat: ChatTerminal) -> None:
    chat.start()
    chat.prompt("first prompt")
    chat.prompt("second prompt")
    old = only_session(chat)
    second = next(r for r in old.active_records() if r.is_prompt and r.text() == "second prompt")
    _rewind_to_last(chat, "4")  # Never mind (conversation, from, up to, never mind)
    chat.wait_for(r"^>$")
    assert only_session(chat).active_path == old.active_path
    chat.wait_input("")
    _rewind_to_last(chat, "1")  # Restore conversation (no file changed: no code action)
    chat.wait_for(r"Rewound the conversation to before prompt 2")
    chat.wait_input("second prompt")  # back in the input for editing
    chat.type(" again")
    marks = chat.prompt_marks()
    chat.keys("Enter")
    chat.wait_idle(marks)
    transcript = only_session(chat)
    assert prompts(transcript) == ["first prompt", "second prompt again"]
    again = next(r for r in transcript.active_records() if r.text() == "second prompt again")
    assert transcript.tree.parent[str(again.uuid)] == second.parent_uuid
    assert str(second.uuid) not in transcript.active_path  # the old branch stays in the file
    assert transcript.record(str(second.uuid)) is not None
    chat.type("/exit")
    chat.keys("Enter")
    chat.wait_exit()


@pytest.mark.parametrize("skip", [True, False], ids=["skip-permissions", "asked"])
def test_esc_esc_restores_code_and_conversation(chat: ChatTerminal, skip: bool) -> None:
    chat.start(*(["--dangerously-skip-permissions"] if skip else []))
    notes = chat.project / "notes.txt"
    chat.type("write it [[WRITE notes.txt|version one]]")
    chat.keys("Enter")
    if not skip:
        chat.wait_for(r"Allow .*Write")
        chat.type("2")  # allow always for this project (a number chooses at once)
    chat.wait_for(r"Done with 1 steps")
    chat.wait_for(r"^>$")
    assert notes.read_text() == "version one"
    chat.prompt("change it [[EDIT notes.txt|version one|version two]]")
    assert notes.read_text() == "version two"
    if not skip:
        settings = chat.project / ".claude" / "settings.local.json"
        assert "Edit" in settings.read_text() or "Write" in settings.read_text()
    _rewind_to_last(chat, "1")  # Restore code and conversation
    chat.wait_for(r"Restored code: 1 file put back")
    chat.wait_input("change it [[EDIT notes.txt|version one|version two]]")
    assert notes.read_text() == "version one"
    chat.keys("C-u")
    chat.prompt("something else")
    transcript = only_session(chat)
    assert prompts(transcript)[-2:] == [
        "write it [[WRITE notes.txt|version one]]",
        "something else",
    ]


def test_compact_clear_fork_rename_cost_help(chat: ChatTerminal) -> None:
    chat.start()
    chat.prompt("before compacting")
    chat.prompt("/compact keep the greeting")
    chat.wait_for(r"^Compacted")
    transcript = only_session(chat)
    first_id = transcript.session_id
    assert any(r.subtype == "compact_boundary" for r in transcript.active_records())
    assert any("keep the greeting" in json.dumps(q) for q in chat.api.requests())

    chat.prompt("/rename The greeting session")
    chat.prompt("/cost")
    chat.wait_for(r"^Total cost:")
    chat.prompt("/help")
    chat.wait_for(r"^/rewind ")

    chat.prompt("/fork")
    screen = chat.wait_for(r"^Forked: now in ")
    fork_id = screen.split("Forked: now in ", 1)[1].split()[0]
    chat.prompt("in the fork")
    fork = by_id(chat, fork_id)
    assert prompts(fork)[-1] == "in the fork"
    assert "in the fork" not in prompts(by_id(chat, first_id))

    chat.prompt("/branch")
    chat.wait_for(r"Forked: now in .*\n(.*\n)*.*Forked: now in ")

    chat.prompt("/clear")
    screen = chat.wait_for(r"^New session ")
    clear_id = screen.rsplit("New session ", 1)[1].split(";")[0]
    chat.prompt("after clearing")
    assert prompts(by_id(chat, clear_id)) == ["after clearing"]
    titles = {s.sessionId: s.customTitle for s in sessions(chat)}
    assert titles[first_id] == "The greeting session"

    chat.prompt("/nonsense")
    chat.wait_for(r"unknown command /nonsense")


def test_resume_picker_in_chat_and_at_start(chat: ChatTerminal) -> None:
    chat.start()
    chat.prompt("apple pie recipe")
    first = only_session(chat).session_id
    chat.prompt("/clear")
    chat.prompt("banana bread")
    chat.type("/resume")
    chat.keys("Enter")
    chat.wait_for(r"Resume a session")
    chat.wait_for(r"apple pie recipe")
    chat.type("apple")
    chat.wait_for(r"\(1 of 1\)")
    chat.keys("Enter")
    chat.wait_for(r"^Resumed " + first)
    chat.wait_for(r"^>$")
    chat.prompt("more about the pie")
    assert prompts(by_id(chat, first)) == ["apple pie recipe", "more about the pie"]

    chat.keys("C-d")
    chat.wait_exit()
    chat.start("-r")  # the picker before the chat: newest first, the apple one on top
    chat.wait_for(r"Resume a session")
    screen = chat.wait_for(r"banana bread")
    assert screen.index("apple pie recipe") < screen.index("banana bread")
    chat.keys("Down", "Down", "Up", "Down")  # arrows move (and stop at the end)
    chat.wait_for(r"^❯ .*banana bread")
    chat.keys("Enter")
    chat.wait_for(r"/help for commands")
    chat.wait_for(r"^>$")
    chat.prompt("and with walnuts")
    banana = next(s for s in sessions(chat) if s.firstPrompt == "banana bread")
    assert prompts(Transcript.open(banana.path)) == ["banana bread", "and with walnuts"]
    chat.keys("C-d")
    chat.wait_exit()
    chat.start("-r")  # type to filter
    chat.wait_for(r"Resume a session")
    chat.type("banana")
    chat.wait_for(r"\(1 of 2\)")
    chat.keys("Enter")
    chat.wait_for(r"^>$")
    chat.prompt("and with raisins")
    assert prompts(Transcript.open(banana.path))[-1] == "and with raisins"


def test_a_resumed_session_shows_the_conversation_it_goes_on_from(chat: ChatTerminal) -> None:
    chat.start("--dangerously-skip-permissions")
    chat.prompt(f"make a file [[WRITE {chat.project}/a.txt|alpha\\n]]")
    chat.type("plain words\\")
    chat.keys("Enter")
    chat.prompt("over two lines")
    chat.prompt("rewound away later")
    _rewind_to_last(chat, "1")  # the conversation back to before the third prompt
    chat.wait_for(r"Rewound the conversation to before prompt 3")
    chat.wait_input("rewound away later")
    chat.keys("C-u")
    chat.prompt("the other way")
    chat.type("/exit")
    chat.keys("Enter")
    chat.wait_exit()

    chat.start("-c")
    screen = chat.wait_for(r"^⏺ Echo: plain words")
    lines = screen.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("sessiontree chat"))
    shown = [line.rstrip() for line in lines[start + 2 :] if line.strip()]
    assert shown[:6] == [
        f"> make a file [[WRITE {chat.project}/a.txt|alpha\\n]]",
        "⏺ Writing.",
        f"⏺ Write({chat.project}/a.txt)",
        shown[3],  # the result's line, as the turn drew it
        "⏺ Done with 1 steps.",
        "> plain words … +1 line",
    ]
    assert shown[3].startswith(f"  ⎿  File created successfully at: {chat.project}/a.txt")
    assert shown[6:8] == ["⏺ Echo: plain words", "over two lines"]  # as the turn drew it
    assert shown[8:] == ["> the other way", "⏺ Echo: the other way", ">"]
    assert "rewound away later" not in screen  # not on the path the next request sends
    chat.keys("C-d")
    chat.wait_exit()

    chat.start()  # a new session: nothing drawn again
    chat.wait_for(r"^>$")
    assert "make a file" not in chat.screen()


def test_a_killed_host_loses_at_most_the_turn_in_flight(chat: ChatTerminal) -> None:
    chat.start("--dangerously-skip-permissions")
    chat.prompt(f"one [[WRITE {chat.project}/a.txt|alpha\\n]]")
    chat.prompt("two")
    done = only_session(chat).path.read_bytes()
    chat.type(f"three [[BASH sleep 30; touch {chat.project}/late]]")
    chat.keys("Enter")
    chat.wait_for(r"^⏺ Bash\(sleep 30")
    live = Layout(chat.root).live_session_path(chat.pid)
    assert json.loads(live.read_text())["status"] == "busy"
    os.kill(chat.pid, signal.SIGKILL)
    chat.wait_exit()
    path = only_session(chat).path
    assert path.read_bytes().startswith(done)  # every finished turn, byte for byte
    assert prompts(Transcript.open(path))[:2] == [
        f"one [[WRITE {chat.project}/a.txt|alpha\\n]]",
        "two",
    ]

    chat.start("-c", "--dangerously-skip-permissions")
    chat.wait_for(r"^⏺ Echo: two")  # the conversation, drawn again
    chat.prompt("four")
    transcript = Transcript.open(path)
    assert prompts(transcript)[-1] == "four"
    assert answers(transcript)[-1] == "Echo: four"
    sent = [q for q in chat.api.requests() if q.get("kind") != "title"][-1]["body"]["messages"]
    roles = [m["role"] for m in sent]
    assert all(a != b for a, b in itertools.pairwise(roles))  # a request the API takes
    calls = {
        b["id"] for m in sent if isinstance(m["content"], list)
        for b in m["content"] if b.get("type") == "tool_use"
    }  # fmt: skip
    results = {
        b["tool_use_id"] for m in sent if isinstance(m["content"], list)
        for b in m["content"] if b.get("type") == "tool_result"
    }  # fmt: skip
    assert calls == results and len(calls) == 1  # the Write's; the killed Bash call left out
    assert (chat.project / "a.txt").read_text() == "alpha\n"
    assert not (chat.project / "late").exists()


def _interruption(records: list[Record]) -> list[str]:
    return [r.text() for r in records if r.type == "user" and "interrupted" in r.text().lower()]


def test_ctrl_c_interrupts_a_turn_then_twice_exits(chat: ChatTerminal) -> None:
    chat.start("--dangerously-skip-permissions")
    pid = chat.pid
    live = Layout(chat.root).live_session_path(pid)
    chat.type("wait a bit [[BASH sleep 5]]")
    chat.keys("Enter")
    chat.wait_for(r"Bash\(sleep 5\)")
    assert json.loads(live.read_text())["status"] == "busy"
    chat.keys("C-c")
    chat.wait_for(r"Interrupted")
    chat.wait_for(r"^>$", timeout=10)
    transcript = only_session(chat)
    assert _interruption(transcript.active_records())
    chat.prompt("still here?")  # the host goes on: a turn, answered
    transcript = only_session(chat)
    assert prompts(transcript)[-1] == "still here?"
    assert transcript.active_records()[-1].type != "user"
    assert json.loads(live.read_text())["status"] == "idle"
    chat.keys("C-c")
    chat.wait_for(r"Press Ctrl\+C again to exit")
    chat.keys("C-c")
    chat.wait_exit()
    assert not live.exists()
    assert prompts(only_session(chat))[-1] == "still here?"


def test_memory_shows_the_files_and_opens_the_editor(chat: ChatTerminal, tmp_path: Path) -> None:
    (chat.project / "CLAUDE.md").write_text("Always answer in haiku.\n")
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\necho "Also be brief." >> "$1"\n')
    editor.chmod(0o755)
    chat.start(EDITOR=str(editor))
    chat.type("/memory")
    chat.keys("Enter")
    chat.wait_for(r"Edit which memory file\?")
    chat.wait_for(r"^❯ 1\. Project memory .*/project/CLAUDE\.md$")  # first, selected
    chat.wait_for(r"^  3\. User memory .*/home/\.claude/CLAUDE\.md \(new\)$")
    chat.wait_for(r"^  4\. Auto-memory index ")
    marks = chat.prompt_marks()
    chat.keys("Enter")
    chat.wait_idle(marks)
    assert (chat.project / "CLAUDE.md").read_text() == "Always answer in haiku.\nAlso be brief.\n"
    chat.prompt("hello")
    turns = [q for q in chat.api.requests() if q.get("kind") != "title"]
    sent = json.dumps(turns[-1])
    assert "Always answer in haiku." in sent and "Also be brief." in sent


@pytest.mark.parametrize("downs", [1, 2, 3], ids=["local", "user", "auto-memory"])
def test_memory_edits_each_kind_of_memory_file(
    chat: ChatTerminal, tmp_path: Path, downs: int
) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\necho "Remember the walrus." >> "$1"\n')
    editor.chmod(0o755)
    chat.start(EDITOR=str(editor))
    chat.type("/memory")
    chat.keys("Enter")
    chat.wait_for(r"Edit which memory file\?")
    chat.keys(*["Down"] * downs)
    marks = chat.prompt_marks()
    chat.keys("Enter")
    chat.wait_idle(marks)
    project_folder = chat.root / "projects" / encode_cwd(str(chat.project))
    edited = [
        chat.project / "CLAUDE.local.md",
        chat.root / "CLAUDE.md",
        project_folder / "memory" / "MEMORY.md",
    ][downs - 1]
    assert edited.read_text() == "Remember the walrus.\n"
    chat.wait_for(r"^Edited /.*")  # the path may wrap
    chat.wait_for(r"the memory is read again from it now\.$")
    chat.prompt("hello")
    turns = [q for q in chat.api.requests() if q.get("kind") != "title"]
    assert "Remember the walrus." in json.dumps(turns[-1])  # sent from now on
    chat.type("/memory")
    chat.keys("Enter")
    chat.wait_for(r"Edit which memory file\?")
    marks = chat.prompt_marks()
    chat.keys("Escape")
    chat.wait_for(r"^Nothing edited\.$")
    assert edited.read_text() == "Remember the walrus.\n"


def test_no_color_is_respected(chat: ChatTerminal) -> None:
    colour = re.compile(r"\x1b\[[0-9;]*(3[0-7]|9[0-7]|38;[0-9;]+)m")
    chat.start(NO_COLOR="")
    chat.prompt("/nonsense")
    chat.wait_for(r"unknown command /nonsense")
    assert colour.search(chat.tmux("capture-pane", "-p", "-e", "-t", "c"))
    chat.keys("C-d")
    chat.wait_exit()
    chat.start(NO_COLOR="1")
    chat.prompt("/nonsense")
    chat.wait_for(r"unknown command /nonsense")
    assert not colour.search(chat.tmux("capture-pane", "-p", "-e", "-t", "c"))


@pytest.mark.parametrize(("key", "direction"), [("3", "from"), ("4", "up to")])
def test_esc_esc_summarizes_from_or_up_to_a_prompt(
    chat: ChatTerminal, key: str, direction: str
) -> None:
    chat.start()
    for text in ("one", "two", "three"):
        chat.prompt(f"prompt {text}")
    if direction == "from":
        chat.chord("Escape", "Escape")
    else:
        chat.type("/rewind")
        chat.keys("Enter")
    chat.wait_for(r"Rewind: go back to before which prompt\?")
    chat.keys("Up", "Enter")  # prompt two
    chat.wait_for(r"Summarize up to here")
    # prompts without file changes offer no code action: conversation, from, up to, never mind
    chat.keys({"3": "2", "4": "3"}[key])
    chat.wait_for(rf"^Summarized {direction} prompt 2\.")
    chat.wait_for(r"^>$")
    chat.prompt("after the summary")
    transcript = only_session(chat)
    records = transcript.active_records()
    assert any(r.subtype == "compact_boundary" for r in records)
    assert prompts(transcript)[-1] == "after the summary"


def test_files_bash_changed_are_restored_with_the_code(chat: ChatTerminal) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(chat.project)]
    data = chat.project / "data.txt"
    data.write_text("original\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "data.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
    chat.start("--dangerously-skip-permissions")
    chat.prompt("hello")
    chat.prompt("change by shell [[BASH echo changed > data.txt && echo new > made.txt]]")
    assert data.read_text() == "changed\n" and (chat.project / "made.txt").exists()
    chat.chord("Escape", "Escape")
    chat.wait_for(r"Rewind: go back to before which prompt\?")
    chat.wait_for(r"change by shell .*\(2 files changed\)")
    chat.keys("Enter")
    chat.wait_for(r"Restore code and conversation")
    chat.keys("3")  # Restore code (only)
    chat.wait_for(r"Restored code: 2 files put back")
    assert data.read_text() == "original\n"  # the client's own checkpoints never held it
    assert not (chat.project / "made.txt").exists()
    chat.wait_input("")  # code only: nothing put back in the input
    chat.prompt("after the restore")
    assert prompts(only_session(chat)) == [
        "hello",
        "change by shell [[BASH echo changed > data.txt && echo new > made.txt]]",
        "after the restore",
    ]


def test_parallel_calls_are_each_folded_to_a_line(chat: ChatTerminal) -> None:
    (chat.project / "a.txt").write_text("alpha\n")
    (chat.project / "b.txt").write_text("beta\nmore\n")
    chat.start("--dangerously-skip-permissions")
    chat.prompt("both at once [[PAR READ a.txt ;; READ b.txt]]")
    screen = chat.screen()
    assert re.search(r"^⏺ Read\(a\.txt\)$", screen, re.M)
    assert re.search(r"^⏺ Read\(b\.txt\)$", screen, re.M)
    assert len(re.findall(r"^  ⎿  ", screen, re.M)) == 2


def test_a_denied_write_is_not_done(chat: ChatTerminal) -> None:
    chat.start()
    marks = chat.prompt_marks()
    chat.type("[[WRITE secret.txt|nope]]")
    chat.keys("Enter")
    chat.wait_for(r"Allow .*Write")
    chat.type("3")
    chat.wait_idle(marks)
    assert not (chat.project / "secret.txt").exists()
    transcript = only_session(chat)
    results = [r for r in transcript.active_records() if r.type == "user" and not r.is_prompt]
    assert any("doesn't want to proceed" in r.text() for r in results)


def test_ctrl_c_at_a_permission_question_denies_and_stops_the_turn(chat: ChatTerminal) -> None:
    chat.start()
    chat.type("[[WRITE secret.txt|nope]]")
    chat.keys("Enter")
    chat.wait_for(r"Allow .*Write")
    chat.keys("C-c")
    chat.wait_for(r"Interrupted")
    chat.wait_for(r"^>$")
    assert not (chat.project / "secret.txt").exists()
    chat.prompt("still usable")
    assert prompts(only_session(chat))[-1] == "still usable"


def test_keys_typed_during_a_turn_wait_for_the_next_prompt(chat: ChatTerminal) -> None:
    chat.start("--dangerously-skip-permissions")
    chat.type("[[BASH sleep 2]]")
    chat.keys("Enter")
    chat.wait_for(r"Bash\(sleep 2\)")
    chat.type("typed ahead")
    assert "typed ahead" not in chat.screen()  # not echoed over the turn's output
    chat.wait_for(r"Done with 1 steps")
    chat.wait_input("typed ahead")


def test_clear_and_compact_run_the_session_start_hooks_as_the_client(
    chat: ChatTerminal, tmp_path: Path
) -> None:
    """What client 2.1.328 does, seen driving it in tmux with this hook and these steps:
    ``/clear`` runs the hooks with ``clear`` for the new session (input without
    ``model``; its own ``session-env/`` folder; the attachment its first record, the
    command's records hung on it), and its commands source that folder; ``/compact``
    runs them with ``compact`` (input with the summary's ``prompt_id`` and ``model``;
    the attachment after the compaction's records), and the commands after it still run
    with the script read before (``v=clear``)."""
    log = tmp_path / "hook-input.jsonl"
    hook = (
        f'read -r IN; echo "$IN" >> {log}; '
        'SOURCE=$(echo "$IN" | python3 -c '
        "\"import json,sys; print(json.load(sys.stdin)['source'])\"); "
        'echo "export V=$SOURCE" >> "$CLAUDE_ENV_FILE"; echo "hook-said-$SOURCE"'
    )
    settings = {"hooks": {"SessionStart": [{"matcher": "", "hooks": [{"command": hook}]}]}}
    (chat.root / "settings.json").write_text(json.dumps(settings))
    chat.start("--dangerously-skip-permissions")
    chat.prompt("hello [[BASH echo v=$V]]")
    first = only_session(chat)
    chat.prompt("/clear")
    screen = chat.wait_for(r"^New session ")
    clear_id = screen.rsplit("New session ", 1)[1].split(";")[0]
    chat.prompt("after clear [[BASH echo v=$V]]")
    chat.prompt("/compact")
    chat.wait_for(r"^Compacted")
    chat.prompt("after compact [[BASH echo v=$V]]")
    env_dir = Layout(chat.root).session_env_dir
    assert {p.name for p in env_dir.iterdir()} == {first.session_id, clear_id}
    chat.keys("C-d")
    chat.wait_exit()
    assert not any(env_dir.iterdir())  # both removed at the end

    inputs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(i["source"], i["session_id"]) for i in inputs] == [
        ("startup", first.session_id),
        ("clear", clear_id),
        ("compact", clear_id),
    ]
    assert "model" not in inputs[1] and "prompt_id" not in inputs[1]
    assert list(inputs[2]) == [
        "session_id", "transcript_path", "cwd", "prompt_id", "hook_event_name", "source",
        "model",
    ]  # fmt: skip
    rows = [json.loads(x) for x in by_id(chat, clear_id).path.read_text().splitlines()]
    results = [r["message"]["content"][0]["content"] for r in rows if "toolUseResult" in r]
    assert results == ["v=clear", "v=clear"]
    first_rows = [json.loads(x) for x in first.path.read_text().splitlines()]
    assert [r["message"]["content"][0]["content"] for r in first_rows if "toolUseResult" in r] == [
        "v=startup"
    ]
    hooks = [r for r in rows if r.get("attachment", {}).get("type") == "hook_success"]
    assert [h["attachment"]["hookName"] for h in hooks] == [
        "SessionStart:clear",
        "SessionStart:compact",
    ]
    by_uuid = {r["uuid"]: r for r in rows if "uuid" in r}
    assert hooks[0]["parentUuid"] is None and hooks[0]["attachment"]["content"] == "hook-said-clear"
    caveat = next(r for r in rows if r.get("isMeta") and "local-command-caveat" in str(r))
    assert caveat["parentUuid"] == hooks[0]["uuid"]
    summary = next(r for r in rows if r.get("isCompactSummary"))
    assert inputs[2]["prompt_id"] == summary["promptId"]
    assert rows.index(hooks[1]) > rows.index(summary)
    prompt = next(
        r for r in rows if r.get("message", {}).get("content") == "after compact [[BASH echo v=$V]]"
    )
    assert by_uuid[prompt["parentUuid"]] is hooks[1]  # the next prompt hangs on it


def _after(records: list[Record], prompt: str) -> list[tuple[str | None, str]]:
    """The records of a prompt's turn on the path: their type and text (call ids left
    out)."""
    at = next(n for n, r in enumerate(records) if r.is_prompt and r.text() == prompt)
    turn = []
    for record in records[at + 1 :]:
        if record.is_prompt:
            break
        if record.type in ("user", "assistant"):
            turn.append((record.type, re.sub(r"toolu_\w+", "toolu_", record.text())))
    return turn


def test_esc_interrupts_a_turn_as_ctrl_c_does(chat: ChatTerminal) -> None:
    chat.start("--dangerously-skip-permissions")
    for key, prompt in (("Escape", "by esc [[BASH sleep 5]]"), ("C-c", "by c [[BASH sleep 5]]")):
        marks = chat.prompt_marks()
        chat.type(prompt)
        chat.keys("Enter")
        chat.wait_for(r"Bash\(sleep 5\)")
        chat.keys(key)
        chat.wait_for(r"Interrupted · what should the model do instead")
        chat.wait_idle(marks, timeout=10)
        chat.prompt("go on")  # (the stand-in reads the next prompt's directives alone)
    records = only_session(chat).active_records()
    by_esc = _after(records, "by esc [[BASH sleep 5]]")
    by_c = _after(records, "by c [[BASH sleep 5]]")
    assert by_esc == by_c  # the same records, interruption and all
    assert _interruption(records) == ["[Request interrupted by user for tool use]"] * 2
    # an arrow key (Esc [ A) typed during a turn is a key, not an interruption
    chat.type("[[BASH sleep 2]]")
    chat.keys("Enter")
    chat.wait_for(r"Bash\(sleep 2\)")
    chat.type("ahead")
    chat.keys("Left")
    chat.type("X")
    chat.wait_for(r"Done with 1 steps")
    chat.wait_input("aheaXd")


def test_the_permission_question_is_a_menu(chat: ChatTerminal) -> None:
    """As client 2.1.328 asks (seen in tmux, permissions in their default mode): a
    numbered menu, "1. Yes" selected first; Esc rejects the call and stops the turn (the
    rejection as the call's result, then "[Request interrupted by user for tool use]")."""
    chat.start()
    marks = chat.prompt_marks()
    chat.type("[[WRITE a.txt|x]]")
    chat.keys("Enter")
    chat.wait_for(r"^Allow Write: a\.txt\?$")
    chat.wait_for(r"^❯ 1\. Yes$")  # "Yes" first, as the client's
    chat.keys("Down", "Down")
    chat.wait_for(r"^❯ 3\. No, and tell the model")
    chat.keys("Up")
    chat.wait_for(r"^❯ 2\. Yes, and don't ask again")
    chat.keys("Enter")
    chat.wait_idle(marks)
    assert (chat.project / "a.txt").read_text() == "x"
    assert "Edit(/**)" in (chat.project / ".claude" / "settings.local.json").read_text()
    assert re.search(r"^Allow Write: a\.txt\? Yes, and don't ask again", chat.screen(), re.M)
    chat.prompt("[[WRITE b.txt|y]]")  # allowed for the project now: no question
    assert (chat.project / "b.txt").read_text() == "y"

    marks = chat.prompt_marks()
    chat.type("[[BASH touch c.txt]]")
    chat.keys("Enter")
    chat.wait_for(r"^Allow Bash.*touch c\.txt.*\?$")
    chat.keys("Escape")  # no, and the turn stops, as Ctrl+C stops it
    chat.wait_for(r"Interrupted · what should the model do instead")
    chat.wait_idle(marks)
    assert not (chat.project / "c.txt").exists()
    records = only_session(chat).active_records()
    assert _interruption(records) == ["[Request interrupted by user for tool use]"]
    rejected = [r.text() for r in records if r.is_tool_result][-1]
    assert "The user doesn't want to proceed with this tool use" in rejected
