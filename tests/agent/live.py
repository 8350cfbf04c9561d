"""A live session in a real project folder, and a way to make tool calls in it as a model
would: the response with the tool_use first, then the tool, then its result (shared by
tests/agent and tests/checkpoints)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontree.agent.permissions import Permissions
from sessiontree.agent.tools import Toolbox, ToolOutcome, record_outcome
from sessiontree.checkpoints.capture import FileHistory
from sessiontree.model.builders import text_block, tool_use_block
from sessiontree.session import Session
from sessiontree.storage.layout import Layout


@dataclass
class Live:
    layout: Layout
    project: Path
    session: Session
    toolbox: Toolbox
    calls: int = 0

    def prompt(self, text: str) -> str:
        return self.session.append_prompt(text)

    def call(self, name: str, tool_input: dict[str, Any]) -> tuple[ToolOutcome, dict[str, Any]]:
        """One call, recorded as the client records it; the outcome and the result record."""
        self.calls += 1
        tool_id = f"toolu_test{self.calls:04d}"
        self.session.append_response(
            [text_block("ok"), tool_use_block(tool_id, name, tool_input)], stop_reason="tool_use"
        )
        outcome = self.toolbox.run(name, tool_input, tool_use_id=tool_id)
        uuid = record_outcome(self.session, tool_id, name, outcome)
        record = next(
            json.loads(line)
            for line in self.session.path.read_text().splitlines()
            if json.loads(line).get("uuid") == uuid
        )
        return outcome, record


def start(
    tmp_path: Path,
    project: Path,
    *,
    permissions: Permissions | None = None,
    capture_bash: bool = True,
    ripgrep: str | bool | None = True,
    layout_root: Path | None = None,
) -> Live:
    layout = Layout(layout_root or tmp_path / "root")
    (layout.root / "projects").mkdir(parents=True, exist_ok=True)
    session = Session.create(layout, project, entrypoint="cli")
    session.file_history = FileHistory(layout, session.session_id, project)
    toolbox = Toolbox(
        session,
        cwd=project,
        permissions=permissions or Permissions(project=project, ask=None, skip=True),
        env=dict(os.environ),
        capture_bash=capture_bash,
        ripgrep=ripgrep,
    )
    return Live(layout, project, session, toolbox)
