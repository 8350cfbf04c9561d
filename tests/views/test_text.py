"""Text from transcripts is printed with everything that acts on a terminal escaped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessiontree.model.records import one_line
from sessiontree.views.text import printable, printable_line


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


def _folded(text: str, limit: int) -> str:
    """What ``one_line`` gives, by its definition: the whole text folded, then cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_TEXT = st.text(
    alphabet=st.sampled_from(["a", "é", "語", " ", "\n", "\t", "\r", "\u3000", "\x1b", "\u202e"]),
    max_size=3000,
)


@given(text=_TEXT, limit=st.integers(min_value=1, max_value=300))
def test_one_line_folds_a_prefix_with_the_whole_texts_result(text: str, limit: int) -> None:
    """It folds only a prefix (a tool result may be megabytes): the result is still the
    whole text's, folded then cut; with ``shown``, of the text escaped first."""
    assert one_line(text, limit) == _folded(text, limit)
    assert printable_line(text, limit) == _folded(printable(text), limit)


def test_one_line_of_long_whitespace_runs() -> None:
    """A prefix that folds to too little is taken longer (a run of blanks)."""
    text = " " * 100_000 + "word " * 100
    assert one_line(text, 20) == "word word word word…"
    assert one_line(text + "end", 1000) == ("word " * 100).strip() + " end"
