"""The demo's stand-in for a model and its tools, driving a :class:`Session`.

Every record the demo writes goes through :class:`~sessiontree.session.Session` and its
:class:`~sessiontree.checkpoints.capture.FileHistory`, as an agent host's would. This
module only decides what the "model" answers and does what its tools (Read, Write,
Edit, Bash) do to the project's files, for real, on disk. Ids come from a seed and
times from a clock the demo moves, so the same ``now`` writes the same bytes. Nothing
here picks a scenario: see :mod:`sessiontree.demo.scenarios`.
"""

from __future__ import annotations

import hashlib
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sessiontree.checkpoints.capture import FileHistory
from sessiontree.conversation.summarize import Direction
from sessiontree.model import builders as b
from sessiontree.session import Session
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.layout import Layout
from sessiontree.storage.remove import remove_file

MODEL = "claude-sonnet-4-5-20250929"


class IdSource:
    """Deterministic ids in the client's shapes, from a seed and a counter."""

    def __init__(self, seed: str) -> None:
        self._seed, self._n = seed, 0

    def _digest(self) -> bytes:
        self._n += 1
        return hashlib.sha256(f"{self._seed}/{self._n}".encode()).digest()

    def uuid(self) -> str:
        return str(uuidlib.UUID(bytes=self._digest()[:16], version=4))

    def hex(self, length: int) -> str:
        return self._digest().hex()[:length]


class DemoClock:
    """The time a demo session is stamped with: each reading moves it on a little (records
    written one after another), :meth:`wait` moves it on more (the user thinking, the
    model working)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=40)
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Project:
    """A demo working folder: its files before any session ran (relative path → text),
    and the files its sessions create."""

    name: str
    cwd: Path
    files: dict[str, str]
    creates: tuple[str, ...] = ()

    def path(self, rel: str) -> Path:
        return self.cwd / rel

    def reset(self) -> None:
        """Put the folder back as it was before the sessions (a re-run starts over)."""
        for rel in self.creates:
            remove_file(self.path(rel))
        for rel, content in self.files.items():
            target = self.path(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, content.encode("utf-8"), fsync=False)


@dataclass
class Agent:
    """One demo session in progress: the user's prompts, the model's answers, the tools."""

    layout: Layout
    session: Session
    project: Project
    clock: DemoClock
    ids: IdSource
    tools_used: set[str] = field(default_factory=set)
    responses: int = 0

    @classmethod
    def start(
        cls, layout: Layout, project: Project, session_id: str, start: datetime, ids: IdSource
    ) -> Agent:
        """A new interactive session of ``project`` (history lines, file checkpoints)."""
        clock = DemoClock(start)
        cwd = str(project.cwd)
        session = Session.create(
            layout,
            cwd,
            session_id=session_id,
            entrypoint="cli",
            record_history=True,
            clock=clock,
            new_id=ids.uuid,
        )
        session.file_history = FileHistory(layout, session_id, cwd, clock=clock)
        return cls(layout, session, project, clock, ids)

    def tool_id(self) -> str:
        return f"toolu_{self.ids.hex(24)}"

    # -- the user ------------------------------------------------------------------------

    def prompt(
        self,
        display: str,
        *,
        after_s: int,
        pastes: Mapping[int, str] | None = None,
        first: bool = False,
    ) -> str:
        """A typed prompt ``after_s`` seconds on; returns its uuid. ``pastes`` fill the
        ``[Pasted text #N …]`` placeholders of ``display``; ``first`` adds the context the
        client injects on a session's first prompt (environment, date)."""
        self.clock.wait(after_s)
        uuid = self.session.append_prompt(display, pastes=pastes)
        if first:
            day = self.clock.now.date().isoformat()
            for attachment, text in (
                b.environment_attachment(str(self.project.cwd)),
                b.date_attachment(day),
            ):
                self.session.append_attachment(
                    attachment,
                    rendered=[text],
                    rendered_role="system",
                    echo_session_id=attachment["type"] == "date",
                )
        return uuid

    def rewind(self, prompt_uuid: str, *, after_s: int) -> None:
        """/rewind → "Restore code and conversation" to just before ``prompt_uuid``."""
        self.clock.wait(after_s)
        self.session.rewind(prompt_uuid, restore_code=True)

    def compact(self, summary: str, *, after_s: int) -> None:
        """/compact: the last response and its turn end are kept verbatim."""
        self.clock.wait(after_s)
        self.session.env = replace(self.session.env, slug="tidy-sorting-otter")
        self.session.compact(
            summary,
            tools_used=sorted(self.tools_used),
            typed=True,
            pre_tokens=41_230,
            post_tokens=3_112,
        )

    def summarize(
        self, prompt_uuid: str, summary: str, *, direction: Direction, after_s: int
    ) -> None:
        """/rewind → "Summarize from here" / "Summarize up to here" at ``prompt_uuid``."""
        self.clock.wait(after_s)
        self.session.summarize(prompt_uuid, summary, direction=direction, typed=True)

    def branch(self, session_id: str, title: str, *, after_s: int) -> Agent:
        """/branch: the conversation copied into a new session, which goes on from here."""
        self.clock.wait(after_s)
        fork = self.session.branch(title=title, session_id=session_id)
        fork.clock = clock = DemoClock(self.clock.now)  # its own time line from here
        cwd = str(self.project.cwd)
        fork.file_history = FileHistory(self.layout, session_id, cwd, clock=clock)
        return Agent(self.layout, fork, self.project, clock, self.ids, set(self.tools_used))

    # -- the model -----------------------------------------------------------------------

    def respond(self, blocks: list[b.JsonDict], stop: str) -> list[str]:
        """One API response, a moment after what it answers; the records' uuids."""
        self.clock.wait(0.9)
        self.responses += 1
        usage = b.build_usage(
            input_tokens=2400 + 900 * self.responses,
            output_tokens=45 + 70 * len(blocks),
            cache_read_input_tokens=1800 * min(self.responses, 8),
        )
        return self.session.append_response(
            blocks, model=MODEL, stop_reason=stop, usage=usage, message_id=f"msg_{self.ids.hex(24)}"
        )

    def reply(self, text: str) -> None:
        self.respond([b.text_block(text)], "end_turn")

    def end_turn(self, *, pending_agents: int | None = None) -> str:
        tip = self.session.tip
        assert tip is not None
        path = self.session.transcript().tree.path_to(tip)
        return self.session.end_turn(
            duration_ms=4200 + 37 * len(path),
            message_count=len(path) + 1,
            pending_background_agents=pending_agents,
        )

    # -- the tools -----------------------------------------------------------------------

    def _call(self, intro: str, name: str, tool_input: Mapping[str, Any]) -> str:
        tool_id = self.tool_id()
        self.tools_used.add(name)
        self.respond([b.text_block(intro), b.tool_use_block(tool_id, name, tool_input)], "tool_use")
        return tool_id

    def read(self, rel: str, intro: str) -> None:
        path = str(self.project.path(rel))
        tool_id = self._call(intro, "Read", {"file_path": path})
        self._answer(tool_id, b.read_result(path, self.project.path(rel).read_text()))

    def read_all(self, rels: list[str], intro: str) -> None:
        """Several Reads in one response, as real models make them: each result on its
        own call, in the order they finish (the last call first here)."""
        calls = [(self.tool_id(), rel) for rel in rels]
        self.tools_used.add("Read")
        uses = [
            b.tool_use_block(tool_id, "Read", {"file_path": str(self.project.path(rel))})
            for tool_id, rel in calls
        ]
        self.respond([b.text_block(intro), *uses], "tool_use")
        for tool_id, rel in reversed(calls):
            path = self.project.path(rel)
            self._answer(tool_id, b.read_result(str(path), path.read_text()))

    def write(self, rel: str, content: str, intro: str) -> None:
        path = self.project.path(rel)
        tool_id = self._call(intro, "Write", {"file_path": str(path), "content": content})
        original = path.read_text() if path.exists() else None
        self.session.before_edit(path, tool_use_id=tool_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        self._answer(tool_id, b.write_result(str(path), content, original=original))

    def edit(self, rel: str, old: str, new: str, intro: str) -> None:
        path = self.project.path(rel)
        original = path.read_text()
        assert old in original, (rel, old)
        tool_input = {
            "replace_all": False,
            "file_path": str(path),
            "old_string": old,
            "new_string": new,
        }
        tool_id = self._call(intro, "Edit", tool_input)
        self.session.before_edit(path, tool_use_id=tool_id)
        path.write_text(original.replace(old, new, 1))
        result = b.edit_result(str(path), original=original, old_string=old, new_string=new)
        self._answer(tool_id, result)

    def bash(self, command: str, stdout: str, intro: str) -> None:
        tool_id = self._call(intro, "Bash", {"command": command, "description": intro.rstrip(".")})
        self.session.append_bash_result(tool_id, stdout)
        self.session.note_untracked_changes()  # a command may change files unseen

    def _answer(self, tool_id: str, result: tuple[str | list[b.JsonDict], Any]) -> None:
        self.clock.wait(0.3)
        text, structured = result
        self.session.append_tool_result(tool_id, text, tool_use_result=structured)
