"""Text from a transcript or the history never acts on the terminal: every command that
prints for people shows its escape sequences, controls and bidi overrides escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from tests.cli.test_cli import BASIC, run

#: Colour, a window title, clear screen, a carriage return and a bidi override.
HOSTILE = "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b[2J\rover \u202egnp.exe"
RAW = ("\x1b", "\x07", "\r", "\u202e")
SUBAGENT_SESSION = "a771dff3-5078-4c59-bdb9-12a3844ac099"


def _rewrite(path: Path, change: object) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for record in lines:
        change(record)  # type: ignore[operator]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))


@pytest.fixture
def hostile(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    """01-basic with the escapes in its first prompt and in its cwd."""
    root: Path = fixture_root("01-basic")

    def change(record: dict[str, object]) -> None:
        message = record.get("message")
        if record.get("type") == "user" and isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str) and content.startswith("p1 "):
                message["content"] = f"p1 {HOSTILE} end"
        if "cwd" in record:
            record["cwd"] = f"/home/dev/{HOSTILE}"

    _rewrite(next(root.glob(f"projects/*/{BASIC}.jsonl")), change)
    return root


def assert_shown_escaped(out: str, *, carriage_return: bool = True) -> None:
    for raw in RAW:
        assert raw not in out, repr(raw)
    assert "\\x1b[31mred\\x1b[0m \\x1b]0;title\\x07 \\x1b[2J" in out
    assert "\\u202egnp.exe" in out
    if carriage_return:
        assert "\\x0dover" in out


def run_wide(root: Path, *args: str) -> str:
    """A command's output on a terminal wide enough that ``tree`` cuts no line."""
    result = CliRunner().invoke(cli, ["--root", str(root), *args], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_show_prints_transcript_controls_escaped(hostile: Path) -> None:
    assert_shown_escaped(run(hostile, "show", BASIC))
    assert_shown_escaped(run_wide(hostile, "show", BASIC, "--all-branches"))


def test_tree_prints_transcript_controls_escaped(hostile: Path) -> None:
    assert_shown_escaped(run_wide(hostile, "tree", BASIC))


def test_search_prints_transcript_controls_escaped(hostile: Path) -> None:
    out = run(hostile, "search", "gnp.exe", "--all")
    assert "\n1 hit(s)\n" in out
    # The snippet folds whitespace (a carriage return among it) into single spaces.
    assert_shown_escaped(out, carriage_return=False)


def test_sessions_prints_transcript_controls_escaped(hostile: Path) -> None:
    out = run(hostile, "sessions", "--all")  # the width CliRunner gives rich: 80
    for raw in RAW:
        assert raw not in out, repr(raw)
    assert "\\x1b" in out


def test_sessions_wide_shows_title_and_cwd_escaped(hostile: Path) -> None:
    from click.testing import CliRunner

    from sessiontree.cli.main import cli

    result = CliRunner().invoke(
        cli, ["--root", str(hostile), "sessions", "--all"], env={"COLUMNS": "400"}
    )
    assert result.exit_code == 0, result.output
    title, cwd = result.output.splitlines()[1].split("KB  ", 1)[1].split("  /home/dev/")
    assert_shown_escaped(title, carriage_return=False)  # the listing folds its whitespace
    assert_shown_escaped(cwd)


def test_json_keeps_the_text_as_it_is(hostile: Path) -> None:
    """--json carries the text unchanged (JSON escapes the controls itself)."""
    raw = "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b[2J"  # (whitespace is folded)
    document = json.loads(run(hostile, "show", BASIC, "--json"))
    assert any(raw in m["text"] for m in document["messages"])
    hits = json.loads(run(hostile, "search", "gnp.exe", "--all", "--json"))
    assert hits and raw in hits[0]["snippet"]  # type: ignore[index]


def test_tree_prints_subagent_fields_escaped(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_root("14-subagent")
    meta = next(root.glob(f"projects/*/{SUBAGENT_SESSION}/subagents/*.meta.json"))
    fields = json.loads(meta.read_text())
    fields["description"] = HOSTILE
    fields["agentType"] = "\x1b[2Jtype"
    meta.write_text(json.dumps(fields))
    out = run_wide(root, "tree", SUBAGENT_SESSION)
    line = next(line for line in out.splitlines() if line.startswith("subagent "))
    assert "(\\x1b[2Jtype)" in line
    assert_shown_escaped(line.split(": ", 1)[1])


def test_context_prints_transcript_controls_escaped(hostile: Path) -> None:
    out = run(hostile, "context", BASIC)
    assert_shown_escaped(out)


def test_context_names_a_block_it_does_not_render(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_root("01-basic")

    def change(record: dict[str, object]) -> None:
        message = record.get("message")
        if record.get("type") == "user" and isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str) and content.startswith("p1 "):
                image = {"type": "image", "source": {"type": "base64", "data": ""}}
                message["content"] = [{"type": "text", "text": content}, image]

    _rewrite(next(root.glob(f"projects/*/{BASIC}.jsonl")), change)
    assert "\n[image]\n" in run(root, "context", BASIC)


#: What a pasted log may hold that acts on a terminal: an OSC title, a clear screen, an
#: OSC 52 clipboard write, a C1 CSI (one byte) and a bidi override.
ACTING = "\x1b]0;owned\x07 \x1b[2J \x1b]52;c;aGVsbG8=\x07 \x9b31m \u202eexe"
#: Every character that acts on a terminal; newline and tab lay text out.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

#: Every command that prints for people, over a session and a history holding ACTING.
HUMAN_READABLE = [
    ("history",),
    ("history", "--search", "p1"),
    ("show", BASIC),
    ("show", BASIC, "--all-branches", "--full"),
    ("tree", BASIC),
    ("context", BASIC),
    ("search", "end", "--all"),
    ("sessions", "--all"),
    ("prompts", BASIC),
    ("doctor",),
    ("doctor", BASIC),
    ("checkpoints", BASIC),
    *(("usage", "--all", "--by", by) for by in ("day", "session", "project", "model")),
    ("secrets",),
    ("fork", BASIC, "--dry-run"),
    ("fork", BASIC),
    ("rewind", BASIC, "--to", "1", "--dry-run"),
    ("restore", BASIC, "--to", "1", "--dry-run"),  # refused: the project folder is gone
]


@pytest.fixture
def acting(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    """01-basic with ACTING in a prompt, the cwd, the model, the git branch, a tracked
    file's path, history.jsonl's text and project, and a stray transcript's name (the
    file holding a key, for ``secrets``)."""
    root: Path = fixture_root("01-basic")
    transcript = next(root.glob(f"projects/*/{BASIC}.jsonl"))

    def change(record: dict[str, Any]) -> None:
        message = record.get("message")
        if record.get("type") == "user" and isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str) and content.startswith("p1 "):
                message["content"] = f"p1 {ACTING} end"
        if record.get("type") == "assistant" and isinstance(message, dict):
            message["model"] = f"claude-{ACTING}"
        for field in ("cwd", "gitBranch"):
            if field in record:
                record[field] = f"/home/dev/{ACTING}"
        snapshot = record.get("snapshot")
        if isinstance(snapshot, dict):
            tracked = snapshot["trackedFileBackups"]
            for path in list(tracked):
                tracked[f"{path}{ACTING}"] = tracked.pop(path)

    _rewrite(transcript, change)
    key = {"key": "AKIA" + "Q7RZ2M4KX9WB3TPL"}  # (a stray file holding a secret)
    (transcript.parent / f"{ACTING}.jsonl").write_text(json.dumps(key) + "\n")
    history = root / "history.jsonl"
    entries = [json.loads(line) for line in history.read_text().splitlines()]
    for entry in entries:
        entry["display"] += f" {ACTING}"
        entry["project"] += ACTING
    history.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return root


@pytest.mark.parametrize("args", HUMAN_READABLE, ids=" ".join)
def test_no_human_readable_output_writes_a_control(acting: Path, args: tuple[str, ...]) -> None:
    """Whatever a transcript, history or file name holds, no command printing for people
    writes a control (ESC, C0, C1) or bidi override: each is shown as an escape."""
    result = CliRunner().invoke(
        cli, ["--root", str(acting), *args], env={"COLUMNS": "400"}, catch_exceptions=False
    )
    assert result.exit_code in (0, 1), result.output  # doctor: 1, problems found
    for stream in (result.stdout, result.stderr):
        assert CONTROL.findall(stream) == [], stream
    assert "\\x1b" in result.stdout + result.stderr  # shown, not dropped


def test_history_shows_the_controls_escaped(acting: Path) -> None:
    out = run_wide(acting, "history")
    assert out.count("\\x1b]0;owned\\x07 \\x1b[2J \\x1b]52;c;aGVsbG8=\\x07 \\x9b31m") >= 6
    assert "\\u202eexe" in out
    raw = json.loads(run(acting, "history", "--json"))
    assert all(e["text"].endswith(f" {ACTING}") for e in raw)  # type: ignore[union-attr]
