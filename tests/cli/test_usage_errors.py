"""A usage error is one line on stderr, as every other error is: what is wrong, and where
the command's help is (click's own took four: usage, hint, a blank, the error); exit 2.
``sessiontree`` alone still prints the help."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"

CASES = [
    (["usage", "--bogus"], "No such option '--bogus'.", "sessiontree usage"),
    (["show"], "Missing argument 'SESSION'.", "sessiontree show"),
    (["usage", "--by", "fortnight"], "Invalid value for '--by'", "sessiontree usage"),
    (["usage", "--timezone", "Mars/Olympus"], "Invalid value for '--timezone'",
     "sessiontree usage"),
    (["sessions", "--all", "--project", "."], "--all and --project do not go together",
     "sessiontree sessions"),
    (["bogus"], "No such command 'bogus'.", "sessiontree"),
    (["--bogus", "sessions"], "No such option '--bogus'.", "sessiontree"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message", "command"), CASES, ids=lambda v: str(v)[:30])
def test_a_usage_error_is_one_line(
    basic: Path, args: list[str], message: str, command: str
) -> None:
    result = CliRunner().invoke(cli, ["--root", str(basic), *args], prog_name="sessiontree")
    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"sessiontree: {message}")
    assert line.endswith(f" (see '{command} --help')")


def test_the_bare_command_still_prints_its_help() -> None:
    result = CliRunner().invoke(cli, [], prog_name="sessiontree")
    assert "Usage: sessiontree" in result.output and "Commands:" in result.output
