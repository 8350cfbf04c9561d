"""Session listing: head/tail reads, the client's message count, the incremental cache."""

from __future__ import annotations

import json
from pathlib import Path

from sessiontree.catalog.index import list_sessions, read_session_info
from sessiontree.storage.layout import Layout

SID = "12345678-1234-4234-8234-123456789abc"


def _write(path: Path, records: list[dict[str, object]], mode: str = "w") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode) as handle:
        for record in records:
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")


def _headless(n: int, start: int = 0) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(start, start + n):
        out.append(
            {
                "type": "user",
                "uuid": f"u{i}",
                "cwd": "/p",
                "timestamp": f"2026-01-01T00:00:{i:02d}Z",
                "message": {"role": "user", "content": f"prompt {i}"},
            }
        )
        out.append(
            {
                "type": "assistant",
                "uuid": f"a{i}",
                "timestamp": f"2026-01-01T00:00:{i:02d}Z",
                "message": {
                    "role": "assistant",
                    "id": f"m{i}",
                    "content": [{"type": "text", "text": '"type":"user" inside text'}],
                },
            }
        )
    return out


def test_headless_session_is_counted_and_counting_continues(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    path = tmp_path / "projects" / "-p" / f"{SID}.jsonl"
    _write(path, _headless(3))
    cache = tmp_path / "cache.msgpack"
    first = list_sessions(layout, cache_file=cache)[0]
    assert first.messageCount == 6  # escaped quotes inside text never count
    assert first.firstPrompt == "prompt 0"
    assert first.cwd == "/p"
    _write(path, _headless(2, start=3), mode="a")
    again = list_sessions(layout, cache_file=cache)[0]
    assert again.messageCount == 10
    assert again.updatedAt == "2026-01-01T00:00:04Z"
    assert again.startedAt == first.startedAt


def test_client_count_wins_and_titles_come_from_the_tail(tmp_path: Path) -> None:
    path = tmp_path / "projects" / "-p" / f"{SID}.jsonl"
    _write(
        path,
        [
            *_headless(2),
            {
                "type": "system",
                "subtype": "turn_duration",
                "uuid": "t",
                "messageCount": 17,
                "timestamp": "2026-01-01T00:01:00Z",
            },
            {"type": "ai-title", "aiTitle": "Made by AI"},
            {"type": "custom-title", "customTitle": "Mine"},
            {"type": "last-prompt", "lastPrompt": "prompt 1", "leafUuid": "t"},
        ],
    )
    info = read_session_info(path)
    assert info.messageCount == 17
    assert (info.title, info.customTitle, info.aiTitle) == ("Mine", "Mine", "Made by AI")
    assert info.lastPrompt == "prompt 1"


def test_first_prompt_skips_meta_commands_and_tool_results(tmp_path: Path) -> None:
    path = tmp_path / "projects" / "-p" / f"{SID}.jsonl"
    _write(
        path,
        [
            {
                "type": "user",
                "uuid": "c",
                "isMeta": True,
                "message": {"content": "<local-command-caveat>x"},
            },
            {
                "type": "user",
                "uuid": "d",
                "message": {"content": "<command-name>/clear</command-name>"},
            },
            {
                "type": "user",
                "uuid": "r",
                "message": {"content": [{"type": "tool_result", "tool_use_id": "t"}]},
            },
            {
                "type": "user",
                "uuid": "p",
                "message": {
                    "content": 'look: <pasted_content id="1">\nbig\n</pasted_content id="1"> ok'
                },
            },
        ],
    )
    assert read_session_info(path).firstPrompt == "look: big ok"


def test_a_rewritten_file_is_read_again(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    path = tmp_path / "projects" / "-p" / f"{SID}.jsonl"
    _write(path, _headless(4))
    cache = tmp_path / "cache.msgpack"
    assert list_sessions(layout, cache_file=cache)[0].messageCount == 8
    _write(path, _headless(1))  # shorter: not an append, so nothing cached is trusted
    assert list_sessions(layout, cache_file=cache)[0].messageCount == 2
