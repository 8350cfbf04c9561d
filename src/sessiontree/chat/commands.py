"""Slash commands: what a line typed at the prompt asks for (pure; no terminal).

``parse_command("/compact keep the API notes")`` is ``Command("compact", "keep the API
notes")``; a line that is no slash command is None (it is a prompt). An unknown command
is a :class:`Command` whose ``name`` is None and ``typed`` what was typed, so the caller
can say so. Aliases fold into their command's name (``/branch`` is ``/fork``, ``/quit``
is ``/exit``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: Every command, its one-line help, in the order ``/help`` lists them.
COMMANDS: dict[str, str] = {
    "rewind": "go back to an earlier prompt: restore code, conversation or both, or summarize"
    " (also Esc Esc on an empty input)",
    "compact": "summarize the conversation so far to free context; optional instructions"
    " say what the summary must keep",
    "clear": "start a new session in this folder (the old one stays and can be resumed)",
    "fork": "go on in a copy of this session (the original stays as it is); alias /branch",
    "resume": "go on with another session of this project: a picker, or /resume SESSION",
    "rename": "give this session a title",
    "cost": "tokens and cost of this session",
    "memory": "the memory files loaded; edit one (project, local, user, auto-memory) in $EDITOR",
    "help": "this list",
    "exit": "leave (also Ctrl+D, or Ctrl+C twice on an empty input); alias /quit",
}

ALIASES: dict[str, str] = {"branch": "fork", "quit": "exit"}

#: Commands that take text after their name (the others ignore none: they refuse it).
TAKES_ARGUMENT = frozenset({"compact", "rename", "resume"})


@dataclass(frozen=True)
class Command:
    """A parsed slash command: ``name`` (None: unknown), ``argument`` (stripped, "" for
    none), ``typed`` (the name as typed, alias or not)."""

    name: str | None
    argument: str
    typed: str

    @property
    def problem(self) -> str | None:
        """Why this command cannot run as typed, or None."""
        if self.name is None:
            return f"unknown command /{self.typed} (/help lists them)"
        if self.argument and self.name not in TAKES_ARGUMENT:
            return f"/{self.typed} takes no argument"
        if self.name == "rename" and not self.argument:
            return "/rename needs a title: /rename NEW TITLE"
        return None


def parse_command(line: str) -> Command | None:
    """The slash command ``line`` is, or None for a prompt (text not starting with ``/``,
    or ``/`` followed by a space or another ``/``, such as a path ``/usr/bin``)."""
    text = line.strip()
    if not text.startswith("/") or len(text) == 1:
        return None
    head, _, rest = text[1:].partition(" ")
    head_name = head.split("\n", 1)[0]
    if not head_name or "/" in head_name:
        return None
    if "\n" in head:  # "/compact\nmore": the rest of the lines are its argument
        rest = head[len(head_name) :] + (" " + rest if rest else "")
    typed = head_name.lower()
    name = ALIASES.get(typed, typed)
    return Command(name if name in COMMANDS else None, rest.strip(), typed)


def complete_commands(prefix: str) -> list[str]:
    """Command names (aliases too) that start with ``prefix`` (without its ``/``)."""
    names = sorted({*COMMANDS, *ALIASES})
    return [n for n in names if n.startswith(prefix.lower())]


def help_lines(extra: Sequence[str] = ()) -> list[str]:
    """``/help``: one line per command, then the keys, then ``extra`` (what the
    provider understands, when it says)."""
    width = max(len(n) for n in COMMANDS) + 1
    lines = [f"/{name:<{width}} {text}" for name, text in COMMANDS.items()]
    lines += [
        "",
        "keys: Enter sends; Alt+Enter (or Esc then Enter) or a trailing \\ starts a new line;"
        " Up/Down walk history (this project first); Ctrl+R searches it; Esc Esc rewinds;"
        " Ctrl+C interrupts a turn, clears the input, twice on an empty input exits;"
        " Ctrl+D exits",
    ]
    if extra:
        lines += ["", *extra]
    return lines
