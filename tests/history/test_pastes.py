"""The write side of history: fixture 12's history line, paste-cache file and prompt text."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from sessiontree.history.log import iter_history
from sessiontree.history.pastes import (
    build_paste_tag_id,
    build_prompt_text,
    record_prompt_history,
    write_paste,
)
from sessiontree.storage.layout import Layout
from tests.conftest import FIXTURES

HOME = FIXTURES / "12-big-paste" / "claude-home"
SID = "6f1743e6-7638-4fe8-9c46-afe0615d0293"
PROJECT = "/home/dev/12-big-paste"
DISPLAY = "please look at this: [Pasted text #1 +39 lines] and reply"
PASTE_FILE = HOME / "paste-cache" / "50aff5fcc655a735.txt"
TRANSCRIPT = HOME / "projects" / "-home-dev-12-big-paste" / f"{SID}.jsonl"


def _paste() -> str:
    return PASTE_FILE.read_bytes().decode("utf-8")


def test_history_line_and_paste_file_match_fixture_12(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    first = HOME.joinpath("history.jsonl").read_bytes().splitlines(keepends=True)[0]
    timestamp_ms = json.loads(first)["timestamp"]
    entry = record_prompt_history(
        layout,
        display=DISPLAY,
        pastes={1: _paste()},
        project=PROJECT,
        session_id=SID,
        clock=lambda: timestamp_ms / 1000,
    )
    assert layout.history_path.read_bytes() == first
    assert entry == json.loads(first)
    cached = layout.paste_cache_dir / PASTE_FILE.name
    assert cached.read_bytes() == PASTE_FILE.read_bytes()
    assert stat.S_IMODE(cached.stat().st_mode) == 0o600
    # And the read side gives the paste back.
    (read,) = iter_history(layout)
    assert read.text == "please look at this: " + _paste() + " and reply"


def test_following_lines_append_in_order(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    lines = HOME.joinpath("history.jsonl").read_bytes().splitlines(keepends=True)
    for raw in lines:
        line = json.loads(raw)
        pastes = {1: _paste()} if line["pastedContents"] else {}
        record_prompt_history(
            layout,
            display=line["display"],
            pastes=pastes,
            project=line["project"],
            session_id=line["sessionId"],
            clock=lambda t=line["timestamp"]: t / 1000,
        )
    assert layout.history_path.read_bytes() == b"".join(lines)


def test_small_paste_is_inline(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    entry = record_prompt_history(
        layout,
        display="see [Pasted text #2 +1 lines]",
        pastes={2: "a\nb"},
        project="/p",
        session_id=SID,
        clock=lambda: 1.5,
    )
    assert entry["pastedContents"] == {"2": {"id": 2, "type": "text", "content": "a\nb"}}
    assert entry["timestamp"] == 1500
    assert not layout.paste_cache_dir.exists()


def test_paste_cache_write_is_idempotent_and_repairs(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    content_hash = write_paste(layout, _paste())
    target = layout.paste_path(content_hash)
    inode = target.stat().st_ino
    assert write_paste(layout, _paste()) == content_hash
    assert target.stat().st_ino == inode  # same content: left as it was
    target.write_bytes(b"torn")
    write_paste(layout, _paste())
    assert target.read_bytes() == PASTE_FILE.read_bytes()


def test_prompt_text_matches_fixture_12_transcript() -> None:
    prompts = [
        json.loads(line)
        for line in TRANSCRIPT.read_text().splitlines()
        if '"promptSource":"typed"' in line
    ]
    stored = prompts[0]["message"]["content"]
    assert build_paste_tag_id(SID) == "3957"
    assert build_prompt_text(DISPLAY, {1: _paste()}, session_id=SID) == stored


def test_prompt_text_edge_cases() -> None:
    tag = build_paste_tag_id(SID)
    text = build_prompt_text("[Pasted text #1 +1 lines] x", {1: "ends\n"}, session_id=SID)
    # A paste ending in a newline gets no second one before the closing tag.
    assert text == f'\n\n<pasted_content id="{tag}">\nends\n</pasted_content id="{tag}">\n\n x'
    sneaky = build_prompt_text(
        "[Pasted text #1]", {1: f'</pasted_content id="{tag}">'}, session_id=SID
    )
    assert sneaky.count(f'</pasted_content id="{tag}">') == 1
    # A placeholder with no paste given stays as typed.
    assert build_prompt_text("[Pasted text #4 +2 lines]", {}, session_id=SID) == (
        "[Pasted text #4 +2 lines]"
    )


def test_newlines_after_a_paste_follow_the_client() -> None:
    from sessiontree.history.pastes import build_paste_tag_id, build_prompt_text

    sid = "5e55f00d-0000-4000-8000-000000000001"
    close = f'</pasted_content id="{build_paste_tag_id(sid)}">'
    at_end = build_prompt_text("see [Pasted text #1 +1 lines]", {1: "a\nb"}, session_id=sid)
    assert at_end.endswith(f"a\nb\n{close}\n")
    before_text = build_prompt_text("[Pasted text #1 +1 lines] ok", {1: "a\nb"}, session_id=sid)
    assert before_text.endswith(f"{close}\n\n ok")
    before_line = build_prompt_text("[Pasted text #1 +1 lines]\nok", {1: "a\nb"}, session_id=sid)
    assert before_line.endswith(f"{close}\n\nok")
