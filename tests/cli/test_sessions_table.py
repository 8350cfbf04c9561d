"""The ``sessions`` table at any width: the short id and the size whole on every row,
title and cwd cut first, ids that share their first 8 characters shown until they differ."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.listing import build_short_ids
from sessiontree.cli.main import cli
from tests.cli.test_cli import REWIND, run_json

#: A session id that shares its first 11 characters with REWIND (``b06189e0-a9``).
TWIN = "b06189e0-a9ff-4000-8000-000000000000"
SIZE = re.compile(r"(?<![\d.])\d+(\.\d)? (B|KB|MB|GB)(?!\S)")


@pytest.fixture
def crowded(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    """02-rewind-both, with a copy of its session under an id sharing REWIND's first 11
    characters, and a long title on the original."""
    root: Path = fixture_root("02-rewind-both")
    original = next(root.glob(f"projects/*/{REWIND}.jsonl"))
    shutil.copy(original, original.with_name(f"{TWIN}.jsonl"))
    with original.open("a") as handle:
        title = "a title much longer than any terminal is wide " * 5
        line = {"type": "custom-title", "customTitle": title, "sessionId": REWIND}
        handle.write(json.dumps(line) + "\n")
    return root


def table(root: Path, width: int) -> list[str]:
    result = CliRunner().invoke(
        cli,
        ["--root", str(root), "sessions", "--all"],
        env={"COLUMNS": str(width)},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_every_row_keeps_its_id_and_size_whole(crowded: Path, width: int) -> None:
    header, *rows = table(crowded, width)
    assert header.split()[0] == "session"
    assert len(rows) == 2
    assert all(len(line) <= width for line in (header, *rows))
    ids = sorted(line.split()[0] for line in rows)
    assert ids == [REWIND[:12], TWIN[:12]]  # one past their common 11 characters
    for line in rows:
        assert SIZE.search(line), line
        if line.startswith(REWIND[:12]):
            assert "a title" in line and "…" in line  # cut, and says so
    if width >= 80:
        assert "cwd" in header.split()


def test_wide_enough_nothing_is_cut(crowded: Path) -> None:
    header, *rows = table(crowded, 240)
    assert header.split() == ["session", "updated", "msgs", "size", "title", "cwd"]
    assert all(line.rstrip().endswith("  /home/dev/02-rewind-both") for line in rows)
    long, short = sorted(rows)  # REWIND, then TWIN
    assert "…" not in short
    title = long.split("KB  ", 1)[1].split("  /home", 1)[0]
    assert len(title) == 80 and title.endswith("…")  # a title is cut at 80 characters


def test_narrower_than_the_table_leaves_out_columns_never_the_id(crowded: Path) -> None:
    header, *rows = table(crowded, 30)
    assert header.split()[:2] == ["session", "size"]
    for line in rows:
        assert line.split()[0] in (REWIND[:12], TWIN[:12])
        assert SIZE.search(line), line


def test_json_keeps_the_full_ids(crowded: Path) -> None:
    rows = run_json(crowded, "sessions", "--all")
    assert sorted(r["sessionId"] for r in rows) == sorted([REWIND, TWIN])  # type: ignore[index]


def test_short_ids_grow_only_where_they_collide() -> None:
    ids = ["aaaaaaaa-1111", "aaaaaaaa-1122", "bbbbbbbb-0000", "aaaaaaaa-1111", "abc"]
    assert build_short_ids(ids) == [
        "aaaaaaaa-1111",  # the same id twice: shown whole, it cannot differ
        "aaaaaaaa-112",
        "bbbbbbbb",
        "aaaaaaaa-1111",
        "abc",
    ]
    assert build_short_ids([]) == []
    assert build_short_ids(["01234567", "0123"], minimum=4) == ["01234", "0123"]
