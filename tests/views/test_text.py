"""Text from transcripts is printed with everything that acts on a terminal escaped."""

from __future__ import annotations

from sessiontree.views.text import printable


def test_escape_sequences_and_controls_are_shown_escaped() -> None:
    hostile = "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b[2J\rover\x00 \x9b1m \u202egnp.exe"
    shown = printable(hostile)
    assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
    assert "\x00" not in shown and "\x9b" not in shown and "\u202e" not in shown
    assert shown == (
        "\\x1b[31mred\\x1b[0m \\x1b]0;title\\x07 \\x1b[2J\\x0dover\\x00 \\x9b1m \\u202egnp.exe"
    )


def test_text_layout_and_other_scripts_are_kept() -> None:
    text = "line one\n\tindented — ünïcode 日本語 🎉"
    assert printable(text) == text
