"""The terminal's logic apart from prompt_toolkit: commands, pastes, recall, the rewind
menu, the picker, menus, the turn view's summaries and the permission answers."""

from __future__ import annotations

import io
import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console

from sessiontree.catalog.index import SessionInfo
from sessiontree.chat.commands import Command, complete_commands, help_lines, parse_command
from sessiontree.chat.menu import MenuModel
from sessiontree.chat.pastes import (
    PasteBook,
    fold_stored_pastes,
    is_placeholder_paste,
    newline_limit,
)
from sessiontree.chat.picker import PickerModel, age, project_sessions, size
from sessiontree.chat.recall import load_recall, order_for_recall
from sessiontree.chat.render import (
    TurnView,
    conversation_lines,
    tool_call_line,
    tool_result_line,
)
from sessiontree.chat.repl import parse_permission_answer
from sessiontree.chat.rewind_menu import ACTIONS, rewind_items
from sessiontree.checkpoints.capture import FileHistory
from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import Record
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout

# -- commands ------------------------------------------------------------------------------


def test_a_slash_command_and_its_argument() -> None:
    assert parse_command("/compact keep the API notes ") == Command(
        "compact", "keep the API notes", "compact"
    )
    assert parse_command("/clear") == Command("clear", "", "clear")
    assert parse_command("  /Exit") == Command("exit", "", "exit")


def test_aliases_fold_into_their_command() -> None:
    assert parse_command("/branch") == Command("fork", "", "branch")
    assert parse_command("/quit") == Command("exit", "", "quit")


def test_text_that_is_no_command_is_a_prompt() -> None:
    for text in ("hello", "", "/", "/ spaced", "/usr/bin/env is a path", "a /clear"):
        assert parse_command(text) is None, text


def test_unknown_commands_and_misused_arguments_are_problems() -> None:
    unknown = parse_command("/frobnicate now")
    assert unknown is not None and unknown.name is None
    assert unknown.problem == "unknown command /frobnicate (/help lists them)"
    clear = parse_command("/clear everything")
    assert clear is not None and clear.problem == "/clear takes no argument"
    rename = parse_command("/rename")
    assert rename is not None and rename.problem is not None and "needs a title" in rename.problem
    good = parse_command("/rename The new title")
    assert good is not None and good.problem is None and good.argument == "The new title"


def test_a_multi_line_command_argument() -> None:
    command = parse_command("/compact\nkeep the tests\nand the docs")
    assert command == Command("compact", "keep the tests\nand the docs", "compact")


def test_completion_and_help_list_every_command() -> None:
    assert complete_commands("c") == ["clear", "compact", "cost"]
    assert complete_commands("BR") == ["branch"]
    text = "\n".join(help_lines())
    for name in ("rewind", "compact", "clear", "fork", "resume", "rename", "cost", "memory"):
        assert f"/{name}" in text


# -- pastes --------------------------------------------------------------------------------


def test_the_clients_paste_threshold() -> None:
    assert newline_limit(40) == 2 and newline_limit(11) == 1 and newline_limit(5) == 0
    assert not is_placeholder_paste("a\nb\nc", rows=40)  # two newlines: typed in
    assert is_placeholder_paste("a\nb\nc\nd", rows=40)  # three: a placeholder
    assert is_placeholder_paste("a\r\nb\r\nc\r\nd", rows=40)
    assert not is_placeholder_paste("x" * 800, rows=40)
    assert is_placeholder_paste("x" * 801, rows=40)


def test_pastes_become_numbered_placeholders_and_go_with_the_prompt() -> None:
    book = PasteBook()
    assert book.paste("short", rows=40) == "short"
    assert book.paste("one\r\ntwo\r\nthree\r\nfour\n", rows=40) == "[Pasted text #1 +4 lines]"
    assert book.paste("y" * 900, rows=40) == "[Pasted text #2]"
    display = "look at [Pasted text #2] please"
    assert book.for_prompt(display) == {2: "y" * 900}
    assert book.for_prompt("[Pasted text #1 +4 lines] and [Pasted text #9]") == {
        1: "one\ntwo\nthree\nfour\n"
    }


def test_a_stored_prompt_folds_back_to_placeholders_and_round_trips(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, str(tmp_path))
    display = "see [Pasted text #1 +3 lines]then [Pasted text #2 +3 lines]"
    pastes = {1: "a\nb\nc\n", 2: "d\ne\nf\ng"}
    session.append_prompt(display, pastes=pastes)
    stored = Transcript.open(session.path).active_records()[-1].text()
    folded, found = fold_stored_pastes(stored, first_number=4)
    assert folded == "see [Pasted text #4 +2 lines]then [Pasted text #5 +3 lines]"
    again = Session.create(layout, str(tmp_path), session_id=session.session_id)
    again.path = tmp_path / "again.jsonl"
    again.append_prompt(folded, pastes=found)
    assert Transcript.open(again.path).active_records()[-1].text() == stored


def test_a_recalled_prompts_pastes_do_not_overwrite_this_sessions() -> None:
    book = PasteBook()
    book.paste("a\nb\nc\nd", rows=40)
    book.remember({1: "old one", 2: "old two"})
    assert book.texts == {1: "a\nb\nc\nd", 2: "old two"}
    assert book.next_number() == 3


# -- recall --------------------------------------------------------------------------------


def test_recall_offers_this_projects_prompts_first_newest_first() -> None:
    entries = [
        ("p1 old", "/p", {}),
        ("other old", "/q", {}),
        ("p1 new", "/p", {1: "x"}),
        ("p1 new", "/p", {1: "x"}),
        ("other new", "/q", {}),
        ("  ", "/p", {}),
    ]
    recalled = order_for_recall(entries, "/p")
    assert [r.display for r in recalled] == ["p1 new", "p1 old", "other new", "other old"]
    assert recalled[0].pastes == {1: "x"}


def test_recall_reads_history_jsonl_with_its_pastes(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, str(tmp_path), record_history=True)
    session.append_prompt("first")
    session.append_prompt("see [Pasted text #1 +3 lines]", pastes={1: "a\nb\nc\n" + "z" * 2000})
    recalled = load_recall(layout, str(tmp_path))
    assert [r.display for r in recalled] == ["see [Pasted text #1 +3 lines]", "first"]
    assert recalled[0].pastes == {1: "a\nb\nc\n" + "z" * 2000}  # from paste-cache/
    assert load_recall(Layout(tmp_path / "none"), "/x") == []


# -- the rewind menu -----------------------------------------------------------------------


def _session(tmp_path: Path) -> tuple[Layout, Session, Path]:
    layout = Layout(tmp_path / "root")
    project = tmp_path / "project"
    project.mkdir()
    counter = itertools.count()
    start = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def clock() -> datetime:
        return start + timedelta(seconds=next(counter))

    session = Session.create(layout, str(project), clock=clock)
    session.file_history = FileHistory(layout, session.session_id, project, clock=clock)
    return layout, session, project


def _turn(session: Session, prompt: str, writes: dict[Path, str]) -> str:
    uuid = session.append_prompt(prompt)
    for n, (path, text) in enumerate(writes.items()):
        tool_id = f"toolu_{uuid[-6:]}{n}"
        session.append_response(
            [
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": "Write",
                    "input": {"file_path": str(path)},
                }
            ],
            stop_reason="tool_use",
        )
        session.before_edit(path, tool_use_id=tool_id)
        path.write_text(text)
        session.append_tool_result(tool_id, "ok")
    session.append_response([{"type": "text", "text": "Done."}])
    session.end_turn()
    return uuid


def test_rewind_items_count_the_files_each_turn_changed(tmp_path: Path) -> None:
    layout, session, project = _session(tmp_path)
    a, b = project / "a.txt", project / "b.txt"
    a.write_text("a0\n")
    first = _turn(session, "write both", {a: "a1\n", b: "b1\n"})
    second = _turn(session, "just talk", {})
    third = _turn(session, "change a", {a: "a2\n"})
    transcript = Transcript.open(session.path)
    items = rewind_items(layout, transcript, session.tip, project=project)
    assert [(i.number, i.uuid, i.text, i.files_changed) for i in items] == [
        (1, first, "write both", 2),
        (2, second, "just talk", 0),
        (3, third, "change a", 1),  # the last: its checkpoint against the files on disk
    ]
    assert items[0].label() == "write both  (2 files changed)"
    assert items[1].label() == "just talk"
    assert [i.restorable for i in items] == [2, 1, 1]  # what a code restore would change now
    assert items[0].actions() == list(ACTIONS)
    assert items[1].actions() == list(ACTIONS)  # no change of its own, but later ones


def test_rewind_items_follow_the_sessions_tip_after_a_rewind(tmp_path: Path) -> None:
    layout, session, project = _session(tmp_path)
    first = _turn(session, "one", {})
    second = _turn(session, "two", {})
    session.rewind(second)
    transcript = Transcript.open(session.path)
    items = rewind_items(layout, transcript, session.tip, project=project)
    assert [i.uuid for i in items] == [first]
    assert rewind_items(layout, transcript, None, project=project) == []


def test_a_prompt_with_no_checkpoint_offers_no_code_action(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, str(tmp_path))
    session.append_prompt("hello [Pasted text #1 +3 lines]", pastes={1: "a\nb\nc\n"})
    session.append_response([{"type": "text", "text": "hi"}])
    session.end_turn()
    items = rewind_items(layout, Transcript.open(session.path), session.tip, project=tmp_path)
    assert items[0].files_changed is None and not items[0].has_checkpoint
    assert items[0].actions() == ["conversation", "summarize_from", "summarize_up_to", "cancel"]
    assert items[0].label() == "hello [Pasted text #1 +2 lines]"  # the stored text's lines


# -- the picker ----------------------------------------------------------------------------


def _info(sid: str, title: str | None, first: str, updated: str, n_bytes: int) -> SessionInfo:
    return SessionInfo(
        sessionId=sid,
        cwd="/p",
        projectDir="/root/projects/-p",
        path=f"/root/projects/-p/{sid}.jsonl",
        title=title,
        firstPrompt=first,
        startedAt=updated,
        updatedAt=updated,
        messageCount=4,
        sizeBytes=n_bytes,
    )


def test_picker_rows_show_title_age_size_and_first_prompt() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    model = PickerModel(
        [
            _info("s1", "Fix the parser", "the parser drops\nlines", "2026-12-01T11:55:00Z", 2048),
            _info("s2", None, "write docs", "2026-11-28T12:00:00Z", 512),
        ],
        now=now,
    )
    first, second = (text for _sel, text in model.lines())
    assert first.startswith("Fix the parser") and "5m ago" in first and "2.0KB" in first
    assert first.endswith("the parser drops lines")
    assert second.startswith("(untitled)") and "3d ago" in second and "512B" in second
    assert model.lines()[0][0] is True


def test_picker_filters_as_you_type_and_moves_within_bounds() -> None:
    model = PickerModel(
        [
            _info("aaa", "Parser fix", "x", "2026-12-01T11:00:00Z", 1),
            _info("bbb", "Docs", "the PARSER docs", "2026-12-01T10:00:00Z", 1),
            _info("ccc", "Other", "y", "2026-12-01T09:00:00Z", 1),
        ]
    )
    model.move(5)
    assert model.chosen() is not None and model.chosen().sessionId == "ccc"  # type: ignore[union-attr]
    model.move(-9)
    assert model.selected == 0
    model.type("pars")
    assert [i.sessionId for i in model.visible()] == ["aaa", "bbb"]
    model.move(1)
    assert model.chosen().sessionId == "bbb"  # type: ignore[union-attr]
    model.type("er docs")
    assert [i.sessionId for i in model.visible()] == ["bbb"]
    model.type("zzz")
    assert model.chosen() is None and model.lines() == []
    for _ in range(3):
        model.backspace()
    assert [i.sessionId for i in model.visible()] == ["bbb"]


def test_age_and_size() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert age("2026-12-01T11:59:30Z", now=now) == "just now"
    assert age("2026-12-01T09:00:00Z", now=now) == "3h ago"
    assert age("2026-10-01T09:00:00Z", now=now) == "8w ago"
    assert age(None, now=now) == "?"
    assert (size(10), size(4200), size(3 * 1024 * 1024)) == ("10B", "4.1KB", "3.0MB")


def test_project_sessions_lists_this_projects_sessions_only(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    mine = Session.create(layout, "/work/p")
    other = Session.create(layout, "/work/q")
    running = Session.create(layout, "/work/p")
    for session in (mine, other, running):
        session.append_prompt(f"prompt of {session.session_id}")
        session.append_response([{"type": "text", "text": "ok"}])
        session.end_turn()
    found = project_sessions(layout, "/work/p", exclude=running.session_id)
    assert [i.sessionId for i in found] == [mine.session_id]
    assert project_sessions(layout, "/nowhere") == []


# -- menus, rendering, permissions ---------------------------------------------------------


def test_menu_model() -> None:
    menu = MenuModel(["a", "b", "c"], selected=7)
    assert menu.selected == 2
    menu.move(-1)
    assert menu.lines() == [(False, "1. a"), (True, "2. b"), (False, "3. c")]
    assert menu.number(3) and menu.selected == 2
    assert not menu.number(4) and menu.selected == 2


def test_tool_calls_fold_to_one_line() -> None:
    assert tool_call_line("Bash", {"command": "sleep 5\n echo hi"}) == "Bash(sleep 5 echo hi)"
    assert tool_call_line("Write", {"file_path": "/p/a.txt", "content": "..."}) == "Write(/p/a.txt)"
    assert tool_call_line("Grep", {"pattern": "TODO", "path": "src"}) == "Grep(TODO, src)"
    assert tool_call_line("Edit", {"file_path": "a", "replace_all": True}) == "Edit(a (all))"
    assert tool_call_line("Mystery", {"n": 1, "what": "it"}) == "Mystery(it)"
    assert len(tool_call_line("Bash", {"command": "x" * 500}, limit=40)) == 40
    assert tool_call_line("Bash", {"command": "printf '\x1b[2J'"}) == "Bash(printf '\\x1b[2J')"


def test_tool_results_are_summarized() -> None:
    assert tool_result_line("one\ntwo\nthree\n", is_error=False) == "one … +2 lines"
    assert tool_result_line("", is_error=False) == "(no output)"
    assert tool_result_line("boom\nat line 3", is_error=True) == "Error: boom"
    assert tool_result_line([{"type": "text", "text": "a"}, {"type": "image"}], is_error=False) == (
        "a … +1 line"
    )


def test_a_resumed_conversation_is_drawn_as_its_turns_were() -> None:
    def user(content: object, **extra: object) -> Record:
        return Record({"type": "user", "message": {"role": "user", "content": content}, **extra})

    def assistant(*blocks: dict[str, object], **extra: object) -> Record:
        return Record({"type": "assistant", "message": {"content": list(blocks)}, **extra})

    records = [
        Record({"type": "system", "content": "a hook ran"}),
        user("<command-name>/compact</command-name>"),
        user("This session is being continued …", isCompactSummary=True),
        user("caveat", isMeta=True),
        user("fix it\nplease\nnow"),
        assistant({"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "On it."}),
        assistant({"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}),
        user([{"type": "tool_result", "tool_use_id": "t1", "content": "a\nb"}]),
        assistant({"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "x"}}),
        user([{"type": "tool_result", "tool_use_id": "t2", "content": "no", "is_error": True}]),
        assistant({"type": "text", "text": "sub"}, isSidechain=True),
        user([{"type": "text", "text": "a prompt in blocks"}]),
        assistant({"type": "text", "text": "Done.\nTwo lines."}),
    ]
    lines = conversation_lines(records)
    assert lines == [
        ("summary", "(earlier conversation compacted into a summary)"),
        ("prompt", "fix it … +2 lines"),
        ("text", "On it."),
        ("call", "Bash(ls)"),
        ("result", "a … +1 line"),
        ("call", "Read(x)"),
        ("result-error", "Error: no"),
        ("prompt", "a prompt in blocks"),
        ("text", "Done.\nTwo lines."),
    ]
    out = io.StringIO()
    TurnView(Console(file=out, no_color=True, width=80, force_terminal=False)).replay(lines)
    assert out.getvalue().splitlines() == [
        "  (earlier conversation compacted into a summary)",
        "> fix it … +2 lines",
        "⏺ On it.",
        "⏺ Bash(ls)",
        "  ⎿  a … +1 line",
        "⏺ Read(x)",
        "  ⎿  Error: no",
        "> a prompt in blocks",
        "⏺ Done.",
        "Two lines.",
    ]


def test_the_turn_view_streams_text_then_folds_tools() -> None:
    out = io.StringIO()
    view = TurnView(Console(file=out, no_color=True, width=80, force_terminal=False))
    view.on_text("Hello ")
    view.on_text("world")

    class Outcome:
        content = "3 files\na\nb"
        is_error = False

    view.on_tool_call("Glob", {"pattern": "*.py"})
    view.on_tool_result("toolu_1", Outcome())
    view.on_text("Done.")
    view.finish()
    assert out.getvalue() == ("⏺ Hello world\n⏺ Glob(*.py)\n  ⎿  3 files … +2 lines\n⏺ Done.\n")


def test_no_color_means_no_escape_codes() -> None:
    out = io.StringIO()
    view = TurnView(Console(file=out, no_color=True, force_terminal=True, width=80))
    view.on_tool_call("Bash", {"command": "ls"})
    view.say("error: x", "bold red")
    assert "\x1b[3" not in out.getvalue() and "\x1b[9" not in out.getvalue()


def test_permission_answers() -> None:
    assert [parse_permission_answer(a) for a in ("1", "y", "2", "always", "3", "", "n")] == [
        "once",
        "once",
        "always",
        "always",
        "deny",
        "deny",
        "deny",
    ]
    assert parse_permission_answer("maybe") is None


def test_history_written_by_a_session_is_what_recall_reads(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, str(tmp_path), record_history=True)
    session.append_prompt("x")
    line = json.loads(layout.history_path.read_text().splitlines()[0])
    assert line["project"] == str(tmp_path)
    assert [r.display for r in load_recall(layout, str(tmp_path))] == ["x"]


def test_a_worker_threads_permission_question_is_answered_by_the_main_thread() -> None:
    import threading

    from sessiontree.agent.permissions import PermissionRequest
    from sessiontree.chat.repl import Terminal

    out = io.StringIO()
    answers = iter(["what?", "2"])
    asked_on: list[str] = []

    def input_line(prompt: str) -> str:
        asked_on.append(threading.current_thread().name)
        return next(answers)

    terminal = Terminal(
        env={"NO_COLOR": "1"},
        console=Console(file=out, no_color=True, width=100),
        input_line=input_line,
    )
    request = PermissionRequest("Bash", {"command": "rm x"}, "Bash(rm:*)", "Bash(rm x)")
    got: list[str] = []
    worker = threading.Thread(target=lambda: got.append(terminal.ask_permission(request)))
    worker.start()
    while worker.is_alive():
        terminal.serve_asks(0.05)
    assert got == ["always"]
    assert asked_on == ["MainThread", "MainThread"]
    assert "Allow Bash(rm x)?" in out.getvalue()
    assert "don't ask again for Bash(rm:*) in this project" in out.getvalue()


def test_keys_read_during_a_turn_an_esc_alone_interrupts_the_rest_is_kept() -> None:
    import os
    import tty

    from sessiontree.chat.repl import Terminal

    terminal = Terminal(env={"NO_COLOR": "1"}, console=Console(file=io.StringIO()))
    leader, follower = os.openpty()
    tty.setcbreak(follower)  # keys as they come, as quiet_keys sets the terminal
    try:
        terminal._saved_tty = (follower, [], [])  # as while a turn runs (keys quiet)
        assert terminal.watch_keys(0.01) is False  # nothing typed
        os.write(leader, b"ab")
        assert terminal.watch_keys(0.5) is False
        os.write(leader, b"\x1b[A")  # an arrow key: kept, no interruption
        assert terminal.watch_keys(0.5) is False
        os.write(leader, b"\x1b")
        assert terminal.watch_keys(0.5) is True
        os.write(leader, b"c\x1bd")  # a key, Esc, a key
        assert terminal.watch_keys(0.5) is True
        assert terminal.take_typed_ahead() == "ab\x1b[Acd"
        assert terminal.typed_ahead == ""
    finally:
        os.close(leader)
        os.close(follower)
