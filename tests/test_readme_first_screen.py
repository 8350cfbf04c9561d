"""The README's first screen says what sessiontree is and how to start (issue 28: it was
benchmark prose): a short intro, ``make demo`` and ``make test``, what to run next, then
the command table; the measurements live in docs/BENCHMARKS.md."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text().splitlines()


def test_the_first_screen_is_what_it_is_and_how_to_start() -> None:
    intro = README[1 : README.index("```sh")]
    prose = [line for line in intro if line.strip()]
    assert 3 <= len(prose) <= 6, prose  # what it is, and the line leading to the commands
    first = README[: README.index("## What it does today")]
    assert len(first) <= 40  # the table starts on the first screen or just below it
    text = "\n".join(first)
    assert text.index("make demo") < text.index("make test")
    # what to run next, runnable on the store the demo writes
    assert "--root /tmp/sessiontree-demo" in text and "serve" in text


def test_the_measurements_are_in_the_benchmarks_doc() -> None:
    readme = "\n".join(README)
    benchmarks = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    for measured in ("python -m bench --only resume", "python -m bench --only search"):
        assert measured not in readme
        assert measured in benchmarks
    assert "docs/BENCHMARKS.md" in readme
