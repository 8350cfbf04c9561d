"""What a shell command is, as permissions and parallel calls see it: its parts, whether
it only looks, the prefix an "allow always" rule names."""

from __future__ import annotations

import re
import shlex

#: Commands that only look: allowed without a rule, as the client allows ``ls``.
READ_ONLY_COMMANDS = frozenset(
    {
        "ls",
        "pwd",
        "echo",
        "cat",
        "head",
        "tail",
        "wc",
        "grep",
        "rg",
        "which",
        "date",
        "true",
        "stat",
        "file",
        "tree",
        "du",
        "df",
        "diff",
        "sort",
        "uniq",
        "cut",
        "basename",
        "dirname",
        "realpath",
        "whoami",
        "id",
        "uname",
        "printenv",
    }
)
READ_ONLY_GIT = frozenset({"status", "diff", "log", "show", "branch", "rev-parse", "blame"})
#: Tools whose second word names what they do (``git commit``, ``npm test``).
SUBCOMMAND_TOOLS = frozenset(
    {
        "git",
        "npm",
        "pnpm",
        "yarn",
        "bun",
        "cargo",
        "go",
        "docker",
        "kubectl",
        "pip",
        "pip3",
        "uv",
        "poetry",
        "make",
        "dotnet",
        "gh",
        "brew",
        "apt",
        "apt-get",
        "systemctl",
        "npx",
    }
)

_SEPARATORS = re.compile(r"&&|\|\||[;|\n]")


def split_command(command: str) -> list[str]:
    """The simple commands of a compound one (``&&``, ``||``, ``;``, ``|``, new lines)."""
    return [part.strip() for part in _SEPARATORS.split(command) if part.strip()]


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def command_prefix(command: str) -> str:
    """The prefix an "always" rule names: ``npm test``, ``git commit``, ``ls``."""
    words = _words(command)
    if not words:
        return command
    if words[0] in SUBCOMMAND_TOOLS and len(words) > 1 and not words[1].startswith("-"):
        if words[0] in ("npm", "pnpm", "yarn", "bun") and words[1] == "run" and len(words) > 2:
            return " ".join(words[:3])
        return " ".join(words[:2])
    return words[0]


def is_read_only(command: str) -> bool:
    """A simple command that only looks (no redirection into a file)."""
    if re.search(r"[<>]|`|\$\(", command):
        return False
    words = _words(command)
    if not words:
        return False
    if words[0] == "git":
        return len(words) > 1 and words[1] in READ_ONLY_GIT
    if words[0] == "find":
        return not any(w in ("-exec", "-execdir", "-delete", "-ok", "-fprint") for w in words)
    return words[0] in READ_ONLY_COMMANDS
