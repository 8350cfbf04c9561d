"""Large tool outputs: fixture 13's tool-results file and tool_result text, byte for byte."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from sessiontree.conversation.spill import (
    PERSIST_LIMIT_BYTES,
    build_preview,
    format_persisted_output,
    format_size,
    js_cut,
    new_output_id,
    spill_tool_output,
    tool_result_path,
)
from tests.conftest import FIXTURES

SCENARIO = FIXTURES / "13-big-tool-output" / "claude-home" / "projects"
SID = "243abf46-3738-416b-80a5-665047244ad5"
TRANSCRIPT = SCENARIO / "-home-dev-13-big-tool-output" / f"{SID}.jsonl"
SAVED = TRANSCRIPT.with_suffix("") / "tool-results" / "bfsc7oawx.txt"


def _spilled_record() -> dict[str, Any]:
    for line in TRANSCRIPT.read_text().splitlines():
        record = json.loads(line)
        if "persistedOutputPath" in (record.get("toolUseResult") or {}):
            return record
    raise AssertionError("fixture 13 has no spilled tool result")


def test_format_reproduces_fixture_13_tool_result() -> None:
    record = _spilled_record()
    output = SAVED.read_text()
    result = record["toolUseResult"]
    content = format_persisted_output(
        path=result["persistedOutputPath"],
        size=len(output.encode()),
        stdout=js_cut(output, 30_000),
    )
    assert content == record["message"]["content"][0]["content"]


def test_spill_writes_the_file_and_the_transcript_fields(tmp_path: Path) -> None:
    record = _spilled_record()
    output = SAVED.read_text()
    transcript = tmp_path / "projects" / "-p" / f"{SID}.jsonl"
    spilled = spill_tool_output(transcript, output=output, output_id="bfsc7oawx")
    assert spilled is not None
    assert spilled.path == transcript.with_suffix("") / "tool-results" / "bfsc7oawx.txt"
    assert spilled.path.read_bytes() == SAVED.read_bytes()
    assert stat.S_IMODE(spilled.path.stat().st_mode) == 0o600
    expected = record["toolUseResult"]
    fields = spilled.tool_use_result_fields()
    assert fields["stdout"] == expected["stdout"]
    assert fields["persistedOutputSize"] == expected["persistedOutputSize"] == 184_000
    assert fields["persistedOutputPath"] == str(spilled.path)
    # Same text as the client's once its path is put in place of ours.
    want = record["message"]["content"][0]["content"].replace(
        expected["persistedOutputPath"], str(spilled.path)
    )
    assert spilled.content == want


def test_small_output_stays_inline(tmp_path: Path) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    assert spill_tool_output(transcript, output="x" * 30_000) is None
    assert not (tmp_path / SID).exists()
    # Bytes, not characters: 10,001 three-byte characters are over the threshold.
    assert spill_tool_output(transcript, output="€" * 10_001, output_id="b00000000") is not None


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (900, "900 bytes"),
        (1024, "1KB"),
        (2000, "2KB"),
        (1280, "1.3KB"),  # 1.25 exactly: JavaScript's toFixed rounds the tie up
        (184_000, "179.7KB"),
        (PERSIST_LIMIT_BYTES, "64MB"),
        (3 * 1024**3, "3GB"),
    ],
)
def test_format_size_matches_the_client(size: int, shown: str) -> None:
    assert format_size(size) == shown


def test_preview_cut_rule() -> None:
    lines = "".join(f"{i:03d}" + "-" * 42 + "\n" for i in range(100))  # 46 chars a line
    preview, more = build_preview(lines)
    assert more and preview == lines[: 43 * 46 - 1]  # back to the last newline, left out
    no_newline = "y" * 5_000
    assert build_preview(no_newline) == ("y" * 2_000, True)
    late = "z" * 900 + "\n" + "z" * 3_000  # the only newline is in the first half: ignored
    assert build_preview(late)[0] == late[:2_000]
    assert build_preview("short\n") == ("short\n", False)


def test_whole_output_preview_has_no_ellipsis() -> None:
    content = format_persisted_output(path="/p", size=40_000, stdout="a\nb")
    assert content.endswith("Preview (first 2KB):\na\nb\n</persisted-output>")


def test_preview_cannot_close_the_block() -> None:
    content = format_persisted_output(path="/p", size=40_000, stdout="x</persisted-output>y")
    assert content.count("</persisted-output>") == 1
    assert "x<\\/persisted-output>y" in content


def test_js_cut_never_splits_a_surrogate_pair() -> None:
    text = "a" + "😀" * 3  # 1 + 2×3 UTF-16 units
    assert js_cut(text, 2) == "a"
    assert js_cut(text, 3) == "a😀"
    assert js_cut(text, 100) == text


def test_persist_limit_message(tmp_path: Path) -> None:
    content = format_persisted_output(path="/p", size=PERSIST_LIMIT_BYTES + 5, stdout="a")
    assert content.startswith(
        "<persisted-output>\nOutput exceeded the 64MB persist limit; "
        "only the first 64MB were saved to: /p\n\n"
    )


def test_output_id_scheme() -> None:
    assert new_output_id(token_bytes=lambda n: bytes(range(n))) == "b01234567"
    assert new_output_id(token_bytes=lambda n: bytes([36 + 35] * n)) == "bzzzzzzzz"
    drawn = new_output_id()
    assert len(drawn) == 9 and drawn[0] == "b" and drawn[1:].isalnum() and drawn.islower()


def test_output_id_cannot_walk_out(tmp_path: Path) -> None:
    from sessiontree.errors import Refused

    with pytest.raises(Refused):
        tool_result_path(tmp_path / f"{SID}.jsonl", "../../evil")
