"""Every table for people at 80 columns (issue 28): no line wider, no id or date
wrapped mid-word, the title (or prompt) takes the room left, a folder cut shows its end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from sessiontree.cli.main import cli
from tests.cli.test_cli import REWIND

PLAIN = {"COLUMNS": "80", "NO_COLOR": "1"}
#: A working folder as deep as real ones are.
DEEP = "/home/dev/clients/acme-corporation/backend-services/02-rewind-both"


@pytest.fixture
def deep(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    """02-rewind-both run in a deep folder, with a long title."""
    root: Path = fixture_root("02-rewind-both")
    for path in [*root.glob("projects/*/*.jsonl"), root / "history.jsonl"]:
        text = path.read_text().replace("/home/dev/02-rewind-both", DEEP)
        if path.name == f"{REWIND}.jsonl":
            title = "Rename the units flag and document every choice it takes in the README"
            text += json.dumps({"type": "custom-title", "customTitle": title, "sessionId": REWIND})
            text += "\n"
        path.write_text(text)
    return root


def lines(root: Path, *args: str) -> list[str]:
    result = CliRunner().invoke(cli, ["--root", str(root), *args], env=PLAIN)
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    # (but the prices file's shape usage prints for an unpriced model: copied whole)
    wide = [x for x in out if cell_len(x) > 80 and not x.startswith('  {"models": ')]
    assert not wide, wide
    return out


def test_sessions_title_takes_the_room_and_the_cwd_shows_its_end(deep: Path) -> None:
    header, row = lines(deep, "sessions", "--all")
    assert header.split() == ["session", "updated", "msgs", "size", "title", "cwd"]
    title = row[header.index("title") : header.index("cwd")].strip()
    cwd = row[header.index("cwd") :].strip()
    assert title.startswith("Rename the units") and title.endswith("…")
    assert cwd.startswith("…") and DEEP.endswith(cwd[1:])
    assert cell_len(title) > cell_len(cwd)


@pytest.mark.parametrize("by", ["session", "project", "day", "model"])
def test_usage_keys_are_never_wrapped(deep: Path, by: str) -> None:
    rows = json.loads(CliRunner().invoke(cli, ["--root", str(deep), "usage", "--all",
                                              "--by", by, "--json"]).stdout)  # fmt: skip
    out = lines(deep, "usage", "--all", "--by", by)
    assert out[0].split()[0] == by
    table = out[1 : 2 + len(rows)]  # the rows and the total, one line each
    assert table[-1].split()[0] == "total"
    for line, row in zip(table, rows, strict=False):
        key = line.split("  ")[0]
        if by == "session":
            assert row["key"].startswith(key) and len(key) >= 8
        elif by == "project":
            assert key == row["key"] or (key.startswith("…") and row["key"].endswith(key[1:]))
        else:
            assert key == row["key"]


def test_prompts_history_and_checkpoints_fit(deep: Path) -> None:
    prompts = lines(deep, "prompts", REWIND)
    assert prompts[0].split()[:3] == ["#", "prompt", "time"]
    assert any(line.rstrip().endswith("…") for line in prompts)  # the text cut, says so
    history = lines(deep, "history")
    assert history[0].split() == ["time", "session", "project", "prompt"]
    assert all("…" in line.split(REWIND[:8])[1].split()[0] for line in history[1:])
    assert lines(deep, "checkpoints", REWIND)  # (each line within 80 cells)


def test_prompts_of_a_file_with_none(fixture_root) -> None:  # type: ignore[no-untyped-def]
    """A subagent's transcript has no prompt typed: the table is its header alone."""
    root: Path = fixture_root("14-subagent")
    agent = next(root.glob("projects/*/*/subagents/agent-*.jsonl"))
    assert lines(root, "prompts", str(agent))[0].split()[:3] == ["#", "prompt", "time"]
