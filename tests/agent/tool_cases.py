"""Tool calls run through the real client and through sessiontree's Toolbox, the same way.

``python -m tests.agent.tool_cases`` (from the repository) makes the project below in a
scratch folder, runs the real client 2.1.328 (``claude -p --tools ...``) against a small
scripted stand-in of the Messages API that answers each request with the next call of
:data:`CALLS`, and writes what the client recorded for each call (the ``tool_result``
content, ``is_error``, ``toolUseResult``) to
``tests/fixtures/claude-code-2.1.328-tools/calls.json``, the project folder written as
``<P>``. ``tests/agent/test_tools_golden.py`` replays the same calls on the same project
through :class:`~sessiontree.agent.tools.Toolbox` and compares.

Every file gets its own modification time (Glob sorts by it; ties would make the order
the file system's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

GOLDEN = Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.328-tools" / "calls.json"
P = "<P>"
BASE_TIME = 1_790_000_000

#: The project: path → text (``None``: a folder), made in this order, one second apart.
FILES: list[tuple[str, str | None]] = [
    ("sub", None),
    ("a.txt", "one\ntwo\ntwo\nthree\n"),
    ("big.txt", "".join(f"line {n}\n" for n in range(1, 301))),
    ("sub/b.py", "def f():\n    return 2\n"),
    ("empty.txt", ""),
    ("nonl.txt", "no newline at end"),
    ("unread.txt", "never read\n"),
    ("huge.txt", ("z" * 99 + "\n") * 3000),
    ("notes/x.md", "NOTE x\n"),
    ("notes/y.md", "NOTE y\nnote lower\n"),
    *[(f"many/f{n:03d}.log", "") for n in range(1, 106)],
    ("k.txt", "a\nb\nb\n"),
    ("part.txt", "a\nb\n"),
    ("never.txt", "a\nb\n"),
]


def make_project(root: Path) -> None:
    for n, (rel, text) in enumerate(FILES):
        path = root / rel
        if text is None:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        stamp = BASE_TIME + n
        os.utime(path, (stamp, stamp))


def calls(p: str) -> list[tuple[str, dict[str, Any]]]:
    """The calls, in order; ``p`` is the project folder."""
    return [
        ("Read", {"file_path": f"{p}/a.txt"}),
        ("Read", {"file_path": f"{p}/big.txt", "offset": 10, "limit": 3}),
        ("Read", {"file_path": f"{p}/missing.txt"}),
        ("Read", {"file_path": f"{p}/sub"}),
        ("Read", {"file_path": f"{p}/empty.txt"}),
        ("Read", {"file_path": f"{p}/nonl.txt"}),
        ("Read", {"file_path": f"{p}/a.txt", "offset": 50}),
        ("Read", {"file_path": "sub/b.py"}),
        ("Read", {"file_path": f"{p}/huge.txt"}),
        ("Read", {"file_path": f"{p}/huge.txt", "offset": 2999, "limit": 5}),
        ("Glob", {"pattern": "**/*.txt"}),
        ("Glob", {"pattern": "*.py", "path": f"{p}/sub"}),
        ("Glob", {"pattern": "*.nothing"}),
        ("Glob", {"pattern": "many/*.log"}),
        ("Glob", {"pattern": "*.md", "path": f"{p}/nonexist"}),
        ("Grep", {"pattern": "two"}),
        ("Grep", {"pattern": "line 1[0-2]$", "output_mode": "content"}),
        ("Grep", {"pattern": "line", "output_mode": "count"}),
        (
            "Grep",
            {"pattern": "NOTE", "-i": True, "glob": "*.md", "output_mode": "content", "-n": False},
        ),
        ("Grep", {"pattern": "nomatchhere"}),
        ("Grep", {"pattern": "line 150$", "output_mode": "content", "-C": 1}),
        ("Grep", {"pattern": "line 5", "output_mode": "content", "head_limit": 3, "offset": 2}),
        ("Grep", {"pattern": "return", "path": f"{p}/sub/b.py", "output_mode": "content"}),
        ("Grep", {"pattern": "NOTE", "path": "notes"}),
        ("Grep", {"pattern": "[", "output_mode": "content"}),
        ("Write", {"file_path": f"{p}/c.txt", "content": "new file\n"}),
        ("Write", {"file_path": f"{p}/unread.txt", "content": "x\n"}),
        ("Write", {"file_path": "rel.txt", "content": "rel\n"}),
        ("Edit", {"file_path": f"{p}/a.txt", "old_string": "two", "new_string": "TWO"}),
        ("Edit", {"file_path": f"{p}/a.txt", "old_string": "zzz", "new_string": "Z"}),
        ("Edit", {"file_path": f"{p}/nonl.txt", "old_string": "end", "new_string": "END"}),
        ("Edit", {"file_path": f"{p}/a.txt", "old_string": "three", "new_string": "three"}),
        ("Edit", {"file_path": f"{p}/d.txt", "old_string": "", "new_string": "created by edit\n"}),
        ("Edit", {"file_path": f"{p}/missing2.txt", "old_string": "a", "new_string": "b"}),
        (
            "Edit",
            {"file_path": f"{p}/sub/b.py", "old_string": "return 2", "new_string": "return 3"},
        ),
        ("Bash", {"command": "cd sub && pwd", "description": "cd"}),
        ("Bash", {"command": "pwd", "description": "pwd"}),
        ("Bash", {"command": "echo out; echo err >&2; exit 3", "description": "fail"}),
        ("Bash", {"command": "sleep 5", "timeout": 1000, "description": "slow"}),
        ("Bash", {"command": "cd /tmp && pwd", "description": "cd out"}),
        ("Bash", {"command": "pwd", "description": "pwd"}),
        ("Bash", {"command": "true", "description": "nothing"}),
        ("Bash", {"command": "echo only-err >&2", "description": "stderr only"}),
        ("Bash", {"command": "printf '\\n\\n  x  \\n\\n'", "description": "white space"}),
        ("Bash", {"command": "mkdir -p made", "description": "silent"}),
        ("Bash", {"command": "cd /", "description": "cd out silent"}),
        ("Bash", {"command": "exit 2", "description": "bare failure"}),
        # what the model has of a file: the Edit result says it
        ("Read", {"file_path": f"{p}/k.txt"}),
        ("Edit", {"file_path": f"{p}/k.txt", "old_string": "a", "new_string": "A"}),
        (
            "Edit",
            {"file_path": f"{p}/k.txt", "old_string": "b", "new_string": "B", "replace_all": True},
        ),
        ("Read", {"file_path": f"{p}/part.txt", "limit": 1}),
        ("Edit", {"file_path": f"{p}/part.txt", "old_string": "a", "new_string": "A"}),
        ("Edit", {"file_path": f"{p}/never.txt", "old_string": "a", "new_string": "A"}),
        (
            "Edit",
            {
                "file_path": f"{p}/never.txt",
                "old_string": "b",
                "new_string": "B",
                "replace_all": True,
            },
        ),
        ("Read", {"file_path": f"{p}/never.txt"}),
        ("Edit", {"file_path": f"{p}/never.txt", "old_string": "B", "new_string": "C"}),
        ("Write", {"file_path": f"{p}/w.txt", "content": "x\ny\ny\n"}),
        (
            "Edit",
            {"file_path": f"{p}/w.txt", "old_string": "y", "new_string": "Y", "replace_all": True},
        ),
    ]


class _Script(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    steps: ClassVar[list[list[dict[str, Any]]]] = []
    #: Every request body, in order.
    bodies: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._send({})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if "count_tokens" in self.path:
            self._send({"input_tokens": 10})
            return
        self.bodies.append(body)
        content: list[dict[str, Any]] = [{"type": "text", "text": "ok"}]
        if body.get("tools") and self.steps:
            content = self.steps.pop(0)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        message = {
            "id": "msg_" + uuid.uuid4().hex[:20],
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        if not body.get("stream"):
            self._send(message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(name: str, data: dict[str, Any]) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        event("message_start", {"type": "message_start", "message": {**message, "content": []}})
        for n, block in enumerate(content):
            start: dict[str, Any]
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            event(
                "content_block_start",
                {"type": "content_block_start", "index": n, "content_block": start},
            )
            event(
                "content_block_delta", {"type": "content_block_delta", "index": n, "delta": delta}
            )
            event("content_block_stop", {"type": "content_block_stop", "index": n})
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": 1},
            },
        )
        event("message_stop", {"type": "message_stop"})
        self.wfile.flush()
        self.close_connection = True


def _results(transcript: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for line in transcript.read_text().splitlines():
        record = json.loads(line)
        content = record.get("message", {}).get("content")
        if record.get("type") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_result":
                found[block["tool_use_id"]] = {
                    "content": block.get("content"),
                    "is_error": block.get("is_error"),
                    "toolUseResult": record.get("toolUseResult"),
                }
    return found


def generate(claude: str) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="tool-cases-"))
    home, project = scratch / "home", scratch / "proj"
    home.mkdir()
    project.mkdir()
    make_project(project)
    planned = calls(str(project))
    _Script.steps = [
        [
            {"type": "text", "text": f"call {n}"},
            {"type": "tool_use", "id": f"toolu_{n:03d}case", "name": name, "input": tool_input},
        ]
        for n, (name, tool_input) in enumerate(planned)
    ]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Script)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = dict(
        os.environ,
        HOME=str(home),
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}",
        ANTHROPIC_API_KEY="sk-ant-mock",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        IS_SANDBOX="1",
    )
    tools = "Bash,Read,Edit,Write,Glob,Grep"
    subprocess.run(
        [claude, "-p", "go", "--dangerously-skip-permissions", "--tools", tools],
        cwd=project,
        env=env,
        check=True,
        timeout=300,
        capture_output=True,
    )
    server.shutdown()
    server.server_close()
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    results = _results(transcript)
    text = json.dumps(
        [
            {"tool": name, "input": tool_input, **results[f"toolu_{n:03d}case"]}
            for n, (name, tool_input) in enumerate(planned)
        ],
        indent=1,
        ensure_ascii=False,
    )
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(text.replace(str(project), P) + "\n")
    print(f"{len(planned)} calls -> {GOLDEN}")


if __name__ == "__main__":
    generate(sys.argv[1])
