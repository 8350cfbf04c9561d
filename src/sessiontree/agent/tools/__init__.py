"""The client's tools (Read, Write, Edit, Bash, Glob, Grep), run on real files.

(Interface first; filled in on branch chat-tools.)
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontree.agent.permissions import Permissions
from sessiontree.model.builders.envelope import JsonDict
from sessiontree.session import Session


@dataclass(frozen=True)
class ToolOutcome:
    content: str | list[JsonDict]
    tool_use_result: Any
    is_error: bool = False


class Toolbox:
    def __init__(
        self,
        session: Session,
        *,
        cwd: Path,
        permissions: Permissions,
        env: Mapping[str, str],
        capture_bash: bool = True,
    ) -> None:
        self.session = session
        self.cwd = Path(cwd)
        self.permissions = permissions
        self.env = dict(env)
        self.capture_bash = capture_bash

    def schemas(self) -> list[JsonDict]:
        return []

    def run(
        self,
        name: str,
        tool_input: JsonDict,
        *,
        tool_use_id: str,
        cancel: threading.Event | None = None,
    ) -> ToolOutcome:
        raise NotImplementedError(name)
