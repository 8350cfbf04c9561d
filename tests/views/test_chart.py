"""The usage page's bar chart: its key labels never overlap, however many bars."""

from __future__ import annotations

from datetime import date, timedelta
from itertools import pairwise

import pytest

from sessiontree.views.html.chart import CHAR_WIDTH, LABEL_CHARS, bar_chart


def _days(count: int) -> list[tuple[str, float]]:
    start = date(2026, 1, 1)
    return [((start + timedelta(days=i)).isoformat(), float(i % 7 + 1)) for i in range(count)]


@pytest.mark.parametrize("count", [1, 3, 10, 45, 120, 400])
def test_key_labels_are_kept_apart(count: int) -> None:
    values = _days(count)
    chart = bar_chart(values)
    assert [bar.key for bar in chart.bars] == [key for key, _ in values]
    labelled = [bar for bar in chart.bars if bar.labelled]
    assert labelled[0] is chart.bars[0], "the first bar always says what it is"
    width = len(values[0][0]) * CHAR_WIDTH  # a day's label, drawn centred on its bar
    centres = [bar.x + bar.width / 2 for bar in labelled]
    gaps = [b - a for a, b in pairwise(centres)]
    assert all(gap >= width for gap in gaps), (count, min(gaps))
    assert centres[-1] + width / 2 <= chart.width, "the last label is not cut off"
    if count <= 10:  # room for every one
        assert len(labelled) == count
    else:  # as many as fit: labelled at least half as densely as room allows
        assert len(labelled) * width * 2 >= chart.width - 74


def test_long_keys_are_spaced_as_their_cut_labels() -> None:
    sessions = [(f"0c0ffee0-0000-4000-8000-{i:012d}", 1.0) for i in range(60)]
    labelled = [bar for bar in bar_chart(sessions).bars if bar.labelled]
    centres = [bar.x + bar.width / 2 for bar in labelled]
    assert min(b - a for a, b in pairwise(centres)) >= LABEL_CHARS * CHAR_WIDTH
