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
