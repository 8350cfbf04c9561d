"""``history`` for people (issue 28): newest first, one line an entry with its session
(short id) and project, fitting 80 columns; ``--json`` keeps its order (oldest first)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from rich.cells import cell_len

from sessiontree.cli.main import cli

PLAIN = {"COLUMNS": "80", "NO_COLOR": "1"}


def history(root: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--root", str(root), "history", *args], env=PLAIN)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_newest_first_with_session_and_project(rewind: Path) -> None:
    entries = json.loads(history(rewind, "--json"))
    assert [e["timestamp"] for e in entries] == sorted(e["timestamp"] for e in entries)
    header, *rows = history(rewind).splitlines()
    assert header.split() == ["time", "session", "project", "prompt"]
    assert len(rows) == len(entries)  # one line each
    assert all(cell_len(line) <= 80 for line in (header, *rows))
    for row, entry in zip(rows, reversed(entries), strict=True):
        *_when, session, project, prompt = row.split(maxsplit=5)
        assert session == entry["sessionId"][:8]
        assert project.startswith("…") and entry["project"].endswith(project[1:])
        typed = " ".join(entry["text"].split())
        assert typed.startswith(prompt.rstrip().removesuffix("…"))


def test_a_long_paste_is_one_line(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_root("12-big-paste")
    entries = json.loads(history(root, "--json"))
    assert any(e["text"].count("\n") > 30 for e in entries)
    lines = history(root).splitlines()
    assert len(lines) == 1 + len(entries) and all(cell_len(line) <= 80 for line in lines)
    assert any(line.rstrip().endswith("…") for line in lines)
