# mypy: disable-error-code="import-untyped"
# (sessiontree has no py.typed marker yet; drop this line once it has.)
"""Resume workloads: whole commands in their own process, sessiontree's CLI next to the
real Claude Code client resuming the same file.

Each ``prepare_*`` builds what it needs (untimed) and returns the timed run, as
:mod:`bench.measure` expects. The run starts the command and waits for it: the time is
its wall time from spawn to exit, the peak RSS its own: ``ru_maxrss`` of the child, taken
by GNU ``/usr/bin/time -f %M`` when there is one (a child's ``ru_maxrss`` is never below
the RSS its parent had when it spawned it: ~2 MB for ``time``), else by ``os.wait4`` here
(then ~28 MB, this interpreter's, is the floor of the column). Its stdout is read in
chunks and counted (a pipe, as when the output is piped on), its stderr goes to a file,
shown when it fails.

sessiontree runs as this checkout's ``sessiontree`` console script, with
``SESSIONTREE_CACHE_DIR`` and ``XDG_CACHE_HOME`` in a scratch folder (empty for a cold
run) and ``CLAUDE_CONFIG_DIR`` an empty scratch root, so nothing of the user's is read.
The real client (``@anthropic-ai/claude-code`` 2.1.328, installed by the interop tests
under ``~/.cache/sessiontree-realclient`` or ``$CLAUDE_CLIENT_DIR``) runs headless,
``claude -p -r SESSION PROBE``, from a project folder whose config root holds a copy of
the transcript, against a stand-in Messages API in this process (it reads each request
body in chunks without decoding it and answers "ok"). A client row is a SKIP when the
client is not installed.
"""

from __future__ import annotations

import atexit
import compileall
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from tests.interop.realclient import BINARY as CLIENT_BINARY
from tests.interop.realclient import VERSION as CLIENT_VERSION
from tests.interop.realclient import client_env

from bench.checkpoints import Unavailable
from sessiontree.storage.layout import encode_cwd

Detail = dict[str, Any]
Run = Callable[[], Detail]
KB = 1024
MB = 1024 * KB

#: The warm run reads a transcript that grew by at least this much since the cold one.
WARM_APPEND = 1 * MB
#: What ``search`` looks for: in no record, so every record is scanned and nothing printed.
SEARCH_QUERY = "zqxj-no-such-text-in-any-record"
COMMAND_TIMEOUT = 600


# -- running a command ------------------------------------------------------------------


GNU_TIME = Path("/usr/bin/time")


def run_command(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    cwd: Path,
    stderr_file: Path,
    keep_stdout: bool = False,
) -> Detail:
    """Run ``argv`` to its end: its peak RSS, exit status and how much it printed (with
    ``keep_stdout``, what it printed too: ``stdout``, bytes).

    Raises RuntimeError when it exits with an error (the tail of its stderr says why)."""
    rss_file = stderr_file.with_suffix(".rss")
    timed = GNU_TIME.is_file()
    command = [str(GNU_TIME), "-f", "%M", "-o", str(rss_file), *argv] if timed else list(argv)
    with stderr_file.open("wb") as err:
        proc = subprocess.Popen(
            command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=err,
        )  # fmt: skip
        assert proc.stdout is not None
        timer = threading.Timer(COMMAND_TIMEOUT, proc.kill)
        timer.start()
        out = 0
        kept: list[bytes] = []
        while chunk := proc.stdout.read1(1 * MB):
            out += len(chunk)
            if keep_stdout:
                kept.append(chunk)
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = stderr_file.read_bytes()[-400:].decode(errors="replace").strip()
        raise RuntimeError(f"{Path(argv[0]).name} exited {code}: {tail.splitlines()[-1:]}")
    rss_kb = int(rss_file.read_text().split()[-1]) if timed else usage.ru_maxrss
    detail: Detail = {"peak_rss_mb": rss_kb / 1024, "stdout_bytes": out, "returncode": code}
    if keep_stdout:
        detail["stdout"] = b"".join(kept)
    return detail


def scratch_folder() -> Path:
    """A scratch folder for this process, removed when it exits."""
    folder = Path(tempfile.mkdtemp(prefix="sessiontree-bench-resume-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@functools.cache
def compile_package() -> None:
    """Compile sessiontree's modules to bytecode once, as ``pip install`` does: an
    editable checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (as this machine's shells
    are) would otherwise compile every module it imports on every run (~30 ms), which
    no installed copy does."""
    import sessiontree

    compileall.compile_dir(Path(sessiontree.__file__).parent, quiet=1)


def sessiontree_argv() -> list[str]:
    """This checkout's ``sessiontree`` command, its bytecode compiled
    (:func:`compile_package`): the console script next to the interpreter (what a user
    runs), else the module through the interpreter."""
    compile_package()
    script = Path(sys.executable).parent / "sessiontree"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from sessiontree.cli.entry import main; main()"]


@dataclass
class Scene:
    """A scratch folder with what a sessiontree run needs: an empty config root, a cache
    folder (empty until a run fills it), a working directory."""

    folder: Path = field(default_factory=scratch_folder)

    def __post_init__(self) -> None:
        for name in ("root", "cache", "xdg", "work"):
            (self.folder / name).mkdir()

    @property
    def cache(self) -> Path:
        return self.folder / "cache"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "SESSIONTREE_CACHE_DIR": str(self.cache),
            "XDG_CACHE_HOME": str(self.folder / "xdg"),
            "CLAUDE_CONFIG_DIR": str(self.folder / "root"),
            "NO_COLOR": "1",
        }

    def sessiontree(self, *args: str) -> Detail:
        return run_command(
            [*sessiontree_argv(), *args],
            env=self.env(),
            cwd=self.folder / "work",
            stderr_file=self.folder / "stderr.txt",
        )

    def cache_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.cache.rglob("*") if p.is_file())


def _noted(detail: Detail, what: str) -> Detail:
    out = detail["stdout_bytes"]
    return {**detail, "note": f"{what}: {out / MB:.2f} MB printed"}


# -- sessiontree ----------------------------------------------------------------------------


def prepare_cli_context(transcript: Path, _cache: Path | None) -> Run:
    """Cold: ``sessiontree context TRANSCRIPT --json`` with an empty cache folder."""
    scene = Scene()

    def run() -> Detail:
        return _noted(scene.sessiontree("context", str(transcript), "--json"), "context")

    return run


def split_tail(path: Path, at_least: int) -> int:
    """The offset of the line start that leaves at least ``at_least`` bytes after it (0 if
    the file is smaller)."""
    size = path.stat().st_size
    if size <= at_least:
        return 0
    with path.open("rb") as handle:
        start = max(0, size - at_least - 64 * KB)
        while True:
            handle.seek(start)
            block = handle.read(size - at_least - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                return start + cut + 1
            if start == 0:
                return 0
            start = max(0, start - 4 * MB)


def prepare_cli_context_warm(transcript: Path, _cache: Path | None) -> Run:
    """Warm: a copy of the transcript without its last WARM_APPEND bytes (whole lines),
    one untimed ``context`` run on it (it caches the transcript's tail since its last
    compaction, or its whole skeleton without one), then the rest of the lines appended
    (the session went on), then the timed ``context`` run."""
    scene = Scene()
    copy = scene.folder / transcript.name
    cut = split_tail(transcript, WARM_APPEND)
    shutil.copyfile(transcript, copy)
    os.truncate(copy, cut)
    started = time.perf_counter()
    scene.sessiontree("context", str(copy), "--json")
    first = time.perf_counter() - started
    cached = scene.cache_bytes()
    with transcript.open("rb") as source, copy.open("ab") as target:
        source.seek(cut)
        shutil.copyfileobj(source, target, 1 * MB)
    appended = copy.stat().st_size - cut

    def run() -> Detail:
        detail = scene.sessiontree("context", str(copy), "--json")
        note = (
            f"context after {appended / MB:.2f} MB appended: {detail['stdout_bytes'] / MB:.2f} "
            f"MB printed; the cold run before the append took {first:.3f} s and left "
            f"{cached / MB:.2f} MB in the cache folder"
        )
        return {**detail, "appended_bytes": appended, "cold_s": first, "cache_bytes": cached,
                "note": note}  # fmt: skip

    return run


def _command(*args: str, what: str | None = None) -> Callable[[Path, Path | None], Run]:
    """A workload running ``sessiontree ARGS`` (``{path}`` is the target) on a cold cache;
    ``what`` names the output in the note under the table (none without it)."""

    def prepare(target: Path, _cache: Path | None) -> Run:
        scene = Scene()
        argv = [a.format(path=target) for a in args]

        def run() -> Detail:
            detail = scene.sessiontree(*argv)
            return detail if what is None else _noted(detail, what)

        return run

    return prepare


def prepare_cli_search(transcript: Path, _cache: Path | None, *, primed: bool = False) -> Run:
    """``sessiontree --root ROOT search QUERY --all --json`` over a root holding only the
    transcript (hard-linked, else copied, into a project folder), with an empty cache
    folder (the run builds the search index) or (``primed``) after one untimed run that
    built it; the query is in no record, so nothing is printed."""
    scene = Scene()
    root = scene.folder / "search-root"
    folder = root / "projects" / encode_cwd("/home/dev/big-project")
    folder.mkdir(parents=True)
    _link_or_copy(transcript, folder / f"{session_id_of(transcript)}.jsonl")
    argv = ("--root", str(root), "search", SEARCH_QUERY, "--all", "--json")
    if primed:
        scene.sessiontree(*argv)

    def run() -> Detail:
        return _noted(scene.sessiontree(*argv), "search (no hit)")

    return run


def prepare_cli_search_indexed(transcript: Path, cache: Path | None) -> Run:
    return prepare_cli_search(transcript, cache, primed=True)


def prepare_cli_sessions(root: Path, _cache: Path | None, *, primed: bool = False) -> Run:
    """``sessiontree --root ROOT sessions --all --json`` with an empty cache folder, or
    (``primed``) after one untimed run that may fill it."""
    scene = Scene()
    argv = ("--root", str(root), "sessions", "--all", "--json")
    if primed:
        scene.sessiontree(*argv)

    def run() -> Detail:
        return _noted(scene.sessiontree(*argv), "sessions")

    return run


def prepare_cli_sessions_cached(root: Path, cache: Path | None) -> Run:
    return prepare_cli_sessions(root, cache, primed=True)


#: What every ``context`` imports that is not sessiontree's: the floor of a command on
#: these libraries (click, msgspec, orjson and what they import: typing above all).
LIBRARIES = "import click, msgspec, orjson, pathlib"


def _python(code: str) -> Callable[[Path, Path | None], Run]:
    """A workload running ``python -c CODE`` with this interpreter."""

    def prepare(_target: Path, _cache: Path | None) -> Run:
        scene = Scene()

        def run() -> Detail:
            return run_command(
                [sys.executable, "-c", code],
                env=scene.env(),
                cwd=scene.folder,
                stderr_file=scene.folder / "stderr.txt",
            )

        return run

    return prepare


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def session_id_of(transcript: Path) -> str:
    """The ``sessionId`` of the transcript's first records."""
    with transcript.open("rb") as handle:
        for line, _ in zip(handle, range(50), strict=False):
            found = json.loads(line).get("sessionId")
            if isinstance(found, str):
                return found
    raise ValueError(f"no sessionId in the first lines of {transcript}")


# -- the real client --------------------------------------------------------------------------


def client_binary() -> Path:
    """The installed real client, or Unavailable (a SKIP) saying how to install it."""
    if not CLIENT_BINARY.is_file():
        raise Unavailable(
            f"the real client {CLIENT_VERSION} is not installed at {CLIENT_BINARY} (install it "
            "with /work/shared/realclient/install_client.sh or by running the interop tests)"
        )
    return CLIENT_BINARY


class _StandIn(BaseHTTPRequestHandler):
    """The Messages API, answering "ok": each body is read in chunks and not decoded, so
    a 200 MB request costs the stand-in next to nothing."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[int, bool]]] = []  # (body bytes, the probe in it) per request
    probe: ClassVar[bytes] = b""

    def log_message(self, *args: object) -> None:
        return

    def _send(self, data: bytes, kind: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self) -> None:
        self._send(b"")

    def do_GET(self) -> None:
        self._send(b"{}")

    def do_POST(self) -> None:
        left = int(self.headers.get("Content-Length", 0))
        stream = probe = False
        carry = b""
        while left > 0:
            chunk = self.rfile.read(min(left, 1 * MB))
            if not chunk:
                break
            left -= len(chunk)
            window = carry + chunk
            stream = stream or b'"stream":true' in window
            probe = probe or self.probe in window
            carry = window[-64:]
        if "count_tokens" in self.path:
            self._send(b'{"input_tokens":10}')
            return
        type(self).seen.append((int(self.headers.get("Content-Length", 0)), probe))
        message = {
            "id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant",
            "model": "claude-bench", "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }  # fmt: skip
        if not stream:
            self._send(json.dumps(message).encode())
            return
        events = [
            ("message_start", {"type": "message_start", "message": {**message, "content": []}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": "ok"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                               "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ]  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


@contextmanager
def stand_in(probe: str) -> Iterator[tuple[int, list[tuple[int, bool]]]]:
    """The stand-in on a free loopback port: ``(port, [(body bytes, probe seen)])``."""
    seen: list[tuple[int, bool]] = []
    handler = type("StandIn", (_StandIn,), {"seen": seen, "probe": probe.encode()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


def _client_run(binary: Path, home: Path, work: Path, args: Sequence[str]) -> Detail:
    """``claude -p ARGS PROBE`` against the stand-in; fails unless the probe was sent."""
    probe = "PROBE-" + uuid.uuid4().hex[:8]
    with stand_in(probe) as (port, seen):
        detail = run_command(
            [str(binary), "-p", *args, probe],
            env=client_env(home, port),
            cwd=work,
            stderr_file=home / "stderr.txt",
        )
    sent = [size for size, has_probe in seen if has_probe]
    if not sent:
        raise RuntimeError(f"the client sent no request with the probe ({len(seen)} requests)")
    note = (
        f"{len(seen)} request(s) to the stand-in API, the probe's "
        f"{sent[0] / MB:.2f} MB (the resumed context with it)"
    )
    return {**detail, "requests": len(seen), "request_bytes": sent[0], "note": note}


def _client_home(folder: Path) -> tuple[Path, Path]:
    home, work = folder / "home", folder / "work"
    (home / ".claude").mkdir(parents=True)
    work.mkdir()
    return home, work


def prepare_client_resume(transcript: Path, _cache: Path | None) -> Run:
    """``claude -p -r SESSION PROBE``: the client resumes a copy of the transcript (it
    appends to it) from the project folder it sits in, and sends the probe."""
    binary = client_binary()
    home, work = _client_home(scratch_folder())
    session = session_id_of(transcript)
    folder = home / ".claude" / "projects" / encode_cwd(str(work))
    folder.mkdir(parents=True)
    shutil.copyfile(transcript, folder / f"{session}.jsonl")

    def run() -> Detail:
        return _client_run(binary, home, work, ["-r", session])

    return run


def prepare_client_start(_target: Path, _cache: Path | None) -> Run:
    """``claude -p PROBE`` in an empty home: the client's bare start, a new session."""
    binary = client_binary()
    home, work = _client_home(scratch_folder())

    def run() -> Detail:
        return _client_run(binary, home, work, [])

    return run


def prepare_client_version(_target: Path, _cache: Path | None) -> Run:
    """``claude --version``."""
    binary = client_binary()
    home, work = _client_home(scratch_folder())

    def run() -> Detail:
        return run_command(
            [str(binary), "--version"],
            env=client_env(home, 9),
            cwd=work,
            stderr_file=home / "stderr.txt",
        )

    return run


WORKLOADS: dict[str, Callable[[Path, Path | None], Run]] = {
    "python-start": _python("pass"),  # the floor of any Python command
    "python-libraries": _python(LIBRARIES),
    "cli-version": _command("--version"),
    "cli-help": _command("--help"),
    "cli-context": prepare_cli_context,
    "cli-context-warm": prepare_cli_context_warm,
    "cli-show": _command("show", "{path}", "--json", what="show"),
    "cli-tree": _command("tree", "{path}", "--json", what="tree"),
    "cli-search": prepare_cli_search,
    "cli-search-indexed": prepare_cli_search_indexed,
    "cli-sessions": prepare_cli_sessions,
    "cli-sessions-cached": prepare_cli_sessions_cached,
    "client-version": prepare_client_version,
    "client-start": prepare_client_start,
    "client-resume": prepare_client_resume,
}
