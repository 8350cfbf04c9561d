"""Every ``sessiontree COMMAND`` the program suggests is a command it has, with options
it takes: the messages of the CLI, the chat and the library (string literals), the
commands' help (``sessiontree X`` quoted in a docstring) and the viewer's templates.
A chat once told the user to run ``sessiontree view``, which does not exist."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import click

import sessiontree
from sessiontree.cli.main import cli

SRC = Path(sessiontree.__file__).parent

#: ``sessiontree`` as a name in prose, not a command line: "sessiontree copies only files".
PROSE = {"kept", "group", "writes", "copies", "replaces", "deletes", "never", "schema", "to"}

#: ``sessiontree`` then the group's options and a word; what follows, to the end of the
#: command as quoted (a backtick, a bracket, a quote, a semicolon, a comma, a line's end).
SUGGESTION = re.compile(
    r"\bsessiontree((?:\s+--(?:root|store)\s+\S+)*)\s+([a-z][\w-]*)([^`)\"';,\n<]*)"
)
#: In a docstring, only a quoted command line is a suggestion (``sessiontree X``).
QUOTED = re.compile(r"`+sessiontree\s[^`]*`+")


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _texts() -> Iterator[tuple[str, str]]:
    """(where, text) of each message: string literals, quoted lines of docstrings, and
    the templates' text."""
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            where = f"{path.relative_to(SRC)}:{node.lineno}"
            if id(node) in docstrings:
                for quoted in QUOTED.findall(node.value):
                    yield where, quoted
            else:
                yield where, node.value
    for path in sorted(SRC.rglob("*.html")):
        yield str(path.relative_to(SRC)), path.read_text()


def _suggestions() -> list[tuple[str, str, list[str]]]:
    """(where, command, the words after it) of each ``sessiontree COMMAND …`` found."""
    found = []
    for where, text in _texts():
        for match in SUGGESTION.finditer(text):
            if match.group(2) not in PROSE:
                found.append((where, match.group(2), match.group(3).split()))
    return found


def _options(command: click.Command) -> set[str]:
    names = {"--help", "-h", "--root", "--store"}
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(param.opts, param.secondary_opts)
    return names


def test_the_scan_finds_the_suggestions() -> None:
    """(The scan itself: it finds the hints the program is known to give.)"""
    commands = {command for _, command, _ in _suggestions()}
    assert {"chat", "prompts", "cleanup", "store", "doctor", "usage", "sessions"} <= commands


def test_every_suggested_command_exists() -> None:
    context = click.Context(cli)
    wrong = []
    for where, name, words in _suggestions():
        command = cli.get_command(context, name)
        if command is None:
            wrong.append(f"{where}: sessiontree {name} is no command")
            continue
        if isinstance(command, click.Group) and words and not words[0].startswith("-"):
            sub = command.get_command(click.Context(command), words[0])
            if sub is None:
                wrong.append(f"{where}: sessiontree {name} {words[0]} is no command")
                continue
            command, words = sub, words[1:]
        for word in words:
            option = word.split("=", 1)[0].rstrip(".:")
            if re.fullmatch(r"--?[a-z][\w-]*", option) and option not in _options(command):
                wrong.append(f"{where}: sessiontree {name} has no option {option}")
    assert wrong == []
