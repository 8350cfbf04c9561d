"""The chat loop without a terminal: entries from a scripted box, menu choices scripted,
over a real ``AgentHost`` (offline provider, real tools, real files). What the loop does
with each entry is checked in the transcript and the project."""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from sessiontree.agent.loop import AgentHost
from sessiontree.agent.offline import OfflineProvider
from sessiontree.agent.permissions import Permissions
from sessiontree.agent.tools import Toolbox
from sessiontree.chat import menu
from sessiontree.chat.commands import help_lines
from sessiontree.chat.pastes import PasteBook
from sessiontree.chat.prompt import Entry
from sessiontree.chat.repl import Chat, Terminal
from sessiontree.checkpoints.capture import FileHistory
from sessiontree.conversation.transcript import Transcript
from sessiontree.history.log import iter_history
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout


class ScriptedBox:
    """The prompt box's interface, fed from a list; ``defaults`` records what each read
    put in the input first."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries: Iterator[Entry] = iter(entries)
        self.pastes = PasteBook()
        self.defaults: list[str] = []
        self.remembered: list[str] = []

    def read(self, *, default: str = "") -> Entry:
        self.defaults.append(default)
        return next(self.entries, Entry("exit"))

    def remember(self, text: str) -> None:
        self.remembered.append(text)


def text(value: str, pastes: dict[int, str] | None = None) -> Entry:
    return Entry("text", value, pastes or {})


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    layout = Layout(tmp_path / "root")
    project = tmp_path / "project"
    project.mkdir()
    session = Session.create(layout, project, record_history=True, entrypoint="cli")
    session.file_history = FileHistory(layout, session.session_id, session.env.cwd)
    toolbox = Toolbox(
        session, cwd=project, permissions=Permissions(project=project, ask=None, skip=True), env={}
    )
    host = AgentHost(session, OfflineProvider(), toolbox, model="m", layout=layout, title=False)
    out = io.StringIO()
    terminal = Terminal(env={"NO_COLOR": "1"}, console=Console(file=out, width=100))
    return {"layout": layout, "project": project, "host": host, "out": out, "terminal": terminal}


def run(world: dict[str, Any], entries: Sequence[Entry]) -> tuple[Chat, ScriptedBox]:
    box = ScriptedBox(entries)
    chat = Chat(world["host"], layout=world["layout"], terminal=world["terminal"], box=box)
    chat.run()
    return chat, box


def prompts(host: AgentHost) -> list[str]:
    transcript = Transcript.open(host.session.path)
    path = transcript.tree.path_to(host.session.tip) if host.session.tip else []
    return [r.text() for r in transcript.records(path) if r.is_prompt]


def scripted_choices(monkeypatch: pytest.MonkeyPatch, *answers: int | None) -> list[str]:
    """``menu.choose`` answers in order; returns the titles it was shown."""
    queue = list(answers)
    titles: list[str] = []

    def choose(title: str, options: Sequence[str], **_: Any) -> int | None:
        titles.append(title)
        titles.extend(options)
        return queue.pop(0)

    monkeypatch.setattr(menu, "choose", choose)
    return titles


def test_a_turn_a_paste_and_the_exit_line(world: dict[str, Any]) -> None:
    chat, _box = run(
        world, [text("see [Pasted text #1 +3 lines]", {1: "a\nb\nc\n"}), text("/exit")]
    )
    (prompt,) = prompts(chat.host)
    assert "<pasted_content" in prompt and "a\nb\nc" in prompt
    out = world["out"].getvalue()
    assert f"Resume this session with: sessiontree chat -r {chat.host.session.session_id}" in out
    displays = [h.display for h in iter_history(world["layout"])]
    assert displays == ["see [Pasted text #1 +3 lines]", "/exit"]


def test_rewinding_code_and_conversation_puts_the_prompt_back(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = world["project"] / "notes.txt"
    shown = scripted_choices(monkeypatch, 1, 0)  # the second prompt; code and conversation
    chat, box = run(
        world,
        [
            text("[[WRITE notes.txt|one]]"),
            text("[[EDIT notes.txt|one|two]]"),
            Entry("rewind"),
        ],
    )
    assert notes.read_text() == "one"
    assert shown[0] == "Rewind: go back to before which prompt?"
    assert shown[1:3] == [
        "[[WRITE notes.txt|one]]  (1 file changed)",
        "[[EDIT notes.txt|one|two]]  (1 file changed)",
    ]
    assert shown[4:] == [
        "Restore code and conversation",
        "Restore conversation",
        "Restore code",
        "Summarize from here",
        "Summarize up to here",
        "Never mind",
    ]
    assert box.defaults[-1] == "[[EDIT notes.txt|one|two]]"  # back for editing
    assert prompts(chat.host) == ["[[WRITE notes.txt|one]]"]


def test_a_rewound_prompt_with_a_paste_comes_back_as_its_placeholder(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_choices(monkeypatch, 0, 0)  # the first prompt; restore conversation
    pasted = "x\ny\nz\nw\n"
    chat, box = run(
        world, [text("look [Pasted text #1 +4 lines] here", {1: pasted}), Entry("rewind")]
    )
    assert box.defaults[-1] == "look [Pasted text #1 +3 lines] here"
    assert box.pastes.for_prompt(box.defaults[-1]) == {1: pasted[:-1]}
    assert prompts(chat.host) == []


def test_never_mind_and_a_cancelled_menu_change_nothing(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_choices(monkeypatch, 0, 3, None)  # never mind (no code to restore); then Esc
    chat, box = run(world, [text("hello"), Entry("rewind"), Entry("rewind")])
    assert prompts(chat.host) == ["hello"]
    assert set(box.defaults) == {""}


def test_commands_that_fail_leave_the_chat_running(world: dict[str, Any]) -> None:
    chat, _box = run(
        world,
        [
            text("/compact"),  # nothing to compact yet
            text("/rename"),
            text("/frobnicate"),
            text("hello"),
        ],
    )
    out = world["out"].getvalue()
    assert "nothing to compact yet" in out
    assert "/rename needs a title" in out
    assert "unknown command /frobnicate" in out
    assert prompts(chat.host) == ["hello"]


def test_clear_fork_and_resume_switch_the_session(world: dict[str, Any]) -> None:
    host: AgentHost = world["host"]
    first = host.session.session_id
    run(world, [text("one"), text("/fork"), text("two in the fork")])
    fork = host.session.session_id
    assert fork != first and prompts(host) == ["one", "two in the fork"]
    run(world, [text("/branch")])
    assert host.session.session_id not in (first, fork)
    run(world, [text("/clear"), text("after clearing")])
    assert host.session.session_id not in (first, fork) and prompts(host) == ["after clearing"]
    run(world, [text(f"/resume {first}"), text("three")])
    assert host.session.session_id == first
    assert prompts(host) == ["one", "three"]


def test_each_command_typed_goes_to_history_once(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_choices(monkeypatch, 0, 0)
    entries = [text("one"), text("/compact"), text("/fork"), text("/clear"), text("/rename x")]
    entries += [text("/cost"), text("two"), Entry("rewind"), text("/help")]
    run(world, entries)
    displays = [h.display for h in iter_history(world["layout"])]
    # /fork is recorded by the engine as the client's /branch
    assert displays == [
        "one",
        "/compact",
        "/branch",
        "/clear",
        "/rename x",
        "/cost",
        "two",
        "/rewind",
        "/help",
    ]


def test_a_fork_restores_what_bash_changed_before_and_after_the_fork_point(
    world: dict[str, Any],
) -> None:
    from sessiontree.checkpoints.bash_capture import read_capture_log

    host: AgentHost = world["host"]
    project: Path = world["project"]
    first = host.turn("one [[BASH echo first > b.txt]]").prompt_uuid
    second = host.turn("two [[BASH echo second > b.txt]]").prompt_uuid
    original = host.session.path
    logged = len(read_capture_log(original))
    host.fork()
    # the fork keeps the prompts, with what Bash changed in them
    assert [r.prompt_id for r in read_capture_log(host.session.path)] == [first, second]
    fourth = host.turn("in the fork [[BASH echo fourth > b.txt]]").prompt_uuid
    assert len(read_capture_log(original)) == logged  # the fork's commands are its own
    assert read_capture_log(host.session.path)[-1].prompt_id == fourth

    from sessiontree.chat.rewind_menu import rewind_items

    transcript = Transcript.open(host.session.path)
    items = rewind_items(world["layout"], transcript, host.session.tip, project=project)
    # the menu offers restoring code at the copied prompts too
    assert [(i.uuid, i.restorable) for i in items] == [(first, 1), (second, 1), (fourth, 1)]
    assert "code" in " ".join(str(a) for a in items[0].actions())
    host.rewind(fourth, conversation=False, code=True)  # as before the fork's own turn
    assert (project / "b.txt").read_text() == "second\n"
    host.rewind(second, conversation=False, code=True)  # before the fork point
    assert (project / "b.txt").read_text() == "first\n"
    host.rewind(first, conversation=False, code=True)
    assert not (project / "b.txt").exists()


def test_help_lists_the_offline_directives_when_the_provider_is_offline(
    world: dict[str, Any],
) -> None:
    """/help with the offline provider says what it understands: each directive, and
    each one written as /help shows it does what it says."""
    run(world, [text("/help")])
    out = world["out"].getvalue()
    for directive in ("[[WRITE ", "[[READ ", "[[EDIT ", "[[BASH ", "[[BIG ", "[[PAR "):
        assert directive in out
    assert "offline" in out
    project: Path = world["project"]
    run(world, [text("[[WRITE notes.txt|one\\ntwo]] then [[EDIT notes.txt|two|three]]")])
    assert (project / "notes.txt").read_text() == "one\nthree"
    # without the offline provider, /help lists the commands alone
    assert not any("[[" in line for line in help_lines())
