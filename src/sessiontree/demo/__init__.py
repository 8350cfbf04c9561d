"""A realistic sample config root, written through :class:`~sessiontree.session.Session`.

``write_demo`` builds, under ``layout.root``, what a few days of Claude Code use leave
behind (shapes of client 2.1.328), plus the project folders those sessions worked in
(``<root>/../demo-projects/<name>``, files in their final state, so restoring a
checkpoint later does something real):

* ``weather-cli`` — rewinds: one prompt re-sent three times (three user children on one
  parent, each re-send followed by the all-zero ``last-prompt``), then a second rewind
  further down; file checkpoints with real backups (v1 = content before the first edit,
  ``backupFileName: null`` for a created file), snapshots and deltas.
* ``notes-app`` — ``/compact``: boundary, summary, and a preserved segment that readers
  re-link so the context starts with the summary.
* ``api-server`` — a background subagent (``subagents/agent-<id>.jsonl`` + ``.meta.json``,
  a task notification), then ``/branch``: a second file with a new session id, the same
  uuids, ``forkedFrom`` on every copy and a ``"<title> (Branch)"`` custom title.
* ``log-parser`` — a large paste (``paste-cache/<hash>.txt``) and a short inline one,
  then ``/rewind`` → "Summarize up to here" (a partial compaction: the later turn kept
  verbatim, re-linked after the summary); and a session 45 days old, which ``cleanup``
  (``cleanupPeriodDays`` 30) would delete.

Every record is written by :class:`~sessiontree.session.Session` and every checkpoint
by :class:`~sessiontree.checkpoints.capture.FileHistory`, from the real files of the
project folders (the rewinds restore code through :mod:`sessiontree.checkpoints.restore`);
:mod:`sessiontree.demo.agent` only plays the model and its tools. Ids come from a fixed
seed and every time from ``now``: the same ``now`` writes the same bytes. Re-running
replaces the demo's own files (transcripts, backups, history lines with its session
ids, the project folders' files) and leaves everything else alone.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sessiontree.checkpoints.undo import latest_undo
from sessiontree.demo import scenarios
from sessiontree.demo.agent import IdSource
from sessiontree.errors import Refused
from sessiontree.history.log import iter_history_lines
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.layout import Layout, session_dir
from sessiontree.storage.remove import remove_empty_folder, remove_file, remove_tree

__all__ = ["ROLES", "DemoSession", "DemoSummary", "demo_session_ids", "write_demo"]

_SEED = "sessiontree-demo"
#: What each demo session shows, in the order ``write_demo`` reports them.
ROLES = ("rewinds", "compacted", "subagent-and-fork", "fork", "paste", "old")


@dataclass(frozen=True)
class DemoSession:
    """One session the demo wrote."""

    session_id: str
    role: str
    title: str
    path: Path
    cwd: str


@dataclass(frozen=True)
class DemoSummary:
    """What ``write_demo`` built: the root, the project folders and every session."""

    root: Path
    projects_dir: Path
    sessions: tuple[DemoSession, ...]
    backups: int

    def session(self, role: str) -> DemoSession:
        return next(s for s in self.sessions if s.role == role)


def demo_session_ids() -> tuple[str, ...]:
    """The session ids the demo writes, in ``ROLES`` order (fixed, whatever ``now``)."""
    ids = IdSource(f"{_SEED}/sessions")
    return tuple(ids.uuid() for _ in ROLES)


def _remove_previous(layout: Layout, ids: tuple[str, ...]) -> None:
    """Make re-running idempotent: drop what an earlier demo wrote, and nothing else."""
    for project_dir in list(layout.iter_project_dirs()):
        for transcript in list(layout.iter_transcripts(project_dir)):
            if transcript.stem in ids:
                remove_file(transcript)
                remove_tree(session_dir(transcript))
        remove_empty_folder(project_dir)
    for session_id in ids:
        remove_tree(layout.backup_dir(session_id))
        while True:  # what the demo's "restore code" saved before it overwrote files
            try:
                remove_tree(latest_undo(layout, session_id))
            except Refused:
                break
    demo_lines = {entry.line for entry in iter_history_lines(layout) if entry.session_id in ids}
    if demo_lines:  # rewrite only if an earlier demo left lines there; the rest byte-exact
        with layout.history_path.open("rb") as handle:
            kept = [line for number, line in enumerate(handle, 1) if number not in demo_lines]
        write_atomically(layout.history_path, b"".join(kept))


def write_demo(layout: Layout, *, now: datetime, projects_dir: Path | None = None) -> DemoSummary:
    """Write the demo store into ``layout.root`` (and its project folders) as of ``now``.

    ``projects_dir`` holds the demo's working folders (default ``<root>/../demo-projects``).
    """
    session_ids = demo_session_ids()
    base = (projects_dir or layout.root.parent / "demo-projects").resolve()
    _remove_previous(layout, session_ids)
    layout.root.mkdir(parents=True, exist_ok=True)
    if not layout.settings_path.exists():
        settings = json.dumps({"cleanupPeriodDays": 30}, indent=2) + "\n"
        write_atomically(layout.settings_path, settings.encode())
    ids = IdSource(f"{_SEED}/records")
    written = scenarios.run(layout, ids, base, dict(zip(ROLES, session_ids, strict=True)), now)
    sessions = []
    for agent, role, title, project in sorted(written, key=lambda w: ROLES.index(w[1])):
        # mtime = the last record's time, as if the sessions had really run then
        moment = agent.clock.now.timestamp()
        os.utime(agent.session.path, (moment, moment))
        sessions.append(
            DemoSession(agent.session.session_id, role, title, agent.session.path, str(project.cwd))
        )
    backups = sum(
        len(os.listdir(folder))
        for folder in (layout.backup_dir(session_id) for session_id in session_ids)
        if folder.is_dir()
    )
    return DemoSummary(layout.root, base, tuple(sessions), backups)
