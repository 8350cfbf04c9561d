"""What a live agent host keeps beside the transcript while a session runs.

As the client does while it runs a session: its entry in ``sessions/<pid>.json`` (``idle``
between turns, ``busy`` during one), ``session-env/<sessionId>/`` where SessionStart hooks
write the exports later shell commands source (``CLAUDE_ENV_FILE``), and a snapshot of
the user's shell in ``shell-snapshots/``. A clean exit removes the registry entry and the
session's env folder; the snapshot stays (retention removes old ones). A host killed
mid-session leaves a stale entry, which readers recognise by its dead (or reused) pid.

    with run_session(layout, session, env=os.environ) as host:
        host.busy()
        ...   # a turn
        host.idle()
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sessiontree.lifecycle.live import LiveSession, live_session, set_status
from sessiontree.lifecycle.session_env import (
    create_session_env,
    hook_env_file,
    read_session_env,
    remove_session_env,
)
from sessiontree.lifecycle.shell_snapshot import write_shell_snapshot
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout

Clock = Callable[[], float]


@dataclass
class RunningSession:
    """A session a live host is running: status changes and the hook env files."""

    layout: Layout
    session: Session
    live: LiveSession
    env_dir: Path
    shell_snapshot: Path | None
    clock: Clock = time.time
    #: The env folders of the sessions a ``/clear`` started here, removed at the end too.
    env_dirs: list[Path] = field(default_factory=list)

    def busy(self) -> None:
        """A turn started: the registry says ``busy``."""
        self.live = set_status(self.layout, self.live.pid, "busy", clock=self.clock)

    def idle(self) -> None:
        """The turn ended: ``idle`` again."""
        self.live = set_status(self.layout, self.live.pid, "idle", clock=self.clock)

    def hook_env_file(self, hook_index: int) -> Path:
        """The ``CLAUDE_ENV_FILE`` given to the SessionStart hook number ``hook_index``."""
        return hook_env_file(self.layout, self.session.session_id, hook_index)

    def hook_exports(self) -> str:
        """What the hooks exported, in the client's order: source it before a command."""
        return read_session_env(self.layout, self.session.session_id)


@contextlib.contextmanager
def run_session(
    layout: Layout,
    session: Session,
    *,
    env: Mapping[str, str],
    kind: str = "interactive",
    name: str | None = None,
    snapshot_shell: bool = True,
    clock: Clock = time.time,
) -> Iterator[RunningSession]:
    """Register ``session`` as running in this process for the ``with`` block, with its
    env folder and (``snapshot_shell``) a snapshot of the shell in ``env["SHELL"]``."""
    snapshot = write_shell_snapshot(layout, env=env, clock=clock) if snapshot_shell else None
    env_dir = create_session_env(layout, session.session_id)
    running: RunningSession | None = None
    try:
        with live_session(
            layout,
            session_id=session.session_id,
            cwd=session.env.cwd,
            kind=kind,
            entrypoint=session.env.entrypoint,
            name=name,
            clock=clock,
        ) as live:
            running = RunningSession(layout, session, live, env_dir, snapshot, clock)
            yield running
    finally:
        remove_session_env(layout, session.session_id)
        for folder in running.env_dirs if running is not None else ():
            remove_session_env(layout, folder.name)
