"""Random sequences of write operations, judged by the real client.

The state machine in ``tests/session/test_session_machine.py`` checks that sessiontree reads back
what it wrote; here the real client is the judge. Seeded random sequences of prompts,
tool rounds (one call or several in parallel, answered in any order), turn ends,
rewinds, forks, compactions, partial compactions and clears are written through the
public API, and then the client resumes the session that is current at the end: the
messages it sends must be the ones sessiontree computes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from sessiontree.conversation.fork import apply_fork, plan_fork
from sessiontree.conversation.rewind import apply_rewind, plan_rewind
from sessiontree.conversation.transcript import Transcript
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout
from tests.interop.realclient import normalize, resume

pytestmark = pytest.mark.interop

SEEDS = range(12)
STEPS = 24


class Player:
    """Plays random operations on one store, keeping the current session."""

    def __init__(self, root: Path, cwd: Path, rng: random.Random) -> None:
        self.rng = rng
        self.session = Session.create(Layout(root), str(cwd))
        self.n = 0
        self.open_prompt = False
        self.in_turn = False
        self.log: list[str] = []

    def step(self) -> None:
        self.n += 1
        n = self.n
        choices = ["prompt"]
        if self.open_prompt:
            choices += ["respond", "tool"] * 2
        elif self.in_turn:
            choices += ["end"] * 3
        else:
            choices += ["prompt"] * 2
            if self.session.tip is not None:
                choices += ["rewind", "fork", "compact", "summarize", "clear"]
        op = self.rng.choice(choices)
        self.log.append(op)
        if op == "prompt":
            self.session.append_prompt(f"prompt {n}")
            self.open_prompt = self.in_turn = True
        elif op == "respond":
            self.session.append_response([{"type": "text", "text": f"answer {n}"}])
            self.open_prompt = False
        elif op == "tool":
            # one call, or several in parallel as real models make them, answered in
            # the order they finish
            tool_ids = [f"toolu_r{n:04d}_{i}" for i in range(self.rng.choice([1, 1, 2, 3]))]
            self.session.append_response(
                [
                    {"type": "text", "text": f"reading {n}"},
                    *(
                        {"type": "tool_use", "id": t, "name": "Read", "input": {"p": t}}
                        for t in tool_ids
                    ),
                ]
            )
            self.rng.shuffle(tool_ids)
            for tool_id in tool_ids:
                self.session.append_tool_result(tool_id, f"contents {tool_id}")
        elif op == "end":
            self.session.end_turn(duration_ms=1)
            self.in_turn = False
        elif op in ("rewind", "summarize"):
            transcript = Transcript.open(self.session.path)
            on_path = [r for r in transcript.active_records() if r.is_prompt]
            if not on_path:
                return
            k = self.rng.randint(1, len(on_path))
            prompt = transcript.resolve_prompt(f"-{k}")
            if op == "rewind":
                apply_rewind(self.session.path, plan_rewind(transcript, prompt))
                self.session = Session.open(self.session.path)
            else:
                up_to = self.rng.random() < 0.5 and k < len(on_path)
                self.session.summarize(
                    prompt, f"summary {n}", direction="up_to" if up_to else "from"
                )
        elif op == "fork":
            plan = plan_fork(
                Transcript.open(self.session.path), new_session_id=self.session.new_id()
            )
            apply_fork(plan)
            self.session = Session.open(plan.path)
        elif op == "compact":
            self.session.compact(f"summary {n}")
        elif op == "clear":
            self.session = self.session.clear()


@pytest.mark.parametrize("seed", SEEDS)
def test_client_resumes_random_operation_sequences(claude: Path, tmp_path: Path, seed: int) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "root"
    player = Player(root, cwd, random.Random(seed))
    for _ in range(STEPS):
        player.step()
    if not player.session.path.exists() or player.session.tip is None:
        player.session.append_prompt("final prompt")
        player.log.append("prompt")
    ours = normalize(Transcript.open(player.session.path).context())
    theirs = normalize(resume(claude, root, player.session.session_id, cwd))
    assert theirs == ours, f"operations: {player.log}\n{json.dumps(theirs)[:2000]}"
