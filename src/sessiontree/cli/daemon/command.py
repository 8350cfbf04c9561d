"""``sessiontree daemon`` (start, stop, status, run): the warm process the read-only commands
are handed to (:mod:`sessiontree.cli.daemon.server`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from sessiontree.cli.daemon import client
from sessiontree.cli.main import Env
from sessiontree.cli.output import current_env, emit_json, json_option
from sessiontree.errors import Refused

#: How long ``start`` waits for the daemon to answer (it imports everything first).
START_SECONDS = 30.0


@click.group()
def daemon() -> None:
    """A warm process that runs the read-only commands for you.

    While it runs, `sessions`, `show`, `tree`, `context`, `prompts`, `checkpoints`,
    `history`, `search`, `usage`, `export`, `secrets` and `doctor` whose output is not a
    terminal (a script, a pipe) are run by a worker forked from it, with everything
    imported: a quick command takes the time its work takes, not the interpreter's
    start-up. Output, exit codes and errors are the same. Other commands, and any run
    with $SESSIONTREE_NO_DAEMON set, run as usual. It serves only you, only this
    installation, and leaves when the installed code changes."""


def _socket(env: Env) -> str:
    return client.socket_path(env.environ)


idle_option = click.option(
    "--idle", type=click.FloatRange(min=0), default=0, metavar="MINUTES",
    help="Leave after this long without a run (default 0: stay).",
)  # fmt: skip


@daemon.command()
@idle_option
@json_option
def start(idle: float, as_json: bool) -> None:
    """Start the daemon in the background (its log: daemon.log in the state folder)."""
    env = current_env()
    path = _socket(env)
    status = client.ask(path, "status")
    if status is None:
        _check_place(env, path)
        log = env.state_dir / "daemon.log"
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "sessiontree", "daemon", "run", "--idle", str(idle)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                env={**env.environ, client.NO_DAEMON: "1"},
            )  # fmt: skip
        status = _wait_for(path, process, log)
    if as_json:
        emit_json(_shown(status))
        return
    click.echo(f"the daemon runs (pid {status['pid']}), on {status['socket']}")


@daemon.command()
@json_option
def stop(as_json: bool) -> None:
    """Stop the daemon (the runs it has begun end first)."""
    path = _socket(current_env())
    answer = client.ask(path, "stop")
    if answer is not None:
        deadline = time.monotonic() + START_SECONDS
        while os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.02)
    if as_json:
        emit_json({"stopped": answer is not None, "pid": answer and answer.get("pid")})
    elif answer is None:
        click.echo("no daemon runs")
    else:
        click.echo(f"stopped the daemon (pid {answer['pid']})")


@daemon.command()
@json_option
def status(as_json: bool) -> None:
    """Whether the daemon runs: its pid, since when, how many runs it served."""
    path = _socket(current_env())
    answer = client.ask(path, "status")
    if as_json:
        emit_json({"running": answer is not None, **(_shown(answer) if answer else {})})
    elif answer is None:
        click.echo("no daemon runs: `sessiontree daemon start` starts one")
    else:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(answer["started"]))
        click.echo(
            f"the daemon runs (pid {answer['pid']}) since {since}, on {answer['socket']}: "
            f"{answer['served']} run(s) served, {answer['workers']} at work now"
        )


@daemon.command()
@idle_option
def run(idle: float) -> None:
    """Run the daemon in this process, in the foreground (for a service manager)."""
    from sessiontree.cli.daemon.server import Daemon, code_stamp, preload

    env = current_env()
    path = os.path.abspath(_socket(env))
    _check_place(env, path)
    _check_pidfd()
    with _daemon_lock(env.state_dir / "daemon.lock") as lock:
        os.chdir("/")  # (a daemon holds no folder of the caller's busy)
        preload()
        server = Daemon(path, idle_seconds=idle * 60, keep_open=lock)
        server.stamp = code_stamp()
        server.listen()
        click.echo(f"the daemon (pid {os.getpid()}) listens on {path}", err=True)
        server.serve()


def _check_place(env: Env, path: str) -> None:
    if len(os.fsencode(path)) > client.MAX_SOCKET_PATH:
        raise Refused(
            f"the daemon's socket would be {path}, longer than a Unix socket's path may be "
            f"({client.MAX_SOCKET_PATH} bytes): set $SESSIONTREE_STATE_DIR to a shorter folder"
        )
    env.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)


def _check_pidfd() -> None:
    """The daemon waits for its workers on pidfds (Linux 5.3 and later)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError) as exc:
        raise Refused(f"the daemon needs pidfds (Linux 5.3 or later): {exc}") from None


@contextlib.contextmanager
def _daemon_lock(path: Path) -> Iterator[int]:
    """Held while a daemon runs: a second one refuses rather than take its socket."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Refused("a daemon already runs (or is starting) here") from None
        yield fd
    finally:
        os.close(fd)


def _wait_for(path: str, process: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    """The status of the daemon ``process`` once it answers; its last word if it ends
    (or takes too long) before."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        status = client.ask(path, "status")
        if status is not None:
            return status
        time.sleep(0.05)
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    raise Refused("the daemon did not start" + (f": {lines[-1]}" if lines else f" (see {log})"))


def _shown(status: dict[str, Any]) -> dict[str, Any]:
    return {key: status[key] for key in ("pid", "socket", "started", "served", "workers")}
