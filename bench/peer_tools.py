"""The peers ``python -m bench peers`` measures sessiontree against, pinned, installed
into ``bench/data/`` with their registries' own clients and reused from there:

- agentsview (PyPI, a Go binary in a wheel): :mod:`bench.agentsview_pg` installs it;
- claude-code-log (PyPI, Python): a venv of its own, ``pip install``;
- ccusage (the npm registry; its command is a native binary in a per-platform optional
  package): ``npm install --prefix``.

An install that fails, or a command that will not run once installed, is an
:class:`~bench.agentsview_pg.Unavailable` with the one line why: the peer's rows are then
skipped, never guessed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import agentsview_pg
from bench.agentsview_pg import StepFailed, Unavailable, install_venv, run_step

AGENTSVIEW_VERSION = agentsview_pg.VERSION
CLAUDE_CODE_LOG_VERSION = "1.7.0"
#: 20.0.26 (the newest) has no linux-x64 native package on the registry: its command
#: only says so. 20.0.24 is the newest that runs here.
CCUSAGE_VERSION = "20.0.24"
MARKER = agentsview_pg.MARKER


@dataclass(frozen=True)
class Peer:
    """An installed peer: its name, pinned version and the command that runs it."""

    name: str
    version: str
    command: Path


def peers_dir(data_dir: Path) -> Path:
    return data_dir / "peers"


def find_agentsview(data_dir: Path, *, install: bool) -> Peer | Unavailable:
    venv = agentsview_pg.venv_dir(data_dir)
    binary = agentsview_pg.find_binary(venv)
    return _ensure(
        "agentsview",
        AGENTSVIEW_VERSION,
        lambda: agentsview_pg.ensure_agentsview(data_dir),
        found=binary if (venv / MARKER).is_file() else None,
        install=install,
    )


def find_claude_code_log(data_dir: Path, *, install: bool) -> Peer | Unavailable:
    venv = peers_dir(data_dir) / f"claude-code-log-{CLAUDE_CODE_LOG_VERSION}"
    binary = venv / "bin" / "claude-code-log"
    requirement = f"claude-code-log=={CLAUDE_CODE_LOG_VERSION}"

    def setup() -> Path:
        install_venv(venv, requirement)
        run_step([str(binary), "--version"], f"{requirement}: claude-code-log --version")
        (venv / MARKER).write_text(requirement + "\n")
        return binary

    return _ensure(
        "claude-code-log",
        CLAUDE_CODE_LOG_VERSION,
        setup,
        found=binary if (venv / MARKER).is_file() and binary.is_file() else None,
        install=install,
    )


def find_ccusage(data_dir: Path, *, install: bool) -> Peer | Unavailable:
    prefix = peers_dir(data_dir) / f"ccusage-{CCUSAGE_VERSION}"
    binary = prefix / "node_modules" / ".bin" / "ccusage"
    package = f"ccusage@{CCUSAGE_VERSION}"

    def setup() -> Path:
        shutil.rmtree(prefix, ignore_errors=True)
        prefix.mkdir(parents=True)
        npm = shutil.which("npm")
        if npm is None:
            raise StepFailed(f"npm install {package}: no npm on PATH")
        run_step(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", package],
            f"npm install {package}",
        )
        # Its launcher only says so when its native package did not come with it.
        run_step([str(binary), "--version"], f"{package}: ccusage --version")
        (prefix / MARKER).write_text(package + "\n")
        return binary

    return _ensure(
        "ccusage",
        CCUSAGE_VERSION,
        setup,
        found=binary if (prefix / MARKER).is_file() and binary.is_file() else None,
        install=install,
    )


def find_peers(data_dir: Path, *, install: bool) -> dict[str, Peer | Unavailable]:
    """Every peer by name: installed (with ``install``, installing what is missing), or
    why not."""
    return {
        "agentsview": find_agentsview(data_dir, install=install),
        "claude-code-log": find_claude_code_log(data_dir, install=install),
        "ccusage": find_ccusage(data_dir, install=install),
    }


def base_environment(home: Path) -> dict[str, str]:
    """What every tool's process gets: a scratch ``HOME`` and temp folder, UTC (days
    are cut alike), no colour; nothing else of this process's environment."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "NO_COLOR": "1",
    }


def _ensure(
    name: str,
    version: str,
    setup: Callable[[], Path],
    *,
    found: Path | None,
    install: bool,
) -> Peer | Unavailable:
    """The peer at ``found`` (a complete install), else installed by ``setup``."""
    if found is not None:
        return Peer(name, version, found)
    if not install:
        return Unavailable(f"{name} {version} is not installed in the data folder (--no-install)")
    try:
        return Peer(name, version, setup())
    except StepFailed as exc:
        return Unavailable(str(exc))
