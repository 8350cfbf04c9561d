"""Side files of a live session: session-env and shell snapshots."""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from sessiontree.errors import Refused
from sessiontree.lifecycle.session_env import (
    create_session_env,
    hook_env_file,
    list_hook_env_files,
    read_session_env,
    remove_session_env,
)
from sessiontree.lifecycle.shell_snapshot import (
    build_fallback_snapshot,
    write_shell_snapshot,
)
from sessiontree.storage.layout import Layout

SID = "6f1743e6-7638-4fe8-9c46-afe0615d0293"


@pytest.fixture
def layout(isolated_home: Path) -> Layout:
    return Layout(isolated_home / ".claude")


# -- session-env -------------------------------------------------------------------------


def test_create_session_env_is_private(layout: Layout) -> None:
    folder = create_session_env(layout, SID)
    assert folder == layout.root / "session-env" / SID
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert create_session_env(layout, SID) == folder  # again: kept


def test_hook_env_file_names_are_the_clients(layout: Layout) -> None:
    folder = layout.session_env_path(SID)
    assert hook_env_file(layout, SID, 0) == folder / "sessionstart-hook-0.sh"
    assert hook_env_file(layout, SID, 3, event="CwdChanged") == folder / "cwdchanged-hook-3.sh"


def test_read_session_env_orders_as_the_client(layout: Layout, tmp_path: Path) -> None:
    folder = create_session_env(layout, SID)
    (folder / "sessionstart-hook-10.sh").write_text("export TEN=10\n")
    (folder / "sessionstart-hook-2.sh").write_text("\n  export TWO=2  \n\n")
    (folder / "setup-hook-5.sh").write_text("export SETUP=1\n")
    (folder / "filechanged-hook-0.sh").write_text("export FC=1\n")
    (folder / "sessionstart-hook-3.sh").write_text("   \n")  # empty: left out
    (folder / "notes.sh").write_text("export NO=1\n")  # not a hook file name
    own = tmp_path / "own-env"
    own.write_text("export OWN=1\n")
    assert list_hook_env_files(layout, SID) == [
        "setup-hook-5.sh",
        "sessionstart-hook-2.sh",
        "sessionstart-hook-3.sh",
        "sessionstart-hook-10.sh",
        "filechanged-hook-0.sh",
    ]
    assert read_session_env(layout, SID, env_file=own) == (
        "export OWN=1\nexport SETUP=1\nexport TWO=2\nexport TEN=10\nexport FC=1"
    )


def test_read_session_env_sources_in_a_real_shell(layout: Layout) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    create_session_env(layout, SID)
    hook_env_file(layout, SID, 0).write_text("export GREETING='hello world'\n")
    script = read_session_env(layout, SID) + '\nprintf %s "$GREETING"'
    done = subprocess.run([bash, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout == "hello world"


def test_read_session_env_never_follows_symlinks(layout: Layout, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("export SECRET=1\n")
    folder = create_session_env(layout, SID)
    (folder / "sessionstart-hook-0.sh").symlink_to(secret)
    assert read_session_env(layout, SID) == ""
    assert read_session_env(layout, "no-such-session") == ""


def test_remove_session_env_removes_only_that_folder(layout: Layout, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    other = create_session_env(layout, "other-session")
    folder = create_session_env(layout, SID)
    hook_env_file(layout, SID, 0).write_text("export A=1\n")
    (folder / "link").symlink_to(outside)
    assert remove_session_env(layout, SID) is True
    assert not folder.exists()
    assert (outside / "keep.txt").read_text() == "keep"
    assert other.is_dir()
    assert remove_session_env(layout, SID) is False


def test_remove_session_env_unlinks_a_symlinked_folder(layout: Layout, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    layout.session_env_dir.mkdir(parents=True)
    layout.session_env_path(SID).symlink_to(outside)
    assert remove_session_env(layout, SID) is True
    assert (outside / "keep.txt").exists()


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", "", ".hidden"])
def test_session_ids_cannot_walk_out(layout: Layout, bad: str) -> None:
    with pytest.raises(Refused):
        create_session_env(layout, bad)
    with pytest.raises(Refused):
        remove_session_env(layout, bad)


# -- shell snapshots ---------------------------------------------------------------------

_NAME = re.compile(r"^snapshot-(bash|zsh|sh)-(\d+)-([0-9a-z]{6})\.sh$")


def _bash() -> str:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    return bash


def test_snapshot_captures_functions_aliases_options_and_path(
    layout: Layout, isolated_home: Path
) -> None:
    bash = _bash()
    (isolated_home / ".bashrc").write_text(
        'greet() { echo "hi $1"; }\n'
        "_completion_helper() { :; }\n"
        "alias ll='ls -l'\n"
        "shopt -s globstar\n"
        "export PATH=/opt/extra/bin:$PATH\n"
    )
    env = {"HOME": str(isolated_home), "PATH": "/usr/bin:/bin", "SHELL": bash}
    path = write_shell_snapshot(
        layout, env=env, clock=lambda: 1795980136.746, rand=lambda: "k3x9q2"
    )
    assert path == layout.shell_snapshots_dir / "snapshot-bash-1795980136746-k3x9q2.sh"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert text.startswith(
        "# Snapshot file\n# Unset all aliases to avoid conflicts with functions\n"
        "unalias -a 2>/dev/null || true\n# Shopt\n"
    )
    for part in ("# Functions\n", "# Shell Options\n", "# Aliases\n", "shopt -s globstar\n"):
        assert part in text
    assert "_completion_helper" not in text  # single-underscore helpers are left out
    assert "alias -- ll='ls -l'\n" in text
    # The login shell's PATH (its profile may rewrite it), with the rc file's addition.
    assert re.search(r"\nexport PATH=/opt/extra/bin:[^\n]*/bin\n\Z", text)
    # Sourcing the snapshot in a fresh shell gives the user's function and alias back.
    probe = f"source {path}\ngreet there\nalias ll"
    done = subprocess.run(
        [bash, "-c", probe], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}
    )
    assert done.stdout == "hi there\nalias ll='ls -l'\n"
    assert [p.name for p in layout.shell_snapshots_dir.iterdir()] == [path.name]


def test_snapshot_name_with_default_random_suffix(layout: Layout, isolated_home: Path) -> None:
    env = {"HOME": str(isolated_home), "PATH": "/usr/bin:/bin", "SHELL": _bash()}
    path = write_shell_snapshot(layout, env=env)
    match = _NAME.match(path.name)
    assert match is not None and match.group(1) == "bash"
    assert abs(int(match.group(2)) - time.time() * 1000) < 60_000


def test_snapshot_falls_back_when_the_shell_fails(layout: Layout, isolated_home: Path) -> None:
    env = {"HOME": str(isolated_home), "PATH": "/usr/local/bin:/a b/bin"}
    path = write_shell_snapshot(
        layout, env=env, shell="/nonexistent/bash", clock=lambda: 1.0, rand=lambda: "aaaaaa"
    )
    assert path.name == "snapshot-bash-1000-aaaaaa.sh"
    assert path.read_text() == build_fallback_snapshot("/usr/local/bin:/a b/bin")
    assert path.read_text().endswith("export PATH='/usr/local/bin:/a b/bin'\n")


def test_snapshot_times_out_to_the_fallback(layout: Layout, isolated_home: Path) -> None:
    (isolated_home / ".bashrc").write_text("sleep 30\n")
    env = {"HOME": str(isolated_home), "PATH": "/usr/bin:/bin", "SHELL": _bash()}
    started = time.monotonic()
    path = write_shell_snapshot(layout, env=env, timeout=1.0)
    assert time.monotonic() - started < 10
    assert path.read_text() == build_fallback_snapshot("/usr/bin:/bin")
    assert not [p for p in layout.shell_snapshots_dir.iterdir() if p.name.startswith(".")]


def test_unknown_shell_gets_the_fallback_as_sh(layout: Layout, isolated_home: Path) -> None:
    env = {"HOME": str(isolated_home), "PATH": "/bin", "SHELL": "/bin/dash"}
    path = write_shell_snapshot(layout, env=env, clock=lambda: 2.0, rand=lambda: "bbbbbb")
    assert path.name == "snapshot-sh-2000-bbbbbb.sh"
    assert path.read_text() == build_fallback_snapshot("/bin")
