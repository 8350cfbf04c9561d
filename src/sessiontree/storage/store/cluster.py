"""A private PostgreSQL cluster in a folder: for the store's tests and ``store init``.

The folder holds everything::

    <folder>/data/         the cluster (initdb's data directory)
    <folder>/socket/       the server's Unix socket (mode 0700: trust auth, so the folder
                           is the only lock on the door)
    <folder>/server.log    what the server writes
    <folder>/cluster.json  what this module needs to find it again: port, bin, fast

No TCP port is opened (``listen_addresses`` is empty): the port number only names the
socket file. Run as root, the server runs as the ``postgres`` OS user (``initdb`` and
``pg_ctl`` refuse root), through ``runuser``.

Every failure raises :class:`ClusterError`, one line that ends with the last lines of
what initdb, pg_ctl or the server said.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sessiontree.errors import SessionTreeError

#: The database superuser initdb makes, and the database a cluster serves.
ROLE = "sessiontree"
DATABASE = "sessiontree"
#: The OS user the server runs as when we are root.
SERVER_USER = "postgres"
#: Settings that trade durability for speed: a throwaway cluster's (tests).
FAST_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")
#: ``sun_path`` holds 108 bytes with its NUL; PostgreSQL refuses a longer socket path.
MAX_SOCKET_PATH = 107
#: How many lines of a tool's output an error quotes.
TAIL_LINES = 3


class ClusterError(SessionTreeError):
    """A local cluster that could not be made, started or stopped. ``step`` names what
    failed (``initdb``, ``start``, ...), ``reason`` says why, in one line."""

    code = "store-cluster"

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"{step} failed: {reason}")
        self.step = step
        self.reason = reason


def find_server_bin() -> Path | None:
    """The folder that holds ``initdb``, ``pg_ctl`` and ``postgres``: ``pg_config
    --bindir`` when it has ``pg_ctl`` (on Debian it names the client's folder, which may
    not), else the newest ``/usr/lib/postgresql/<version>/bin`` that has it."""
    try:
        done = subprocess.run(
            ["pg_config", "--bindir"], check=False, capture_output=True, text=True
        )
    except OSError:
        pass
    else:
        bindir = Path(done.stdout.strip())
        if done.returncode == 0 and done.stdout.strip() and (bindir / "pg_ctl").is_file():
            return bindir
    versions = [
        (int(path.name), path / "bin")
        for path in Path("/usr/lib/postgresql").glob("*")
        if path.name.isdigit() and (path / "bin" / "pg_ctl").is_file()
    ]
    return max(versions)[1] if versions else None


@dataclass(frozen=True)
class Cluster:
    """A cluster initialized in ``folder``, served on a socket in it under ``port``, by
    the server in ``bin``; ``fast`` when it runs without fsync (a throwaway one)."""

    folder: Path
    port: int
    bin: Path
    fast: bool = False

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def socket_dir(self) -> Path:
        return self.folder / "socket"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    @property
    def dsn(self) -> str:
        """A libpq ``key=value`` string for the ``sessiontree`` database, by socket."""
        return format_conninfo(
            host=str(self.socket_dir), port=str(self.port), dbname=DATABASE, user=ROLE
        )

    def running(self) -> bool:
        """Whether a server is running on this cluster's data (``pg_ctl status``)."""
        if not self.data.is_dir():
            return False
        done = _run_server_tool(
            self.bin / "pg_ctl", "status", "-D", str(self.data), cwd=self.folder
        )
        return done.returncode == 0

    def start(self) -> None:
        """Start the server and wait until it takes connections; nothing when it runs."""
        if self.running():
            return
        _make_socket_dir(self.socket_dir)
        options = ["-p", str(self.port), "-k", str(self.socket_dir), "-c", "listen_addresses="]
        for setting in FAST_SETTINGS if self.fast else ():
            options += ["-c", setting]
        # pg_ctl hands -o to /bin/sh: each word quoted, so a folder may hold spaces.
        logged = self.log.stat().st_size if self.log.exists() else 0
        done = _run_server_tool(
            self.bin / "pg_ctl",
            "start",
            "-D", str(self.data),
            "-w",
            "-l", str(self.log),
            "-o", shlex.join(options),
            cwd=self.folder,
        )  # fmt: skip
        if done.returncode != 0:
            # pg_ctl says only "could not start server": the reason is in the log.
            said = _read_from(self.log, logged) or done.stderr or done.stdout
            raise ClusterError("start", f"pg_ctl start in {self.data}: {tail(said)}")

    def stop(self) -> None:
        """Stop the server (``pg_ctl -m fast stop``: sessions cut, no crash recovery
        needed after); nothing when it is not running."""
        if not self.running():
            return
        done = _run_server_tool(
            self.bin / "pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w", cwd=self.folder
        )
        if done.returncode != 0:
            raise ClusterError("stop", f"pg_ctl stop in {self.data}: {tail(done.stderr)}")


def init_cluster(
    folder: Path, *, port: int | None = None, fast: bool = False, bin: Path | None = None
) -> Cluster:
    """A running cluster in ``folder`` with the ``sessiontree`` database in it: made
    there (the folder is created when missing), or the one made there before, started
    when it is not running. ``port`` defaults to a free one (or the one recorded);
    ``fast`` turns fsync off; ``bin`` defaults to :func:`find_server_bin`."""
    folder = folder.absolute()
    recorded = open_cluster(folder)
    if recorded is not None:
        cluster = _reuse(recorded, port=port, fast=fast, bin=bin)
    else:
        server_bin = bin or find_server_bin()
        if server_bin is None:
            raise ClusterError(
                "initdb", "no PostgreSQL server found (no pg_ctl from pg_config --bindir "
                "or in /usr/lib/postgresql/*/bin): install postgresql"
            )  # fmt: skip
        cluster = Cluster(folder, port or free_port(), server_bin, fast)
    _check_socket_path(cluster)
    if not (cluster.data / "PG_VERSION").is_file():
        _initdb(cluster)
    write_record(cluster)
    cluster.start()
    _create_database(cluster)
    return cluster


def open_cluster(folder: Path) -> Cluster | None:
    """The cluster :func:`init_cluster` made in ``folder``, or None when there is none
    (no initialized data, or no record of its port)."""
    folder = folder.absolute()
    if not (folder / "data" / "PG_VERSION").is_file():
        return None
    try:
        fields = json.loads((folder / "cluster.json").read_text())
        port, bin_, fast = int(fields["port"]), Path(fields["bin"]), bool(fields["fast"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not (bin_ / "pg_ctl").is_file():  # the server was upgraded or moved
        bin_ = find_server_bin() or bin_
    return Cluster(folder, port, bin_, fast)


def write_record(cluster: Cluster) -> None:
    """Write ``cluster.json``: what :func:`open_cluster` reads back."""
    record = {"port": cluster.port, "bin": str(cluster.bin), "fast": cluster.fast}
    temporary = cluster.folder / "cluster.json.tmp"
    temporary.write_text(json.dumps(record) + "\n")
    # A torn record would lose the port: replace it whole.
    os.replace(temporary, cluster.folder / "cluster.json")


def free_port() -> int:
    """A port no one listens on at 127.0.0.1 now (it only names the socket file)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def format_conninfo(**fields: str) -> str:
    """A libpq ``key=value`` string, each value quoted when it needs to be."""
    return " ".join(f"{key}={_conninfo_value(value)}" for key, value in fields.items())


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last non-blank ``lines`` of ``text``, on one line."""
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) or "(it said nothing)"


def _conninfo_value(value: str) -> str:
    if value and not re.search(r"[\s'\\]", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _reuse(recorded: Cluster, *, port: int | None, fast: bool, bin: Path | None) -> Cluster:
    """The recorded cluster, with the port, speed and server asked for now."""
    if recorded.running():
        if port not in (None, recorded.port):
            raise ClusterError(
                "start", f"the cluster in {recorded.folder} runs already on port {recorded.port}"
            )
        return recorded
    return Cluster(recorded.folder, port or recorded.port, bin or recorded.bin, fast)


def _initdb(cluster: Cluster) -> None:
    initdb = cluster.bin / "initdb"
    if not initdb.is_file():
        raise ClusterError("initdb", f"no initdb in {cluster.bin}")
    try:
        cluster.folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise ClusterError("initdb", f"{cluster.folder} is a file, not a folder") from exc
    except OSError as exc:
        raise ClusterError("initdb", f"cannot make {cluster.folder}: {exc.strerror}") from exc
    if not cluster.folder.is_dir():
        raise ClusterError("initdb", f"{cluster.folder} is not a folder")
    if os.geteuid() == 0:
        # The server's user writes data/, socket/ and server.log in the folder.
        server = _server_user()
        os.chown(cluster.folder, server.pw_uid, server.pw_gid)
    done = _run_server_tool(
        initdb,
        "-D", str(cluster.data),
        "-A", "trust",
        "-U", ROLE,
        "-E", "UTF8",
        "--locale=C.UTF-8",
        *(["--no-sync"] if cluster.fast else []),
        cwd=cluster.folder,
    )  # fmt: skip
    if done.returncode != 0:
        said = tail(done.stderr or done.stdout)
        if os.geteuid() == 0 and "Permission denied" in said:
            said += (
                f" (the server runs as {SERVER_USER}: it must be able to enter every folder above)"
            )
        raise ClusterError("initdb", f"initdb -D {cluster.data}: {said}")


def _make_socket_dir(path: Path) -> None:
    """The socket's folder, 0700 and the server's: with trust auth, whoever can reach
    the socket is the superuser, so only the server's user (and root) may."""
    path.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        server = _server_user()
        os.chown(path, server.pw_uid, server.pw_gid)
    path.chmod(0o700)


def _check_socket_path(cluster: Cluster) -> None:
    path = str(cluster.socket_dir / f".s.PGSQL.{cluster.port}")
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise ClusterError(
            "start",
            f"the socket path {path} is longer than {MAX_SOCKET_PATH} bytes: use a shorter folder",
        )


def _create_database(cluster: Cluster) -> None:
    """Create the ``sessiontree`` database unless it is there."""
    import psycopg  # here: the CLI starts without it

    maintenance = format_conninfo(
        host=str(cluster.socket_dir), port=str(cluster.port), dbname="postgres", user=ROLE
    )
    try:
        with psycopg.connect(maintenance, autocommit=True, connect_timeout=10) as conn:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE])
            if found.fetchone() is None:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')
    except psycopg.Error as exc:
        raise ClusterError("create database", tail(str(exc))) from exc


def _server_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError as exc:
        raise ClusterError(
            "initdb",
            f"run as root, the server needs the {SERVER_USER!r} OS user, and there is none",
        ) from exc


def _run_server_tool(tool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run initdb or pg_ctl: as the ``postgres`` OS user when we are root (both refuse
    root), else as ourselves. ``cwd`` is the cluster's folder, one the server's user can
    enter (root's own working folder may not be)."""
    command = [str(tool), *args]
    if os.geteuid() == 0:
        command = ["runuser", "-u", _server_user().pw_name, "--", *command]
    try:
        return subprocess.run(command, check=False, capture_output=True, text=True, cwd=cwd)
    except OSError as exc:
        raise ClusterError(tool.name, f"cannot run {command[0]}: {exc.strerror}") from exc


def _read_from(path: Path, offset: int) -> str:
    """What was written to ``path`` from ``offset`` on (the log of one start)."""
    try:
        with path.open("rb") as file:
            file.seek(offset)
            return file.read().decode("utf-8", "replace")
    except OSError:
        return ""
