"""``sessiontree daemon``: a run handed to the daemon's worker prints what the command
prints on its own, exits as it exits, and is stopped as it would be. Real processes: a
daemon started by ``daemon start``, clients run as ``python -m sessiontree``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree import Session
from sessiontree.cli.daemon import client, server
from sessiontree.storage.layout import Layout

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"


class Daemon:
    """A daemon in a state folder of its own, and the environment its clients run in."""

    def __init__(self, state: Path, root: Path) -> None:
        self.state = state
        self.env = {**os.environ, "SESSIONTREE_STATE_DIR": str(state),
                    "CLAUDE_CONFIG_DIR": str(root)}  # fmt: skip
        self.env.pop(client.NO_DAEMON, None)

    def run(
        self, *args: str, local: bool = False, **kw: object
    ) -> subprocess.CompletedProcess[bytes]:
        env = {**self.env, client.NO_DAEMON: "1"} if local else self.env
        command = [sys.executable, "-m", "sessiontree", *args]
        if "stdout" not in kw:
            kw["capture_output"] = True
        return subprocess.run(command, env=env, timeout=60, **kw)  # type: ignore[call-overload, no-any-return]

    def popen(self, *args: str, **kw: object) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "sessiontree", *args]
        kw.setdefault("env", self.env)
        return subprocess.Popen(command, **kw)  # type: ignore[call-overload, no-any-return]

    def status(self) -> dict[str, object]:
        done = self.run("daemon", "status", "--json")
        status: dict[str, object] = json.loads(done.stdout)
        return status

    def served(self) -> int:
        return int(self.status().get("served", -1))  # type: ignore[call-overload]


@pytest.fixture
def daemon(basic: Path) -> Iterator[Daemon]:
    # (a short folder: a Unix socket's path has at most 107 bytes, pytest's tmp_path more)
    with tempfile.TemporaryDirectory(prefix="st-daemon-") as state:
        running = Daemon(Path(state), basic)
        started = running.run("daemon", "start", "--json")
        assert started.returncode == 0, started.stderr
        pid = json.loads(started.stdout)["pid"]
        try:
            yield running
        finally:
            running.run("daemon", "stop")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)  # (already told to stop, or gone stale)
            assert _until(lambda: _zombie(pid)), "the daemon did not end"


@pytest.mark.parametrize(
    "args",
    [
        ("sessions", "--all", "--json"),
        ("sessions", "--all"),
        ("search", "the", "--all", "--json"),
        ("show", BASIC, "--no-pager"),
        ("tree", BASIC, "--json"),
        ("context", BASIC),
        ("prompts", BASIC, "--json"),
        ("usage", "--by", "day", "--all", "--json"),
        ("export", BASIC, "--format", "md", "-o", "-"),
        ("history", "--json"),
        ("doctor", "--json"),
    ],
    ids=" ".join,
)
def test_a_served_run_prints_what_the_command_prints(daemon: Daemon, args: tuple[str, ...]) -> None:
    local = daemon.run(*args, local=True)
    before = daemon.served()
    served = daemon.run(*args)
    assert daemon.served() == before + 1  # (it was the worker that ran it)
    assert (served.returncode, served.stdout, served.stderr) == (
        local.returncode, local.stdout, local.stderr,
    )  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [
        ("show", "no-such-session"),  # not found: 1
        ("show", "no-such-session", "--json"),  # the JSON error document
        ("search", "--no-such-option", "x"),  # usage: 2
        ("usage", "--since", "yesterday-ish", "--json"),
    ],
    ids=" ".join,
)
def test_errors_and_exit_codes_are_the_commands(daemon: Daemon, args: tuple[str, ...]) -> None:
    local = daemon.run(*args, local=True)
    served = daemon.run(*args)
    assert local.returncode != 0
    assert (served.returncode, served.stdout, served.stderr) == (
        local.returncode, local.stdout, local.stderr,
    )  # fmt: skip


def test_the_worker_takes_the_clients_folder_time_zone_and_environment(
    daemon: Daemon, tmp_path: Path
) -> None:
    """A relative path is the client's, local times its $TZ, the root its --root."""
    transcript = next((Path(daemon.env["CLAUDE_CONFIG_DIR"]) / "projects").rglob(f"{BASIC}.jsonl"))
    for zone in ("Asia/Tokyo", "America/Los_Angeles"):
        env = {**daemon.env, "TZ": zone}
        args = [sys.executable, "-m", "sessiontree", "show", transcript.name, "--no-pager"]
        kw = {"cwd": transcript.parent, "capture_output": True, "timeout": 60}
        served = subprocess.run(args, env=env, **kw)  # type: ignore[call-overload]
        local = subprocess.run(args, env={**env, client.NO_DAEMON: "1"}, **kw)  # type: ignore[call-overload]
        assert served.returncode == 0, served.stderr
        assert served.stdout == local.stdout
    assert daemon.served() == 2


def test_commands_that_write_or_ask_are_not_served(daemon: Daemon) -> None:
    before = daemon.served()
    done = daemon.run("switch", BASIC, "--dry-run")
    assert daemon.run("--help").returncode == 0
    assert daemon.served() == before
    assert done.returncode == daemon.run("switch", BASIC, "--dry-run", local=True).returncode


def test_output_to_a_terminal_stays_with_the_terminals_process(daemon: Daemon) -> None:
    import pty

    main, terminal = pty.openpty()
    try:
        done = daemon.run("sessions", "--all", stdout=terminal, stderr=subprocess.PIPE)
    finally:
        os.close(terminal)
        os.close(main)
    assert done.returncode == 0
    assert daemon.served() == 0


def test_a_reader_gone_ends_the_run_as_alone(daemon: Daemon) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        served = daemon.run("sessions", "--all", stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert (served.returncode, served.stderr) == (141, b"")
    assert daemon.served() == 1


def _big_session(root: Path) -> str:
    """A session whose export is far bigger than a pipe holds (a worker writing it to a
    pipe nobody reads waits in the write)."""
    session = Session.create(Layout(root), cwd="/tmp/big-project")
    session.append_prompt("word " * 200_000)
    session.end_turn()
    return session.session_id


def _workers(daemon: Daemon) -> int:
    return int(daemon.status()["workers"])  # type: ignore[call-overload]


def _until(condition: object, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_ctrl_c_to_the_client_reaches_the_worker(daemon: Daemon) -> None:
    """Interrupted while it writes, a served run ends as the command alone does."""
    session = _big_session(Path(daemon.env["CLAUDE_CONFIG_DIR"]))
    ended = []
    for local in (True, False):
        env = {**daemon.env, client.NO_DAEMON: "1"} if local else daemon.env
        with daemon.popen("export", session, "--format", "md", "-o", "-", env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:  # fmt: skip
            assert run.stdout is not None and run.stderr is not None
            assert run.stdout.read(1)  # (it has begun to write, and waits for a reader)
            if not local:
                assert _workers(daemon) == 1
            run.send_signal(signal.SIGINT)
            run.wait(timeout=30)
            ended.append((run.returncode, run.stderr.read()))
    assert ended[0][0] != 0
    assert ended[1] == ended[0]
    assert _until(lambda: _workers(daemon) == 0)


def test_a_client_killed_takes_its_worker_with_it(daemon: Daemon) -> None:
    session = _big_session(Path(daemon.env["CLAUDE_CONFIG_DIR"]))
    with daemon.popen(
        "export", session, "--format", "md", "-o", "-", stdout=subprocess.PIPE
    ) as run:
        assert _until(lambda: _workers(daemon) == 1)
        run.kill()
        run.wait(timeout=30)
        assert _until(lambda: _workers(daemon) == 0)


def test_changed_code_is_run_locally_and_the_daemon_leaves(daemon: Daemon) -> None:
    module = Path(server.__file__)
    before = module.stat()
    try:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        done = daemon.run("sessions", "--all", "--json")
        assert done.returncode == 0
        assert json.loads(done.stdout)  # (run by the client itself)
        assert _until(lambda: not daemon.status()["running"])
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_start_twice_keeps_the_one_daemon_and_run_refuses_a_second(daemon: Daemon) -> None:
    first = daemon.status()
    again = daemon.run("daemon", "start", "--json")
    assert json.loads(again.stdout)["pid"] == first["pid"]
    second = daemon.run("daemon", "run")
    assert second.returncode == 1
    assert second.stderr.decode().strip().splitlines() == [
        "sessiontree: a daemon already runs (or is starting) here"
    ]
    assert oct((daemon.state / "daemon.sock").stat().st_mode & 0o777) == "0o600"


def test_stop_and_status_without_a_daemon(basic: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="st-daemon-") as state:
        idle = Daemon(Path(state), basic)
        assert idle.status() == {"running": False}
        stopped = idle.run("daemon", "stop", "--json")
        assert json.loads(stopped.stdout) == {"stopped": False, "pid": None}
        assert idle.run("sessions", "--all", "--json").returncode == 0


def test_a_socket_path_too_long_is_one_line(basic: Path, tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    done = Daemon(deep, basic).run("daemon", "start")
    assert done.returncode == 1
    assert done.stderr.decode().startswith("sessiontree: the daemon's socket would be ")
    assert len(done.stderr.decode().strip().splitlines()) == 1


@pytest.mark.skipif(os.getuid() != 0, reason="only root can connect as another user")
def test_another_user_is_not_served(daemon: Daemon) -> None:
    path = str(daemon.state / client.SOCKET_NAME)
    os.chmod(daemon.state, 0o755)
    os.chmod(path, 0o777)  # (even so)
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.setuid(65534)
        import socket

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.connect(path)
            sock.send(b"x")
            os._exit(0 if sock.recv(100) == b"" else 3)
        except OSError:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# -- the parts, in process --------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["search", "x"], "search"),
        (["--root", "/r", "sessions", "--all"], "sessions"),
        (["--root=/r", "--store", "dsn", "usage"], "usage"),
        (["--store", "search", "show"], "show"),  # (a value that looks like a command)
        (["--help"], None),
        (["--version"], None),
        ([], None),
        (["--root"], None),
        (["--", "tree"], "tree"),
    ],
)
def test_command_of(argv: list[str], command: str | None) -> None:
    assert server.command_of(argv) == command


def test_a_run_of_another_installation_or_interpreter_is_declined() -> None:
    daemon = server.Daemon("/nonexistent/daemon.sock", stamp=server.code_stamp())
    run = client.request(["sessions"])
    fds = [0, 1, 2, 3]
    assert daemon.declines(run, fds) is None
    assert daemon.declines({**run, "package": "/elsewhere"}, fds) == "another installation's client"
    assert (
        daemon.declines({**run, "python": "/usr/bin/python9"}, fds)
        == "another interpreter's client"
    )
    assert (
        daemon.declines({**run, "argv": ["restore"]}, fds) == "a command the daemon does not serve"
    )
    assert daemon.declines(run, fds[:3]) == "not the four descriptors a run sends"
    assert server.Daemon("/x", stamp={}).declines(run, fds) == server.STALE


def test_sigterm_ends_an_idle_daemon(daemon: Daemon) -> None:
    """The signal's byte wakes the loop (a handler alone would leave it waiting)."""
    pid = int(daemon.status()["pid"])  # type: ignore[call-overload]
    os.kill(pid, signal.SIGTERM)
    assert _until(lambda: not os.path.exists(daemon.state / client.SOCKET_NAME))
    assert _until(lambda: _zombie(pid))
    assert daemon.status() == {"running": False}


def _zombie(pid: int) -> bool:
    """Whether the process ``pid`` has ended (gone, or a zombie not reaped yet)."""
    with contextlib.suppress(OSError):
        return "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    return True


def test_ctrl_c_the_moment_a_run_starts_leaves_the_daemon_serving(daemon: Daemon) -> None:
    """Ctrl+C at any moment of the hand-over ends that run only: the daemon serves on
    (a signal reaching a worker before its handlers are its own waits for them)."""
    for at in range(40):  # (Ctrl+C from before the hand-over to after it: 0 to 39 ms)
        with daemon.popen("sessions", "--all", "--json", stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL) as run:  # fmt: skip
            time.sleep(at / 1000)
            run.send_signal(signal.SIGINT)
            run.wait(timeout=30)
    assert daemon.status()["running"] is True
    before = daemon.served()
    assert daemon.run("sessions", "--all", "--json").returncode == 0
    assert daemon.served() == before + 1
