"""Damaged shapes that were quadratic stay about linear (see ``bench/shapes.py``).

Not a timing test: speed is measured in ``bench/``. This compares growth: the same read
at ``n`` and ``8n`` records. Linear work grows about 8x, quadratic work 64x; the test
fails above 24x (8x with a 3x margin). Why this is robust on a loaded, shared machine:

* it uses CPU time of this process (``time.process_time``), not wall time, so other
  processes on the machine do not count;
* the garbage collector is off while timing (a collection in one run and not the other
  is the biggest source of noise), and each size takes the best of three runs;
* the sizes are large enough (1,000 and 8,000) that the fixed costs of a read are small,
  and the old quadratic code grew 35-60x between them (missing parents: 0.37 s at 1,000
  records, 5.9 s at 4,000).
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest
from bench.shapes import SHAPES, read_shape, write_shape

SMALL, LARGE = 1_000, 8_000
MAX_GROWTH = (LARGE / SMALL) * 3


def cpu_seconds(path: Path) -> float:
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            start = time.process_time()
            read_shape(path)
            best = min(best, time.process_time() - start)
    finally:
        gc.enable()
    return max(best, 1e-4)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_damaged_shape_grows_about_linearly(shape: str, tmp_path: Path) -> None:
    small = cpu_seconds(write_shape(tmp_path / "small.jsonl", shape, SMALL))
    large = cpu_seconds(write_shape(tmp_path / "large.jsonl", shape, LARGE))
    assert large / small < MAX_GROWTH, f"{shape}: {small:.4f} s -> {large:.4f} s"


def test_shapes_read_as_the_client_would() -> None:
    """The shapes are what they claim (so the growth above measures the right thing)."""
    import tempfile

    from sessiontree.conversation.transcript import Transcript

    with tempfile.TemporaryDirectory() as folder:
        bridged = Transcript.open(write_shape(Path(folder) / "a.jsonl", "missing-parents", 50))
        assert len(bridged.active_path) == 50  # every missing parent bridged by timestamp
        anchor = Transcript.open(write_shape(Path(folder) / "b.jsonl", "wide-anchor", 50))
        tail = anchor.tree.compaction_tail
        assert tail is not None and len(anchor.tree.children[tail]) >= 50
        chain = Transcript.open(write_shape(Path(folder) / "c.jsonl", "system-chain", 50))
        assert chain.context() == []
