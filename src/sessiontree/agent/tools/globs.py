"""Glob patterns as ripgrep's ``--glob`` reads them, for Glob, Grep and permission rules."""

from __future__ import annotations

import os
import re
from pathlib import Path


def resolve_path(cwd: Path, given: str, home: str | None) -> Path:
    """A path a tool was given, as the client takes it: ``~/`` from ``home`` (when known),
    relative ones from ``cwd``, normalized (links kept)."""
    if home and (given == "~" or given.startswith("~/")):
        given = home + given[1:]
    return Path(os.path.normpath(cwd / given))


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob (``*``, ``?``, ``**``, ``[…]``, ``{a,b}``) as a regular expression over a
    ``/``-separated path."""
    out: list[str] = []
    i, depth = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                i = end
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.append(")" * depth)
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def glob_matcher(pattern: str) -> tuple[re.Pattern[str], bool]:
    """The regex and whether it applies to the whole relative path (a pattern with a
    ``/``) or to the name alone."""
    pattern = pattern.removeprefix("./")
    return glob_regex(pattern), "/" in pattern


def matches_glob(rel: str, matcher: tuple[re.Pattern[str], bool]) -> bool:
    regex, whole = matcher
    return bool(regex.match(rel if whole else rel.rsplit("/", 1)[-1]))
