"""A host killed mid-session, and the session picked up again.

A writer process runs turns through the public :class:`Session` API (prompt, a response
with a tool call, the tool result, a final response, the durable turn end) and says
``ack N`` after each ``end_turn``. It is killed with SIGKILL at a random moment. Then:

* the file reads back with at most one problem, a torn last line;
* every acknowledged turn is in the context, in order, and nothing else comes before
  or between them (what follows is at most the turn that was cut short);
* ``Session.open`` continues the session: the next turn lands at the end of the active
  path, the torn line stays a reported problem in the middle, and the context is the
  surviving conversation plus the new turn.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.session.session import Session

SRC = str(Path(__file__).resolve().parents[2] / "src")
MARK = re.compile(r"«([uart]\d+)»")
RUNS = 6

WRITER = """
import sys
from pathlib import Path
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout

root, cwd = sys.argv[1], sys.argv[2]
session = Session.create(Layout(Path(root)), cwd, session_id="c0ffee00-0000-4000-8000-000000000001")
print("ready", flush=True)
pad = "x" * 20_000
for n in range(10_000):
    session.append_prompt(f"turn «u{n}» " + pad[: n % 7 * 3000])
    session.append_response(
        [
            {"type": "text", "text": f"reading «a{n}»"},
            {"type": "tool_use", "id": f"toolu_{n:05d}", "name": "Read", "input": {"p": "x"}},
        ]
    )
    session.append_tool_result(f"toolu_{n:05d}", f"result «r{n}» " + pad[: n % 5 * 4000])
    session.append_response([{"type": "text", "text": f"done «t{n}»"}])
    session.end_turn(duration_ms=1)
    print(f"ack {n}", flush=True)
"""


def _run_and_kill(root: Path, delay: float) -> list[int]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), "/work/crash"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == "ready\n", proc.stderr.read()
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        out = proc.stdout.read()
    return [int(line.split()[1]) for line in out.splitlines() if line.startswith("ack ")]


def _turn(n: int) -> list[str]:
    return [f"u{n}", f"a{n}", f"r{n}", f"t{n}"]


@pytest.mark.parametrize("run", range(RUNS))
def test_a_killed_host_leaves_a_session_that_continues(tmp_path: Path, run: int) -> None:
    root = tmp_path / "root"
    acked = _run_and_kill(root, random.Random(run).uniform(0.05, 0.6))
    (path,) = (root / "projects").glob("*/*.jsonl")
    transcript = Transcript.open(path)
    assert len(transcript.problems) <= 1
    assert all(p.kind in ("torn-line", "bad-json") for p in transcript.problems)
    marks = MARK.findall(str(transcript.context()))
    expected = [m for n in acked for m in _turn(n)]
    assert marks[: len(expected)] == expected  # every acknowledged turn, in order
    cut_short = marks[len(expected) :]
    assert cut_short == _turn(len(acked))[: len(cut_short)]  # then at most the cut turn

    session = Session.open(path)
    session.append_prompt("after the crash «u99999»")
    session.append_response([{"type": "text", "text": "still here «t99999»"}])
    session.end_turn()
    again = Transcript.open(path)
    assert len(again.problems) <= 1  # the torn line, now in the middle, still reported
    assert MARK.findall(str(again.context())) == [*marks, "u99999", "t99999"]
    assert again.active_path[-1] == session.tip
