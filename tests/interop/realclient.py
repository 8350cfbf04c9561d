"""Run the real Claude Code client offline, to hold sessiontree against it.

The client (``@anthropic-ai/claude-code``, a native binary in an npm package) is installed
from the npm registry into a cache folder; it talks to ``ANTHROPIC_BASE_URL``, here a
tiny local stand-in for the Messages API that answers "ok" and keeps every request body.
``resume()`` runs ``claude -p -r <id> PROBE`` on a copy of a config root and returns the
``messages`` the client sent with the probe: what resuming that session sends.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

VERSION = os.environ.get("SESSIONTREE_CLIENT_VERSION", "2.1.328")
CACHE = Path(os.environ.get("CLAUDE_CLIENT_DIR", Path.home() / ".cache" / "sessiontree-realclient"))
#: Where :func:`install_client` puts the client's native binary (the bench looks there too).
BINARY = CACHE / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"


class ClientUnavailable(RuntimeError):
    """The real client could not be installed here (no npm, no registry)."""


def install_client() -> Path:
    """The client binary, installed from the npm registry into the cache if needed."""
    binary = BINARY
    if binary.is_file() and _version_ok(binary):
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise ClientUnavailable("npm is not installed")
    CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            npm,
            "install",
            "--silent",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(CACHE),
            f"@anthropic-ai/claude-code@{VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 or not binary.is_file() or not _version_ok(binary):
        raise ClientUnavailable(f"npm install failed: {done.stderr.strip()[-300:]}")
    return binary


def _version_ok(binary: Path) -> bool:
    try:
        out = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return False
    return out.stdout.startswith(VERSION)


class _MockAPI(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    bodies: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: object) -> None:
        return

    def _json(self, obj: object) -> None:
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._json({})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if "count_tokens" in self.path:
            self._json({"input_tokens": 10})
            return
        type(self).bodies.append(body)
        message = {
            "id": "msg_" + uuid.uuid4().hex[:20],
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        if not body.get("stream"):
            self._json(message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(name: str, data: object) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        event("message_start", {"type": "message_start", "message": {**message, "content": []}})
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ok"},
            },
        )
        event("content_block_stop", {"type": "content_block_stop", "index": 0})
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 1},
            },
        )
        event("message_stop", {"type": "message_stop"})
        self.wfile.flush()
        self.close_connection = True


@contextmanager
def mock_api() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """A Messages API stand-in on a free loopback port: ``(port, request bodies)``."""
    bodies: ClassVar[list[dict[str, Any]]] = []
    handler = type("Mock", (_MockAPI,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], bodies
    finally:
        server.shutdown()
        server.server_close()


def client_env(home: Path, port: int) -> dict[str, str]:
    """The client's environment: offline, a scratch HOME, the stand-in at ``port`` as the
    API (the bench runs the client with it too)."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TERM", "TMPDIR")}
    return {
        **keep,
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-ant-mock",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "IS_SANDBOX": "1",
    }


def resume(binary: Path, root: Path, session_id: str, cwd: Path) -> list[dict[str, Any]]:
    """The ``messages`` the real client sends when it resumes ``session_id``.

    ``root`` is copied to a scratch ``~/.claude`` first (the client appends its probe), and
    the probe message and everything after it are left out of what is returned.
    """
    run = run_probe(binary, root, ["-r", session_id], cwd)
    if run.messages is None:
        raise AssertionError(
            f"the client sent no request with the probe (exit {run.returncode}): "
            f"{run.stderr.strip()[-500:]}"
        )
    return run.messages


@dataclass(frozen=True)
class ClientRun:
    """One headless run of the client: its exit, stderr, and the ``messages`` it sent with
    the probe (None when it sent none), the probe left out."""

    returncode: int
    stderr: str
    messages: list[dict[str, Any]] | None


def run_probe(binary: Path, root: Path, args: list[str], cwd: Path) -> ClientRun:
    """``claude -p ARGS PROBE`` on a scratch copy of ``root``; unlike :func:`resume`, a
    refusal is an answer (``returncode``, ``stderr``), not a failure."""
    probe = "PROBE-" + uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="realclient-home-") as scratch:
        home = Path(scratch)
        shutil.copytree(root, home / ".claude", symlinks=True)
        cwd.mkdir(parents=True, exist_ok=True)
        with mock_api() as (port, bodies):
            done = subprocess.run(
                [str(binary), "-p", *args, probe],
                cwd=cwd,
                env=client_env(home, port),
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
        hits = [b for b in bodies if probe in json.dumps(b.get("messages", []))]
    if not hits:
        return ClientRun(done.returncode, done.stderr, None)
    messages: list[dict[str, Any]] = hits[0]["messages"]
    cut = next(i for i, m in enumerate(messages) if probe in json.dumps(m))
    return ClientRun(
        done.returncode, done.stderr, [*messages[:cut], *_before_probe(messages[cut], probe)]
    )


def _before_probe(message: dict[str, Any], probe: str) -> list[dict[str, Any]]:
    """The part of the probe's user message that came from the transcript, if any."""
    content = message.get("content")
    if isinstance(content, str) or not isinstance(content, list):
        return []
    kept = []
    for block in content:
        if probe in json.dumps(block):
            break
        kept.append(block)
    return [{**message, "content": kept}] if kept else []


def normalize(messages: list[dict[str, Any]]) -> list[tuple[str, list[tuple[str, str]]]]:
    """What must agree between two contexts: roles, visible texts, tool ids, in order.

    System messages and ``<system-reminder>`` texts are left out (the client renders some
    of them afresh at every start); consecutive messages of one role are joined.
    """
    out: list[tuple[str, list[tuple[str, str]]]] = []
    for message in messages:
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        items: list[tuple[str, str]] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                text = (block.get("text") or "").strip()
                if text and not text.startswith("<system-reminder>"):
                    items.append(("text", text))
            elif kind == "tool_use":
                items.append(("tool_use", block.get("id")))
            elif kind == "tool_result":
                items.append(("tool_result", block.get("tool_use_id")))
        if not items:
            continue
        if out and out[-1][0] == role:
            out[-1] = (role, out[-1][1] + items)
        else:
            out.append((str(role), items))
    return out


def relocate(root: Path, old_cwd: str, new_cwd: Path) -> None:
    """Move a config root's sessions of ``old_cwd`` to ``new_cwd`` (the client resumes a
    session only from its own project folder): rewrite the paths, rename the folder."""
    from sessiontree.storage.layout import encode_cwd

    old_dir = root / "projects" / encode_cwd(old_cwd)
    new_dir = root / "projects" / encode_cwd(str(new_cwd))
    for transcript in old_dir.rglob("*.jsonl"):
        transcript.write_text(transcript.read_text().replace(old_cwd, str(new_cwd)))
    old_dir.rename(new_dir)
    new_cwd.mkdir(parents=True, exist_ok=True)


def scenario_copy(fixtures: Path, scenario: str, tmp_path: Path) -> tuple[Path, Path]:
    """A private copy of a fixture scenario's config root, its sessions moved to a fresh
    project folder under ``tmp_path``: ``(root, cwd)``, ready for :func:`resume`."""
    root = tmp_path / "root"
    shutil.copytree(fixtures / scenario / "claude-home", root)
    cwd = tmp_path / "work"
    project = json.loads((fixtures / scenario / "scenario.json").read_text())["project"]
    relocate(root, project, cwd)
    return root, cwd
