"""Permission to run a tool: allow once, allow always for this project, deny; or skip.

(Interface first; filled in on branch chat-tools.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sessiontree.model.builders.envelope import JsonDict

Decision = Literal["once", "always", "deny"]


@dataclass(frozen=True)
class PermissionRequest:
    """What the face asks the user about: the tool, its input, the rule "always" saves."""

    tool: str
    tool_input: JsonDict
    rule: str
    summary: str


class Permissions:
    """Which tool calls may run. ``ask`` None and not ``skip``: deny what is not allowed."""

    def __init__(
        self,
        *,
        project: Path,
        ask: Callable[[PermissionRequest], Decision] | None,
        skip: bool = False,
        home: Path | None = None,
    ) -> None:
        self.project = Path(project)
        self.ask = ask
        self.skip = skip
        self.home = home

    def allowed(self, tool: str, tool_input: JsonDict) -> bool:
        """Whether the call may run; asks when it must; "always" is saved as the client saves it."""
        return self.skip
