"""``doctor`` for people says each problem once, not once per line of a file that is no
transcript at all: a binary file is one line. ``--json`` lists every problem."""

from __future__ import annotations

import json
import random
from pathlib import Path

from click.testing import CliRunner

from sessiontree.cli.main import cli

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"


def _doctor(root: Path, *args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli, ["--root", str(root), "doctor", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout.splitlines()


def test_a_binary_file_is_one_line(basic: Path) -> None:
    binary = (
        basic / "projects" / "-home-dev-01-basic" / f"{'a' * 8}-aaaa-4aaa-8aaa-{'a' * 12}.jsonl"
    )
    binary.write_bytes(random.Random(28).randbytes(64 * 1024))
    code, lines = _doctor(basic, str(binary))
    assert code == 1
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"not-a-session {binary}: holds no conversation (not-json)")
    document = json.loads(CliRunner().invoke(cli, ["doctor", str(binary), "--json"]).stdout)
    hidden = len(document["problems"]) - 1
    assert hidden > 100  # each line's problem is there for a script
    assert lines[1] == (
        f"1 transcript(s) checked, {hidden + 1} problem(s) ({hidden} in the lines of files "
        "that hold no conversation, not listed: --json lists them)"
    )
    # The whole store: the binary file one line too, the session beside it as it was.
    code, lines = _doctor(basic)
    assert code == 1 and sum(str(binary) in line for line in lines) == 1


def test_many_problems_of_one_kind_in_a_file_are_summed_up(basic: Path) -> None:
    transcript = next(basic.glob(f"projects/*/{BASIC}.jsonl"))
    lines = transcript.read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"".join(lines[:5] + [b"{not json\n"] * 30 + lines[5:]))
    code, out = _doctor(basic, BASIC)
    assert code == 1
    bad = [line for line in out if line.startswith("bad-json ")]
    assert len(bad) == 10
    assert f"  … 20 more bad-json in {transcript} (--json lists them)" in out
    assert out[-1] == "1 transcript(s) checked, 30 problem(s)"
