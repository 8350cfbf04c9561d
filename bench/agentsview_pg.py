"""agentsview's ``pg push`` of a Claude config root into PostgreSQL, for the store bench.

agentsview (PyPI ``agentsview``, a Go binary in a wheel) is installed with pip, its
version pinned, into a venv of its own under ``bench/data/`` and reused from there. It is
run as its command line runs it, the Go binary itself (not the Python launcher), with
``HOME`` and its data folder in a temp folder, no daemon, telemetry and update checks off,
and ``CLAUDE_PROJECTS_DIR`` the root's ``projects/``:

1. ``agentsview sync``: its local sync, which parses the transcripts into its SQLite
   database (``pg push`` reads from there, never from the files);
2. ``agentsview pg push``: that database into PostgreSQL, a database of its own
   (:data:`DATABASE`) on the given server, schema :data:`SCHEMA`. The push runs its own
   incremental local sync first (nothing new here: step 1 did it), and makes its schema.

Each step is timed from spawn to exit. Whatever fails (no network for pip, a step's
non-zero exit) comes back as :class:`Unavailable`, one line: never a number.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

VERSION = "0.46.1"
#: The database on the server that agentsview pushes into, and its schema there.
DATABASE = "agentsview"
SCHEMA = "agentsview"
#: A step that takes longer than this is reported as failed (seconds).
STEP_TIMEOUT = 3600
#: Written last into the venv: a venv without it is a broken install, made again.
MARKER = "installed.txt"
#: Cursor movement and line clearing in agentsview's progress output.
_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class PushRun:
    """One local sync and ``pg push``: their wall times, what the push said it pushed
    (``Pushed N sessions, M messages in T``), its tables' size on the server and its
    local SQLite's on disk."""

    sync_s: float
    push_s: float
    pushed: str
    store_bytes: int
    sqlite_bytes: int


@dataclass(frozen=True)
class Unavailable:
    """Why agentsview could not be measured, in one line."""

    reason: str


class StepFailed(Exception):
    """A step failed (an install, a command); its one line says why."""


def venv_dir(data_dir: Path) -> Path:
    return data_dir / f"agentsview-{VERSION}"


def ensure_agentsview(data_dir: Path) -> Path:
    """The agentsview binary of :data:`VERSION`, installed with pip from PyPI into
    ``<data_dir>/agentsview-<VERSION>/`` unless a complete install is there."""
    venv = venv_dir(data_dir)
    if (venv / MARKER).is_file() and (binary := find_binary(venv)) is not None:
        return binary
    install_venv(venv, f"agentsview=={VERSION}")
    binary = find_binary(venv)
    if binary is None:
        raise StepFailed(f"pip installed agentsview=={VERSION}: no agentsview binary in {venv}")
    (venv / MARKER).write_text(f"agentsview=={VERSION}\n")
    return binary


def install_venv(venv: Path, requirement: str) -> None:
    """A venv at ``venv`` made afresh, ``requirement`` (pinned) installed in it with pip."""
    shutil.rmtree(venv, ignore_errors=True)
    run_step([sys.executable, "-m", "venv", str(venv)], "python -m venv")
    run_step(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", requirement],
        f"pip install {requirement}",
    )  # fmt: skip


def format_pg_url(dsn: str, dbname: str) -> str:
    """``dsn`` (a libpq string or URL) as the ``postgres://`` URL agentsview takes, for
    database ``dbname``: a socket folder goes in the ``host`` parameter."""
    from psycopg.conninfo import conninfo_to_dict

    fields = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    user = quote(fields.pop("user", ""), safe="")
    password = fields.pop("password", "")
    auth = f"{user}:{quote(password, safe='')}@" if password else f"{user}@" if user else ""
    host = fields.pop("host", "")
    port = fields.pop("port", "")
    fields.pop("dbname", None)
    if host.startswith("/"):  # a socket folder: no host in the authority
        netloc, query = auth, {"host": host, **({"port": port} if port else {})}
    else:
        netloc, query = auth + host + (f":{port}" if port else ""), {}
    query.update(fields)
    tail = f"?{urlencode(query, safe='/')}" if query else ""
    return f"postgres://{netloc}/{quote(dbname, safe='')}{tail}"


def parse_pushed(output: str) -> str:
    """The push's own summary (``Pushed 9 sessions, 736 messages in 1.952s``) from its
    output, progress redraws and escapes removed; "" when it printed none."""
    lines = re.split(r"[\r\n]", _ESCAPES.sub("", output))
    found = [line.strip() for line in lines if line.strip().startswith("Pushed ")]
    return found[-1] if found else ""


def push_archive(root: Path, dsn: str, data_dir: Path) -> PushRun | Unavailable:
    """agentsview's local sync of the Claude config root ``root`` and its ``pg push``
    into database :data:`DATABASE` (made afresh) on the server of ``dsn``."""
    try:
        binary = ensure_agentsview(data_dir)
        _fresh_database(dsn, DATABASE)
        with tempfile.TemporaryDirectory(prefix="agentsview-bench-") as scratch:
            home = Path(scratch)
            env = _environment(home, root, format_pg_url(dsn, DATABASE))
            sync_s, _ = _timed([str(binary), "sync"], env, home, "agentsview sync")
            push_s, out = _timed([str(binary), "pg", "push"], env, home, "agentsview pg push")
            sqlite = sum(p.stat().st_size for p in (home / "data").glob("sessions.db*"))
        store = _schema_bytes(dsn, DATABASE, SCHEMA)
    except StepFailed as exc:
        return Unavailable(str(exc))
    return PushRun(sync_s, push_s, parse_pushed(out), store, sqlite)


def _environment(home: Path, root: Path, url: str) -> dict[str, str]:
    return {
        **local_environment(home, root),
        "AGENTSVIEW_PG_URL": url,
        "AGENTSVIEW_PG_SCHEMA": SCHEMA,
        "AGENTSVIEW_PG_MACHINE": "bench",
    }


def local_environment(home: Path, root: Path) -> dict[str, str]:
    """Only what agentsview needs to read the Claude config root ``root``: no variable of
    ours (a CLAUDE_CONFIG_DIR, a proxy's) reaches it, and every folder it writes is under
    ``home``."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "TMPDIR": str(home),
        "AGENTSVIEW_DATA_DIR": str(home / "data"),
        "CLAUDE_PROJECTS_DIR": str(root / "projects"),
        "AGENTSVIEW_NO_DAEMON": "1",  # a one-shot run: no background server left behind
        "AGENTSVIEW_NO_BROWSER": "1",
        "AGENTSVIEW_TELEMETRY_ENABLED": "0",
        "DO_NOT_TRACK": "1",
        "AGENTSVIEW_DISABLE_UPDATE_CHECK": "1",
        "NO_COLOR": "1",
    }


def _timed(command: list[str], env: dict[str, str], cwd: Path, what: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = run_step(command, what, env=env, cwd=cwd)
    return time.perf_counter() - started, done.stdout + done.stderr


def run_step(
    command: list[str], what: str, *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` (``what`` names it in the error) to its end; StepFailed when it
    cannot start, times out or exits non-zero."""
    try:
        done = subprocess.run(
            command, env=env, cwd=cwd, capture_output=True, text=True, check=False,
            timeout=STEP_TIMEOUT,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise StepFailed(f"{what} took more than {STEP_TIMEOUT} s") from exc
    except OSError as exc:
        raise StepFailed(f"{what}: cannot run {command[0]}: {exc.strerror}") from exc
    if done.returncode != 0:
        said = [ln.strip() for ln in _ESCAPES.sub("", done.stderr or done.stdout).splitlines()]
        last = " | ".join([ln for ln in said if ln][-2:]) or "(it said nothing)"
        raise StepFailed(f"{what} exited {done.returncode}: {last}")
    return done


def find_binary(venv: Path) -> Path | None:
    found = sorted(venv.glob("lib/python*/site-packages/agentsview/bin/agentsview"))
    return found[0] if found and os.access(found[0], os.X_OK) else None


def _fresh_database(dsn: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))  # fmt: skip
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        raise StepFailed(f"cannot make database {name}: {' '.join(str(exc).split())}") from exc


def _schema_bytes(dsn: str, dbname: str, schema: str) -> int:
    """Its tables' size in ``schema`` of ``dbname`` (indexes and TOAST included)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    try:
        with psycopg.connect(make_conninfo(dsn, dbname=dbname)) as conn:
            row = conn.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind = 'r'",
                [schema],
            ).fetchone()
    except psycopg.Error as exc:
        raise StepFailed(f"cannot size schema {schema}: {' '.join(str(exc).split())}") from exc
    return int(row[0]) if row and row[0] else 0
