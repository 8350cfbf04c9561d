"""The demo's writer: deterministic ids, the client's checkpoint rules, turn by turn.

:class:`SessionWriter` appends what the interactive client appends for each step of a
session (prompt, tool calls, turn end, rewind, /compact, summarize, /branch), using the record
builders; :class:`FileHistory` keeps backups the way the client does. Nothing here picks
a scenario: see :mod:`sessiontree.demo.scenarios`.
"""

from __future__ import annotations

import hashlib
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sessiontree.conversation.summarize import Direction, plan_summarize
from sessiontree.conversation.transcript import Transcript
from sessiontree.model import builders as b
from sessiontree.storage.jsonl import append_records
from sessiontree.storage.layout import Layout, backup_name, paste_hash

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


@dataclass
class Project:
    """A demo working folder: its absolute path and its files (relative path → text)."""

    name: str
    cwd: str
    files: dict[str, str]

    def abs(self, rel: str) -> str:
        return f"{self.cwd}/{rel}"


@dataclass
class DemoState:
    """What every session of one demo run shares: the root, the ids, history lines."""

    layout: Layout
    ids: IdSource
    history: list[b.JsonDict] = field(default_factory=list)
    backups: int = 0

    def note(
        self,
        display: str,
        at: datetime,
        project: Project,
        session_id: str,
        pasted: Mapping[int, b.JsonDict] | None = None,
    ) -> None:
        self.history.append(
            b.build_history_entry(
                display=display,
                timestamp_ms=b.epoch_ms(at),
                project=project.cwd,
                session_id=session_id,
                pasted_contents=pasted,
            )
        )


class FileHistory:
    """The client's checkpoint rules, over a project's in-memory files (see FORMAT.md)."""

    def __init__(self, demo: DemoState, session_id: str, project: Project) -> None:
        self.demo, self.session_id, self.project = demo, session_id, project
        self.latest: dict[str, tuple[b.Backup, str | None]] = {}
        self.first: dict[str, b.Backup] = {}
        self.contents: dict[str, str] = {}
        self.snapshots: dict[str, dict[str, b.Backup]] = {}

    def _backup(self, rel: str, version: int, at: str) -> b.Backup:
        content = self.project.files.get(rel)
        name = None
        if content is not None:
            name = backup_name(self.project.abs(rel), version)
            target = self.demo.layout.backup_path(self.session_id, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode("utf-8"))
            self.contents[name] = content
            self.demo.backups += 1
        backup = b.Backup(name, version, at, self.project.cwd)
        self.latest[rel] = (backup, content)
        return backup

    def snapshot(self, prompt_uuid: str, at: str) -> b.JsonDict:
        """At a prompt: reuse each file's latest backup if unchanged, else back it up anew."""
        tracked: dict[str, b.Backup] = {}
        for rel, (backup, content) in list(self.latest.items()):
            unchanged = self.project.files.get(rel) == content
            tracked[rel] = backup if unchanged else self._backup(rel, backup.version + 1, at)
        self.snapshots[prompt_uuid] = tracked
        return b.build_snapshot(prompt_uuid, tracked, timestamp=at)

    def before_edit(
        self, rel: str, tool_use_uuid: str, prompt_uuid: str, at: str
    ) -> b.JsonDict | None:
        """A file's first backup (v1: its content before the edit, null if absent)."""
        if rel in self.latest:
            return None
        backup = self.first[rel] = self._backup(rel, 1, at)
        self.snapshots[prompt_uuid][rel] = backup
        return b.build_snapshot_delta(
            tool_use_uuid,
            snapshot_message_id=prompt_uuid,
            tracking_path=rel,
            backup=backup,
            timestamp=at,
        )

    def restore(self, prompt_uuid: str) -> None:
        """Restore code to before a prompt: its snapshot entry, else v1; null deletes."""
        snapshot = self.snapshots[prompt_uuid]
        for rel in self.latest:
            name = snapshot.get(rel, self.first[rel]).backup_file_name
            if name is None:
                self.project.files.pop(rel, None)
            else:
                self.project.files[rel] = self.contents[name]


class SessionWriter:
    """Writes one transcript turn by turn, the way the interactive client does."""

    def __init__(
        self,
        demo: DemoState,
        project: Project,
        session_id: str,
        start: datetime,
        *,
        env: b.Envelope | None = None,
        path: Path | None = None,
    ) -> None:
        self.demo, self.ids, self.project = demo, demo.ids, project
        self.env = env or b.Envelope(session_id=session_id, cwd=project.cwd)
        self.path = path or demo.layout.transcript_path(project.cwd, session_id)
        self.clock = start
        self.files = FileHistory(demo, session_id, project)
        self.records: dict[str, b.JsonDict] = {}
        self.pending: list[b.JsonDict] = []
        self.leaf: str | None = None
        self.index = self.turn = 0
        self.prompt_uuid = self.prompt_id = self.prompt_text = self.last_assistant = ""
        self.last_blocks: list[str] = []
        self.prompts: dict[str, tuple[str | None, int, int]] = {}
        self.rewound = False
        self.tools: set[str] = set()
        self.attribution: str | None = None

    @property
    def sid(self) -> str:
        return self.env.session_id

    def tick(self, ms: int = 40) -> str:
        self.clock += timedelta(milliseconds=ms)
        return b.format_timestamp(self.clock)

    def chain(self, record: b.JsonDict) -> None:
        """Queue a chain record; it becomes the leaf the next record hangs on."""
        self.pending.append(record)
        self.records[record["uuid"]] = record
        self.leaf = record["uuid"]

    def active_path(self) -> list[str]:
        path, current = [], self.leaf
        while current is not None:
            path.append(current)
            current = self.records[current]["parentUuid"]
        return path[::-1]

    def flush(self) -> None:
        """Write the session's records: once, at its end (one append per file)."""
        if self.pending:
            append_records(self.path, self.pending)
            self.pending.clear()

    # -- turns ---------------------------------------------------------------------------

    def prompt(
        self,
        display: str,
        *,
        after_s: int,
        pastes: Mapping[int, str] | None = None,
        first: bool = False,
    ) -> str:
        """A typed prompt ``after_s`` seconds on: snapshot, prompt record, history line.

        ``pastes`` fill the ``[Pasted text #N …]`` placeholders of ``display``; ``first``
        adds the attachments the client injects on a session's first prompt.
        """
        self.clock += timedelta(seconds=after_s)
        at = self.clock
        uuid, self.prompt_id = self.ids.uuid(), self.ids.uuid()
        pasted, tags = {}, {}
        for number, text in (pastes or {}).items():
            if b.is_large_paste(text):
                digest = paste_hash(text)
                target = self.demo.layout.paste_path(digest)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
                pasted[number] = b.build_pasted_text(number, text, content_hash=digest)
                tags[number] = str(1000 + int(self.ids.hex(4), 16) % 9000)
            else:
                pasted[number] = b.build_pasted_text(number, text)
        content = b.expand_pastes(display, pastes or {}, tag_ids=tags)
        self.prompt_uuid, self.prompt_text = uuid, b.expand_pastes(display, pastes or {})
        self.prompts[uuid] = (self.leaf, self.index + 1, self.turn + 1)
        self.index, self.turn = self.index + 1, self.turn + 1
        timestamp = b.format_timestamp(at)
        self.pending.append(self.files.snapshot(uuid, self.tick(4)))
        self.chain(
            b.build_user_prompt(
                self.env,
                uuid=uuid,
                parent_uuid=self.leaf,
                prompt_id=self.prompt_id,
                content=content,
                timestamp=timestamp,
                prompt_index=self.index,
                turn_index=self.turn,
            )
        )
        if self.rewound:
            self.pending.append(b.build_rewind_marker(self.sid))
            self.rewound = False
        if first:
            for attachment, text in (
                b.environment_attachment(self.project.cwd),
                b.date_attachment(at.date().isoformat()),
            ):
                assert self.leaf is not None
                self.chain(
                    b.build_attachment(
                        self.env,
                        uuid=self.ids.uuid(),
                        parent_uuid=self.leaf,
                        attachment=attachment,
                        timestamp=self.tick(2),
                        rendered=[text],
                        rendered_role="system",
                        echo_session_id=attachment["type"] == "date",
                    )
                )
        self.demo.note(display, at, self.project, self.sid, pasted)
        return uuid

    def respond(self, blocks: list[b.JsonDict], stop: str) -> str:
        """One API response (one record per block); returns the last block's uuid."""
        assert self.leaf is not None
        uuids = [self.ids.uuid() for _ in blocks]
        stamps = [self.tick(900 if i == 0 else 30) for i in range(len(blocks))]
        context = len(self.active_path())
        usage = b.build_usage(
            input_tokens=2400 + 180 * context,
            output_tokens=45 + 70 * len(blocks),
            cache_read_input_tokens=1800 * min(context, 8),
        )
        for record in b.build_assistant_blocks(
            self.env,
            uuids=uuids,
            parent_uuid=self.leaf,
            message_id=f"msg_{self.ids.hex(24)}",
            request_ref=self.ids.uuid(),
            blocks=blocks,
            timestamps=stamps,
            model=MODEL,
            stop_reason=stop,
            usage=usage,
            attribution_agent=self.attribution,
        ):
            self.chain(record)
        self.last_assistant = uuids[-1]
        self.last_blocks = uuids
        return uuids[-1]

    def _tool(
        self,
        intro: str,
        name: str,
        tool_input: Mapping[str, Any],
        result: tuple[str | list[b.JsonDict], Any],
        *,
        rel: str | None = None,
        bash: bool = False,
    ) -> None:
        tool_id = f"toolu_{self.ids.hex(24)}"
        self.tools.add(name)
        use = self.respond(
            [b.text_block(intro), b.tool_use_block(tool_id, name, tool_input)], "tool_use"
        )
        if rel is not None:
            delta = self.files.before_edit(rel, use, self.prompt_uuid, self.tick(20))
            if delta is not None:
                self.pending.append(delta)
        self._answer(use, tool_id, result, bash=bash)

    def _answer(
        self,
        use: str,
        tool_id: str,
        result: tuple[str | list[b.JsonDict], Any],
        *,
        bash: bool = False,
    ) -> None:
        """The result of call ``tool_id``, hung on its own call's record ``use``."""
        text, structured = result
        self.chain(
            b.build_tool_result(
                self.env,
                uuid=self.ids.uuid(),
                parent_uuid=use,
                prompt_id=self.prompt_id,
                tool_use_id=tool_id,
                content=text,
                tool_use_result=structured,
                timestamp=self.tick(300),
                is_error=False if bash else None,
                sandboxed=False if bash else None,
            )
        )

    def read(self, rel: str, intro: str) -> None:
        path = self.project.abs(rel)
        self._tool(intro, "Read", {"file_path": path}, b.read_result(path, self.project.files[rel]))

    def read_all(self, rels: list[str], intro: str) -> None:
        """Several Reads in one response, as real models make them: one record per block,
        each result on its own call, in the order they finish (the last call first here),
        and what comes next hangs on the result written last."""
        calls = [(f"toolu_{self.ids.hex(24)}", rel) for rel in rels]
        self.tools.add("Read")
        uses = [
            b.tool_use_block(tool_id, "Read", {"file_path": self.project.abs(rel)})
            for tool_id, rel in calls
        ]
        self.respond([b.text_block(intro), *uses], "tool_use")
        for (tool_id, rel), use in reversed(list(zip(calls, self.last_blocks[1:], strict=True))):
            path = self.project.abs(rel)
            self._answer(use, tool_id, b.read_result(path, self.project.files[rel]))

    def write(self, rel: str, content: str, intro: str) -> None:
        path, original = self.project.abs(rel), self.project.files.get(rel)
        result = b.write_result(path, content, original=original)
        self._tool(intro, "Write", {"file_path": path, "content": content}, result, rel=rel)
        self.project.files[rel] = content

    def edit(self, rel: str, old: str, new: str, intro: str) -> None:
        path, original = self.project.abs(rel), self.project.files[rel]
        assert old in original, (rel, old)
        result = b.edit_result(path, original=original, old_string=old, new_string=new)
        tool_input = {"replace_all": False, "file_path": path, "old_string": old, "new_string": new}
        self._tool(intro, "Edit", tool_input, result, rel=rel)
        self.project.files[rel] = original.replace(old, new, 1)

    def bash(self, command: str, stdout: str, intro: str) -> None:
        self._tool(
            intro,
            "Bash",
            {"command": command, "description": intro.rstrip(".")},
            b.bash_result(stdout),
            bash=True,
        )

    def reply(self, text: str) -> None:
        self.respond([b.text_block(text)], "end_turn")

    def end_turn(self, *, pending_agents: int | None = None) -> str:
        """``turn_duration`` and the ``last-prompt`` naming it as the leaf."""
        assert self.leaf is not None
        uuid = self.ids.uuid()
        self.chain(
            b.build_turn_duration(
                self.env,
                uuid=uuid,
                parent_uuid=self.leaf,
                duration_ms=4200 + 37 * len(self.pending),
                message_count=len(self.active_path()),
                timestamp=self.tick(25),
                pending_background_agents=pending_agents,
            )
        )
        self.pending.append(
            b.build_last_prompt(self.sid, last_prompt=self.prompt_text, leaf_uuid=uuid)
        )
        return uuid

    # -- session operations --------------------------------------------------------------

    def rewind(self, prompt_uuid: str, *, after_s: int) -> None:
        """/rewind → "Restore code and conversation" to just before ``prompt_uuid``."""
        self.clock += timedelta(seconds=after_s)
        self.demo.note("/rewind", self.clock, self.project, self.sid)
        self.files.restore(prompt_uuid)
        self.leaf, index, turn = self.prompts[prompt_uuid]
        self.index, self.turn, self.rewound = index - 1, turn - 1, True

    def compact(self, summary: str, *, after_s: int) -> None:
        """/compact: boundary + summary; the last response and its turn end are preserved."""
        self.clock += timedelta(seconds=after_s)
        self.demo.note("/compact", self.clock, self.project, self.sid)
        assert self.leaf is not None
        tail, head = self.leaf, self.last_assistant
        boundary, summary_uuid, prompt_id = self.ids.uuid(), self.ids.uuid(), self.ids.uuid()
        self.env = replace(self.env, slug="tidy-sorting-otter")
        self.chain(
            b.build_compact_boundary(
                self.env,
                uuid=boundary,
                logical_parent_uuid=tail,
                timestamp=self.tick(6000),
                pre_tokens=41_230,
                post_tokens=3_112,
                duration_ms=5_870,
                preserved=b.PreservedSegment(head, summary_uuid, tail, (head, tail)),
            )
        )
        text = b.format_compact_summary(
            summary, transcript_path=str(self.path), tools_used=self.tools
        )
        self.chain(
            b.build_compact_summary(
                self.env,
                uuid=summary_uuid,
                boundary_uuid=boundary,
                prompt_id=prompt_id,
                text=text,
                timestamp=self.tick(1),
                prompt_index=self.index,
                turn_index=self.turn,
            )
        )
        command = (
            "<command-name>/compact</command-name>\n            <command-message>compact"
            "</command-message>\n            <command-args></command-args>"
        )
        stdout = (
            "<local-command-stdout>Compacted (ctrl+o to see full summary)</local-command-stdout>"
        )
        for content, meta in ((b.LOCAL_COMMAND_CAVEAT, True), (command, False), (stdout, False)):
            assert self.leaf is not None
            self.chain(
                b.build_user_text(
                    self.env,
                    uuid=self.ids.uuid(),
                    parent_uuid=self.leaf,
                    prompt_id=prompt_id,
                    content=content,
                    timestamp=self.tick(2),
                    is_meta=meta,
                )
            )

    def summarize(
        self, prompt_uuid: str, summary: str, *, direction: Direction, after_s: int
    ) -> None:
        """/rewind → "Summarize from here" / "Summarize up to here" at ``prompt_uuid``."""
        self.clock += timedelta(seconds=after_s)
        self.demo.note("/rewind", self.clock, self.project, self.sid)
        self.flush()  # the plan reads the session as written so far
        plan = plan_summarize(
            Transcript.open(self.path),
            prompt_uuid,
            summary,
            direction=direction,
            env=self.env,
            timestamp=self.tick(4200),
            new_id=self.ids.uuid,
            prompt_id=self.prompt_id,
        )
        for record in plan.records:
            self.pending.append(record)
            self.records[record["uuid"]] = record
        self.leaf = plan.leaf_uuid

    def fork(self, session_id: str, title: str, *, after_s: int) -> SessionWriter:
        """/branch: copy the conversation into a new session (same uuids, forkedFrom)."""
        self.clock += timedelta(seconds=after_s)
        self.demo.note("/branch", self.clock, self.project, self.sid)
        fork = SessionWriter(self.demo, self.project, session_id, self.clock)
        for record in b.build_fork_records(
            [self.records[u] for u in self.active_path()], new_session_id=session_id
        ):
            fork.chain(record)
        fork.index, fork.turn, fork.prompt_text = self.index, self.turn, self.prompt_text
        assert fork.leaf is not None
        fork.pending += [
            b.build_custom_title(session_id, title),
            b.build_last_prompt(session_id, last_prompt=self.prompt_text, leaf_uuid=fork.leaf),
        ]
        return fork
