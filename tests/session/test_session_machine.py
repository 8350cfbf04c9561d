"""A state machine over the write API: the operations an agent host runs, in any order.

Prompts, responses (plain and with a tool round), turn ends, rewinds, forks, full and
partial compactions, ``/clear`` and reopening the file are applied to a real session on
disk, and to a model that knows only what the conversation must say. Every text written
carries a marker (``«u3»``, ``«a3»``, ``«r3»``, ``«s3»``); after every step:

* the file has no problems (no torn or bad lines, dangling parents, cycles);
* every ``parentUuid`` names a record of the file (or is null: a root);
* the active path starts at a root and ends at the writer's tip;
* replay from disk equals the model: the markers in the context the file gives, in
  order, are the model's; a reopened writer continues where this one stands.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sessiontree.conversation.fork import apply_fork, plan_fork
from sessiontree.conversation.rewind import apply_rewind, plan_rewind
from sessiontree.conversation.transcript import Transcript
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout

MARK = re.compile(r"«([uars][\dx]+)»")


class SessionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="st-machine-"))
        self.layout = Layout(self.dir / "root")
        self.session = Session.create(self.layout, "/work/machine")
        self.counter = itertools.count(1)
        #: the markers the conversation must show, in order ("u3" is a prompt)
        self.model: list[str] = []
        self.open_prompt = False  # a prompt (or tool result) waits for its response
        self.in_turn = False
        #: what the last "summarize up to here" kept (its preserved segment), while it
        #: is the last boundary; and that segment, when a rewind to its first prompt
        #: means the next record hangs on the summary (see ``rewind``)
        self.segment: list[str] | None = None
        self.revive: list[str] | None = None

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _prompts(self) -> list[str]:
        return [m for m in self.model if m.startswith("u")]

    # -- a turn ------------------------------------------------------------------------

    @rule()
    def prompt(self) -> None:
        n = next(self.counter)
        self.session.append_prompt(f"please do «u{n}»")
        if self.revive is not None:
            self.model[1:] = self.revive
            self.revive = None
        self.model.append(f"u{n}")
        self.open_prompt = self.in_turn = True

    @precondition(lambda self: self.open_prompt)
    @rule(calls=st.integers(0, 4), order=st.randoms(use_true_random=False))
    def respond(self, calls: int, order: random.Random) -> None:
        """A response with no tool call, one, or several in parallel (as real models
        make them), answered in any order."""
        n = next(self.counter)
        if not calls:
            self.session.append_response([{"type": "text", "text": f"done «a{n}»"}])
            self.model.append(f"a{n}")
            self.open_prompt = False
            return
        tool_ids = [f"toolu_{n:04d}_{i}" for i in range(calls)]
        self.session.append_response(
            [
                {"type": "text", "text": f"reading «a{n}»"},
                *(
                    {"type": "tool_use", "id": t, "name": "Read", "input": {"file_path": t}}
                    for t in tool_ids
                ),
            ]
        )
        finished = list(range(calls))
        order.shuffle(finished)
        for i in finished:
            self.session.append_tool_result(tool_ids[i], f"contents «r{n}x{i}»")
        # the results wait for the next response, in the order they finished
        self.model += [f"a{n}", *(f"r{n}x{i}" for i in finished)]

    @precondition(lambda self: self.in_turn and not self.open_prompt)
    @rule()
    def end_turn(self) -> None:
        self.session.end_turn(duration_ms=1)
        self.in_turn = False

    # -- operations on the conversation -----------------------------------------------

    @precondition(lambda self: bool(self._prompts()))
    @rule(data=st.data())
    def rewind(self, data: st.DataObject) -> None:
        prompts = self._prompts()
        k = data.draw(st.integers(1, len(prompts)), label="rewind to the k-th newest prompt")
        transcript = Transcript.open(self.session.path)
        apply_rewind(self.session.path, plan_rewind(transcript, transcript.resolve_prompt(f"-{k}")))
        self.model = self.model[: self.model.index(prompts[-k])]
        if self.segment and self.segment[0] == prompts[-k]:
            # The first prompt a "summarize up to here" kept hangs on the summary, the
            # anchor of the kept segment. The next resume continues from the summary
            # (the explicit mark), but a record then hung on the summary is moved below
            # the kept segment when the client loads the file: the segment comes back.
            # The real client resumes such a file the same way (checked with 2.1.328:
            # tests/interop/test_write_interop.py).
            self.revive = self.segment
        self.session = Session.open(self.session.path)
        self.open_prompt = self.in_turn = False

    @precondition(lambda self: bool(self.model))
    @rule()
    def fork(self) -> None:
        plan = plan_fork(Transcript.open(self.session.path), new_session_id=self.session.new_id())
        apply_fork(plan)
        self.session = Session.open(plan.path)

    @precondition(lambda self: bool(self.model) and not self.in_turn)
    @rule()
    def compact(self) -> None:
        n = next(self.counter)
        self.session.compact(f"summary «s{n}»")
        self.model = [f"s{n}"]
        self.segment = self.revive = None

    @precondition(lambda self: bool(self._prompts()) and not self.in_turn)
    @rule(data=st.data(), up_to=st.booleans())
    def summarize(self, data: st.DataObject, up_to: bool) -> None:
        prompts = self._prompts()
        k = data.draw(st.integers(1, len(prompts)), label="summarize at the k-th newest prompt")
        at = self.model.index(prompts[-k])
        if up_to and at == 0:
            return  # nothing before the first prompt to summarize (refused; tested elsewhere)
        n = next(self.counter)
        prompt_uuid = Transcript.open(self.session.path).resolve_prompt(f"-{k}")
        self.session.summarize(
            prompt_uuid, f"summary «s{n}»", direction="up_to" if up_to else "from"
        )
        before, after = self.model[:at], self.model[at:]
        self.model = [f"s{n}", *after] if up_to else [*before, f"s{n}"]
        self.segment, self.revive = (after if up_to else None), None

    @precondition(lambda self: not self.in_turn)
    @rule()
    def clear(self) -> None:
        self.session = self.session.clear()
        self.model = []
        self.segment = self.revive = None

    @rule()
    def reopen(self) -> None:
        reopened = Session.open(self.session.path) if self.session.path.exists() else None
        if reopened is None:
            return
        assert reopened.tip == self.session.tip
        assert reopened.session_id == self.session.session_id
        assert reopened.prompt_index == self.session.prompt_index
        self.session = reopened  # mid-turn too: open tool calls are found again

    # -- what must hold after every step ---------------------------------------------

    @invariant()
    def replay_from_disk_equals_the_model(self) -> None:
        if not self.session.path.exists():
            assert self.model == []
            return
        transcript = Transcript.open(self.session.path)
        assert transcript.problems == [], transcript.problems
        path = transcript.active_path
        if self.session.tip is not None:
            assert path and path[-1] == self.session.tip
        context = json.dumps(transcript.context(), ensure_ascii=False)
        assert MARK.findall(context) == self.model

    @invariant()
    def every_call_is_answered_in_the_next_message(self) -> None:
        """What the Messages API requires of a context: each tool_use answered by a
        tool_result in the very next message, and no result that answers nothing."""
        if not self.session.path.exists():
            return
        messages = Transcript.open(self.session.path).context()
        for index, message in enumerate(messages):
            content = message["content"] if isinstance(message["content"], list) else []
            if message["role"] == "assistant":
                calls = {b["id"] for b in content if b.get("type") == "tool_use"}
                after = messages[index + 1] if index + 1 < len(messages) else None
                if after is None:
                    continue
                answers = after["content"] if isinstance(after["content"], list) else []
                assert calls <= {b.get("tool_use_id") for b in answers}, (index, messages)
            elif message["role"] == "user":
                before = messages[index - 1]["content"] if index else []
                asked = {b.get("id") for b in before if isinstance(b, dict)}
                for block in content:
                    if block.get("type") == "tool_result":
                        assert block["tool_use_id"] in asked, (index, messages)

    @invariant()
    def every_parent_exists_and_paths_reach_a_root(self) -> None:
        if not self.session.path.exists():
            return
        records = [json.loads(line) for line in self.session.path.read_text().splitlines()]
        uuids = {r["uuid"] for r in records if "uuid" in r}
        for record in records:
            parent = record.get("parentUuid")
            assert parent is None or parent in uuids, record
        transcript = Transcript.open(self.session.path)
        path = transcript.active_path
        if path:
            first = transcript.record(path[0])
            assert first is not None and first.parent_uuid is None


SessionMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
TestSessionMachine = SessionMachine.TestCase
