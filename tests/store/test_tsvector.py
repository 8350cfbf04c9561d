"""The tsvectors a sync builds: the distinct words local search cuts, within the
server's limits, as the server itself reads them."""

from __future__ import annotations

from typing import Any

import psycopg
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.storage.store.search import (
    MAX_LEXEME_BYTES,
    WORD,
    count_words,
    format_tsvector,
    has_phrase,
    query_terms,
    words_query,
)


def reference(text: str) -> list[str]:
    """The rule, word by word: each word of the text lowered, once, in order."""
    kept: dict[str, None] = {}
    for match in WORD.finditer(text):
        word = match.group().lower()
        if len(word.encode()) <= MAX_LEXEME_BYTES:
            kept.setdefault(word)
    return list(kept)


words = st.sampled_from(["a", "Weather", "py", "İstanbul", "ß", "x" * 600, "é" * 700, "0"])
texts = st.lists(st.one_of(words, st.text(max_size=12)), max_size=60).map(" ".join)


@given(texts)
@settings(max_examples=400)
def test_the_tsvector_is_the_rule_word_by_word(text: str) -> None:
    built = format_tsvector(text)
    expected = reference(text)
    assert built == " ".join(f"'{w}'" for w in expected)
    assert count_words(built) == len(expected)


def test_the_server_reads_what_is_built(conn: psycopg.Connection[Any]) -> None:
    text = "Weather.py İstanbul " + "x" * 3000 + " " + "word " * 300 + "ŉ ǰ"
    built = format_tsvector(text)
    (lexemes,) = conn.execute("SELECT tsvector_to_array(%s::tsvector)", (built,)).fetchone()
    assert sorted(lexemes) == sorted(reference(text))
    assert len(lexemes) == count_words(built)


def test_a_plain_query_asks_for_every_word_and_checks_phrases_on_the_text(
    conn: psycopg.Connection[Any],
) -> None:
    query = words_query("weather.py cels")
    assert query == "'weather' & 'py':* & 'cels':*"
    found = conn.execute(
        "SELECT %s::tsvector @@ %s::tsquery", (format_tsvector("py weather Celsius"), query)
    ).fetchone()
    assert found == (True,)
    phrases = query_terms("weather.py cels")
    assert not has_phrase("py weather Celsius", phrases)
    assert has_phrase("edit weather.pyc in celsius", phrases)
