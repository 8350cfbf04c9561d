"""``show`` as a reader: headers, full text, calls as what they act on, results folded."""

from __future__ import annotations

import io

from rich.console import Console

from sessiontree.model.records import Record
from sessiontree.views.reader import FOLDED_LINES, call_summary, render_reader


def shown(records: list[Record], *, full: bool = False) -> str:
    out = Console(file=io.StringIO(), width=100, color_system=None)
    render_reader(out, records, full=full)
    value = out.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(value, str)
    return value


def record(kind: str, content: object, uuid: str = "abcdef0123") -> Record:
    role = "assistant" if kind == "assistant" else "user"
    return Record(
        {
            "type": kind,
            "uuid": uuid,
            "timestamp": "2026-01-01T10:00:00.000Z",
            "message": {"role": role, "content": content},
        }
    )


def test_a_call_shows_what_it_acts_on() -> None:
    assert call_summary("Bash", {"command": "ls  -la\n/tmp"}) == "Bash: ls -la /tmp"
    assert call_summary("Edit", {"file_path": "src/a.py", "old_string": "x"}) == "Edit: src/a.py"
    assert call_summary("Mystery", {"k": 1}) == 'Mystery: {"k":1}'
    long = call_summary("Mystery", {"k": "x" * 500})
    assert len(long) < 220 and long.endswith("…")


def test_prompts_and_replies_in_full_results_folded_unless_full() -> None:
    output = "\n".join(f"line {i}" for i in range(10))
    records = [
        record("user", "please list /tmp " + "word " * 40),
        record("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash",
                              "input": {"command": "ls /tmp"}}]),
        record("user", [{"type": "tool_result", "tool_use_id": "t1", "content": output}]),
        record("assistant", [{"type": "text", "text": "Done."}]),
    ]  # fmt: skip
    text = shown(records)
    assert "user abcdef01" in text and "result abcdef01" in text
    assert text.count("word") == 40  # the prompt whole, wrapped
    assert "→ Bash: ls /tmp" in text
    assert "line 3" in text and "line 4" not in text
    assert f"… {10 - FOLDED_LINES} more line(s) (--full shows them)" in text
    unfolded = shown(records, full=True)
    assert "line 9" in unfolded and "more line(s)" not in unfolded
    assert '"command": "ls /tmp"' in unfolded


def test_transcript_text_cannot_act_on_the_terminal() -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J"
    text = shown(
        [record("user", hostile), record("assistant", [{"type": "text", "text": hostile}])]
    )
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;owned\\x07" in text
