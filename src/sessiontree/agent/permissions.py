"""Permission to run a tool: allow once, allow always for this project, deny; or skip.

The rules are the client's, read from where it keeps them (lowest first; a deny anywhere
wins over any allow): the user's ``<config dir>/settings.json``, the project's
``.claude/settings.json`` and ``.claude/settings.local.json``, each's
``permissions.allow`` / ``permissions.deny`` (and ``permissions.defaultMode``:
``acceptEdits`` allows edits inside the project, ``bypassPermissions`` everything). A
rule is ``Tool`` (every use) or ``Tool(content)``:

- ``Bash(npm test:*)``: the command is ``npm test`` or starts with ``npm test ``;
  ``Bash(git status)``: exactly that; a ``*`` elsewhere is a wildcard. A compound
  command (``a && b``, ``a | b``, ``a; b``) is allowed when each part is.
- ``Edit(//abs/path/**)``, ``Read(~/notes/*.md)``, ``Edit(/src/**)`` (from the project
  folder), ``Edit(*.md)`` (anywhere in it): gitignore-like paths. ``Edit(…)`` rules cover
  Write as well, ``Read(…)`` rules Glob and Grep; a bare name is that tool alone (the
  real client let ``Write`` allow Write but not Edit, and a bare ``Edit`` allowed no
  Write, while ``Edit(/**)`` allowed both).

Without a rule: reading (Read, Glob, Grep) inside the project is allowed, as in the
client, and so are commands that only look (``ls``, ``cat``, ``git status``…: the
client allowed ``ls`` with no rule). Everything else asks; with nobody to ask (``-p``),
a command is refused with ``This command requires approval``. "always" is saved as the
client saves it: the rule appended to ``<project>/.claude/settings.local.json``'s
``permissions.allow`` (``Bash(<prefix>:*)`` for a command, ``Edit(/**)`` for an edit
inside the project, ``Edit(//<folder>/**)`` or ``Read(//<folder>/**)`` outside it; the
real client honours each of these, ``tests/agent/test_permissions.py``). The
prefix of a command is its first word, or its first two for tools with subcommands
(``git commit``, ``npm test``; three for ``npm run x``): the client asks a model for
it, sessiontree does not.

The words of a refusal are the client's (seen in its transcripts): a deny rule:
``Permission to use Bash with command rm x.txt has been denied.``; nobody to ask:
``Claude requested permissions to write to <path>, but you haven't granted it yet.``;
the user says no: the client's rejection text, ``toolUseResult`` ``User rejected tool
use``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sessiontree.agent.tools.commands import command_prefix, is_read_only, split_command
from sessiontree.agent.tools.globs import glob_regex, resolve_path
from sessiontree.agent.tools.outcome import REJECTED_TEXT
from sessiontree.model.builders.envelope import JsonDict
from sessiontree.storage.atomic import write_atomically

Decision = Literal["once", "always", "deny"]

READ_TOOLS = frozenset({"Read", "Glob", "Grep"})
EDIT_TOOLS = frozenset({"Edit", "Write"})

_RULE = re.compile(r"^([A-Za-z][\w-]*)(?:\((.*)\))?$", re.DOTALL)
RuleSource = Literal["userSettings", "projectSettings", "localSettings", "session"]


@dataclass(frozen=True)
class PermissionRequest:
    """What the face asks the user: the tool, its input, a one-line summary, and the rule
    "allow always" would save."""

    tool: str
    tool_input: JsonDict
    rule: str
    summary: str


@dataclass(frozen=True)
class PermissionCheck:
    """The answer for one call: allowed or not; when not, the ``tool_result`` text and
    whether the user said no (the client's ``toolUseResult`` is then ``User rejected tool
    use``); ``decision`` is what the client records as the result's
    ``permissionDecision``."""

    allowed: bool
    message: str | None = None
    user_rejected: bool = False
    decision: JsonDict = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    tool: str
    content: str | None
    source: RuleSource
    base: Path  # where a relative path rule starts

    @classmethod
    def parse(cls, text: str, source: RuleSource, base: Path) -> Rule | None:
        match = _RULE.match(text.strip())
        if match is None:
            return None
        content = match.group(2)
        return cls(match.group(1), None if content in (None, "", "*") else content, source, base)


def _file_path(tool: str, tool_input: JsonDict, cwd: Path, home: str | None) -> Path | None:
    given = tool_input.get("file_path") if tool in ("Read", "Write", "Edit") else None
    if tool in ("Glob", "Grep"):
        given = tool_input.get("path") or str(cwd)
    if not isinstance(given, str):
        return None
    return resolve_path(cwd, given, home)


class Permissions:
    """Which tool calls may run. ``ask`` None and not ``skip``: deny what is not allowed
    (the client's ``-p`` without a rule). ``config_dir``: the client's config folder whose
    ``settings.json`` holds the user's rules (None: none read); ``home``: what ``~`` is
    in rules and paths (None: ``~`` is not expanded)."""

    def __init__(
        self,
        *,
        project: Path,
        ask: Callable[[PermissionRequest], Decision] | None,
        skip: bool = False,
        config_dir: Path | None = None,
        home: Path | None = None,
    ) -> None:
        self.project = Path(os.path.normpath(project))
        self.ask = ask
        self.skip = skip
        self.config_dir = config_dir
        self.home_dir = home
        self.session_rules: list[Rule] = []
        self.mode = "default"
        self._allow: list[Rule] = []
        self._deny: list[Rule] = []
        self.reload()

    @property
    def _home(self) -> str | None:
        return str(self.home_dir) if self.home_dir is not None else None

    @property
    def local_settings(self) -> Path:
        return self.project / ".claude" / "settings.local.json"

    def reload(self) -> None:
        """Read the settings files again."""
        self._allow, self._deny = [], []
        sources: list[tuple[Path, RuleSource, Path]] = []
        if self.config_dir is not None:
            user_base = self.home_dir if self.home_dir is not None else self.config_dir
            sources.append((self.config_dir / "settings.json", "userSettings", user_base))
        sources.append(
            (self.project / ".claude" / "settings.json", "projectSettings", self.project)
        )
        sources.append((self.local_settings, "localSettings", self.project))
        for path, source, base in sources:
            permissions = _read_json(path).get("permissions")
            if not isinstance(permissions, dict):
                continue
            for key, into in (("allow", self._allow), ("deny", self._deny)):
                for text in permissions.get(key) or []:
                    rule = Rule.parse(text, source, base) if isinstance(text, str) else None
                    if rule is not None:
                        into.append(rule)
            if isinstance(permissions.get("defaultMode"), str):
                self.mode = permissions["defaultMode"]

    # -- matching ------------------------------------------------------------------------

    def _matches(self, rule: Rule, tool: str, tool_input: JsonDict, cwd: Path) -> bool:
        if rule.content is None:
            return rule.tool == tool  # a bare name is that tool only ("Edit" is no Write)
        family = {tool}
        if tool in EDIT_TOOLS:
            family.add("Edit")
        if tool in READ_TOOLS:
            family.add("Read")
        if rule.tool not in family:
            return False
        if tool == "Bash":
            return _command_matches(rule.content, str(tool_input.get("command", "")))
        path = _file_path(tool, tool_input, cwd, self._home)
        return path is not None and self._path_matches(rule, path)

    def _path_matches(self, rule: Rule, path: Path) -> bool:
        content = rule.content or ""
        if content.startswith("//"):
            pattern = content[1:]
        elif content.startswith("~/"):
            if self.home_dir is None:
                return False  # no home given: a ~ rule names nothing
            pattern = str(self.home_dir / content[2:])
        elif content.startswith("/"):
            pattern = str(rule.base) + content
        else:
            pattern = str(rule.base) + "/**/" + content.removeprefix("./")
        regex = glob_regex(pattern)
        return bool(regex.match(str(path)) or regex.match(str(path) + "/"))

    def _first(self, rules: list[Rule], tool: str, tool_input: JsonDict, cwd: Path) -> Rule | None:
        return next((r for r in rules if self._matches(r, tool, tool_input, cwd)), None)

    def inside(self, path: Path | None) -> bool:
        return path is not None and (path == self.project or path.is_relative_to(self.project))

    # -- the answer ----------------------------------------------------------------------

    def allowed(self, tool: str, tool_input: JsonDict) -> bool:
        """Whether the call may run; asks when it must; "always" is saved as the client
        saves it."""
        return self.check(tool, tool_input).allowed

    def check(self, tool: str, tool_input: JsonDict, *, cwd: Path | None = None) -> PermissionCheck:
        """:meth:`allowed`, with what to tell the model when not. ``cwd``: where relative
        paths start (default: the project)."""
        here = cwd if cwd is not None else self.project
        if self.skip or self.mode == "bypassPermissions":
            return PermissionCheck(True, decision=_accept("mode"))
        if tool == "Bash":
            return self._check_command(str(tool_input.get("command", "")), tool_input, here)
        denied = self._first(self._deny, tool, tool_input, here)
        if denied is not None:
            return PermissionCheck(
                False, f"Permission to use {tool} has been denied.", decision=_reject(denied)
            )
        rule = self._first(self._allow + self.session_rules, tool, tool_input, here)
        if rule is not None:
            return PermissionCheck(True, decision=_accept("rule", rule))
        path = _file_path(tool, tool_input, here, self._home)
        if tool in READ_TOOLS and self.inside(path):
            return PermissionCheck(True, decision=_accept("mode"))
        if tool in EDIT_TOOLS and self.mode == "acceptEdits" and self.inside(path):
            return PermissionCheck(True, decision=_accept("mode"))
        verb = "read from" if tool in READ_TOOLS else "write to"
        what = f"{verb} {path}" if path is not None else f"use {tool}"
        return self._ask(tool, tool_input, [self._rule_for(tool, path)], what)

    def _check_command(self, command: str, tool_input: JsonDict, cwd: Path) -> PermissionCheck:
        parts = split_command(command) or [command]
        whole = dict(tool_input, command=command)
        for part in [command, *parts]:
            denied = self._first(self._deny, "Bash", dict(tool_input, command=part), cwd)
            if denied is not None:
                message = f"Permission to use Bash with command {command} has been denied."
                return PermissionCheck(False, message, decision=_reject(denied))
        rules = self._allow + self.session_rules
        if self._first(rules, "Bash", whole, cwd) is not None:
            return PermissionCheck(True, decision=_accept("rule"))
        missing = [
            part
            for part in parts
            if self._first(rules, "Bash", dict(tool_input, command=part), cwd) is None
            and not is_read_only(part)
        ]
        if not missing:
            return PermissionCheck(True, decision=_accept("subcommandResults"))
        suggestions = list(dict.fromkeys(f"Bash({command_prefix(p)}:*)" for p in missing))
        return self._ask("Bash", tool_input, suggestions, "use Bash")

    def _rule_for(self, tool: str, path: Path | None) -> str:
        family = "Read" if tool in READ_TOOLS else "Edit" if tool in EDIT_TOOLS else tool
        if path is None:
            return family
        if family == "Edit" and self.inside(path):
            return "Edit(/**)"
        folder = path if tool in ("Glob", "Grep") and path.is_dir() else path.parent
        return f"{family}(/{folder}/**)"

    def _ask(self, tool: str, tool_input: JsonDict, rules: list[str], what: str) -> PermissionCheck:
        if self.ask is None:
            message = (
                "This command requires approval"
                if tool == "Bash"
                else f"Claude requested permissions to {what}, but you haven't granted it yet."
            )
            return PermissionCheck(False, message, decision=_reject(None))
        summary = _summary(tool, tool_input)
        decision = self.ask(PermissionRequest(tool, tool_input, ", ".join(rules), summary))
        if decision == "deny":
            return PermissionCheck(
                False, REJECTED_TEXT, user_rejected=True, decision=_reject(None, user=True)
            )
        source = "user_temporary"
        if decision == "always":
            self.save_rules(rules)
            source = "user_permanent"
        return PermissionCheck(
            True, decision={"decision": "accept", "source": source, "reasonType": "user"}
        )

    def save_rules(self, rules: list[str]) -> None:
        """Add ``rules`` to the project's ``.claude/settings.local.json`` allow list (the
        file's other settings kept), and to this session's rules. A file that is not valid
        JSON is left alone: the rules then hold for this session only."""
        for text in rules:
            rule = Rule.parse(text, "session", self.project)
            if rule is not None:
                self.session_rules.append(rule)
        path = self.local_settings
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raw = "{}"
        try:
            settings = json.loads(raw)
        except ValueError:
            return
        if not isinstance(settings, dict):
            return
        permissions = settings.setdefault("permissions", {})
        if not isinstance(permissions, dict):
            return
        allow = permissions.setdefault("allow", [])
        if not isinstance(allow, list):
            return
        allow.extend(rule for rule in rules if rule not in allow)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, (json.dumps(settings, indent=2) + "\n").encode("utf-8"))


def _command_matches(content: str, command: str) -> bool:
    command = command.strip()
    if content.endswith(":*"):
        prefix = content[:-2].strip()
        return command == prefix or command.startswith(prefix + " ")
    if "*" in content:
        regex = ".*".join(re.escape(piece) for piece in content.split("*"))
        return re.fullmatch(regex, command, re.DOTALL) is not None
    return command == content.strip()


def _summary(tool: str, tool_input: JsonDict) -> str:
    if tool == "Bash":
        return f"Bash: {tool_input.get('command', '')}"
    target = tool_input.get("file_path") or tool_input.get("path") or tool_input.get("pattern")
    return f"{tool}: {target}"


def _accept(reason: str, rule: Rule | None = None) -> JsonDict:
    if rule is not None and rule.source != "session":
        return {
            "decision": "accept",
            "source": "user_permanent",
            "reasonType": "rule",
            "ruleSource": rule.source,
        }
    return {"decision": "accept", "source": "config", "reasonType": reason}


def _reject(rule: Rule | None, *, user: bool = False) -> JsonDict:
    if user:
        return {"decision": "reject", "source": "user", "reasonType": "user"}
    if rule is None:
        return {"decision": "reject", "source": "config", "reasonCode": "unknown"}
    return {
        "decision": "reject",
        "source": "config",
        "reasonType": "rule",
        "ruleSource": rule.source,
        "reasonCode": f"rule:{rule.source}",
    }


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
