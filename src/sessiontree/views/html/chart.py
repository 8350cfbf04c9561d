"""A bar chart laid out to draw as inline SVG: pure, values in, rectangles out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Room for the value axis labels, left, and the key labels, below.
LEFT, BOTTOM, TOP = 64, 70, 10
#: A key label's characters at most (longer ones are cut, with "…"), and the width one
#: character takes at the chart's font size (11px sans-serif), with a gap between labels.
LABEL_CHARS, CHAR_WIDTH, LABEL_GAP = 14, 6.5, 8.0


@dataclass(frozen=True)
class Bar:
    key: str
    value: float
    x: float
    y: float
    width: float
    height: float
    labelled: bool = True  # its key written under it (not when bars are too narrow)


@dataclass(frozen=True)
class Chart:
    bars: tuple[Bar, ...]
    width: int
    height: int
    top: float  # the value at the top of the axis
    ticks: tuple[tuple[float, float], ...]  # (value, y)

    @property
    def base(self) -> float:
        return float(self.height - BOTTOM)


def _nice(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten at or above ``value``."""
    if value <= 0:
        return 1.0
    power = 10.0 ** (len(str(int(value))) - 1) if value >= 1 else 1.0
    while power > value:
        power /= 10
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def bar_chart(values: Sequence[tuple[str, float]], *, width: int = 900, height: int = 260) -> Chart:
    """One bar per ``(key, value)``, in the order given, scaled to the largest value (a
    negative one is drawn as 0). Bars too narrow for their key labels (many days, many
    sessions) have every n-th labelled, n the fewest that keeps the labels apart (and none cut off
    at the right edge)."""
    top = _nice(max((v for _, v in values), default=0.0))
    plot_w, plot_h = width - LEFT - 10, height - BOTTOM - TOP
    slot = plot_w / max(len(values), 1)
    longest = min(max((len(key) for key, _ in values), default=0), LABEL_CHARS)
    every = max(1, math.ceil((longest * CHAR_WIDTH + LABEL_GAP) / slot))
    bars = tuple(
        Bar(
            key,
            value,
            LEFT + i * slot + slot * 0.1,
            TOP + plot_h - plot_h * max(value, 0.0) / top,
            slot * 0.8,
            plot_h * max(value, 0.0) / top,
            i % every == 0 and LEFT + (i + 0.5) * slot + longest * CHAR_WIDTH / 2 <= width,
        )
        for i, (key, value) in enumerate(values)
    )
    ticks = tuple((top * k / 4, TOP + plot_h - plot_h * k / 4) for k in range(5))
    return Chart(bars, width, height, top, ticks)
