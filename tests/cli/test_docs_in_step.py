"""docs/CLI.md, the README's command table and ``--help`` say the same commands.

Every command has a row in docs/CLI.md (the contract) and in the README's table, and
every long option a command takes appears in its docs/CLI.md row(s). A row for a command
that does not exist yet must be one the issues plan (:data:`PLANNED`)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from sessiontree.cli.main import COMMANDS, cli

ROOT = Path(__file__).parents[2]
#: Commands docs/CLI.md already describes that later issues build.
PLANNED: set[str] = set()
#: Commands whose README row the README's owner adds when the branch is merged (the
#: branch that built them does not edit README.md). Empty again once it is there.
README_AT_MERGE: set[str] = set()


def rows(text: str) -> dict[str, list[str]]:
    """Table rows by the command they start with (``| `name ...`` )."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = re.match(r"^\| `([a-z][a-z-]*)[ `]", line)
        if match:
            found.setdefault(match.group(1), []).append(line)
    return found


def test_every_command_has_a_row_in_the_contract_and_the_readme() -> None:
    contract = rows((ROOT / "docs" / "CLI.md").read_text())
    readme = rows((ROOT / "README.md").read_text())
    assert sorted(set(COMMANDS) - set(contract)) == []
    assert sorted(set(COMMANDS) - set(readme) - README_AT_MERGE) == []
    assert sorted(set(contract) - set(COMMANDS) - PLANNED) == []
    assert sorted(set(readme) - set(COMMANDS) - PLANNED) == []


def test_every_long_option_is_in_its_commands_contract_row() -> None:
    contract = rows((ROOT / "docs" / "CLI.md").read_text())
    context = click.Context(cli)
    missing = {}
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert command is not None, name
        text = " ".join(contract[name])
        options = [
            option
            for param in command.params
            if isinstance(param, click.Option) and not param.hidden
            for option in param.opts
            if option.startswith("--") and option != "--help"
        ]
        absent = [option for option in options if option not in text]
        if absent:
            missing[name] = absent
    assert missing == {}
