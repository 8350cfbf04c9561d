"""A search hit's snippet with its matches marked, escaped."""

from __future__ import annotations

from sessiontree.views.html import marked


def test_marked_escapes_every_part_and_marks_only_valid_ranges() -> None:
    text = '<script>alert(1)</script> and "kelvin" <img onerror=x>'
    at = text.index("kelvin")
    out = str(marked(text, [[at, at + 6], [5, 2], [-1, 3], [0, 999], "x", [at + 1, at + 3]]))
    assert "<script>" not in out and "<img" not in out
    assert out.count("<mark>") == 1 and "<mark>kelvin</mark>" in out
    assert str(marked("a<b", None)) == "a&lt;b"


def test_marked_shows_control_characters_as_escapes_around_the_marks() -> None:
    """A snippet of a pasted log: its ESC shown as ``\\x1b``, the match still marked
    (the ranges index the text as stored)."""
    text = "\x1b[31mkelvin\x1b[0m \u202eend"
    at = text.index("kelvin")
    out = str(marked(text, [[at, at + 6]]))
    assert "\x1b" not in out and "\u202e" not in out
    assert out == "\\x1b[31m<mark>kelvin</mark>\\x1b[0m \\u202eend"
