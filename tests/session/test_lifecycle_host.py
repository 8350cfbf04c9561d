"""A running session's side files, together: registry entry, env folder, shell snapshot."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from sessiontree.cleanup import plan_cleanup
from sessiontree.lifecycle.live import live_session_ids
from sessiontree.session.host import run_session
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout


def test_a_running_session_and_a_clean_exit(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, "/work/p")
    session.append_prompt("hello")
    ticks = iter(range(1_800_000_000, 1_800_000_100))
    env = {"SHELL": "/bin/bash", "HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    with run_session(layout, session, env=env, clock=lambda: float(next(ticks))) as host:
        entry_path = layout.live_session_path(os.getpid())
        entry = json.loads(entry_path.read_text())
        assert (entry["sessionId"], entry["status"], entry["cwd"]) == (
            session.session_id,
            "idle",
            "/work/p",
        )
        assert live_session_ids(layout) == {session.session_id}
        host.busy()
        busy = json.loads(entry_path.read_text())
        assert busy["status"] == "busy" and busy["statusUpdatedAt"] > entry["statusUpdatedAt"]
        host.idle()
        assert json.loads(entry_path.read_text())["status"] == "idle"
        hook = host.hook_env_file(0)
        assert hook.parent == layout.session_env_path(session.session_id)
        hook.write_text("export FROM_HOOK=1\n")
        assert host.hook_exports() == "export FROM_HOOK=1"
        assert host.shell_snapshot is not None and "export PATH=" in host.shell_snapshot.read_text()
        # retention keeps what is running, however old it looks
        old = time.time() - 90 * 86_400
        os.utime(session.path, (old, old))
        plan = plan_cleanup(layout)
        assert session.path not in {i.path for i in plan.delete}
    assert not entry_path.exists()
    assert not layout.session_env_path(session.session_id).exists()
    assert host.shell_snapshot.exists()  # snapshots stay; retention removes old ones
    assert session.path in {i.path for i in plan_cleanup(layout).delete}


def test_an_error_in_the_host_still_cleans_up(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, "/work/p")
    with (
        pytest.raises(RuntimeError),
        run_session(layout, session, env={"PATH": os.environ["PATH"]}, snapshot_shell=False),
    ):
        raise RuntimeError("the model call failed")
    assert live_session_ids(layout) == set()
    assert not layout.session_env_path(session.session_id).exists()
