"""AgentHost: turns, tool calls, interruptions and the session's commands, written through
a real Session on real files, with the offline provider (scripted from directives)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree.agent.calls import REJECTED, REJECTED_RESULT
from sessiontree.agent.host_records import INTERRUPTED, INTERRUPTED_FOR_TOOL_USE
from sessiontree.agent.loop import AgentHost, TurnEvents
from sessiontree.agent.offline import OfflineProvider
from sessiontree.agent.provider import Interrupted, ModelRequest, ModelResponse, ProviderError
from sessiontree.agent.request import session_context
from sessiontree.checkpoints.capture import FileHistory
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.conversation.transcript import Transcript
from sessiontree.session.host import run_session
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout
from tests.agent.loop_harness import FakeToolbox, records

MODEL = "claude-opus-5-5"


class Recording:
    """A provider that records the requests it is given and answers with another."""

    name = "recording"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[ModelRequest] = []

    def respond(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelResponse:
        self.requests.append(request)
        response: ModelResponse = self.inner.respond(request, on_text=on_text, cancel=cancel)
        return response


class Memory:
    def reminder(self) -> str | None:
        return "<system-reminder>\nmemory: use tabs\n</system-reminder>"


@pytest.fixture
def project(tmp_path: Path) -> tuple[Layout, Path]:
    cwd = tmp_path / "work"
    cwd.mkdir()
    return Layout(tmp_path / "root"), cwd


def make_host(
    layout: Layout, cwd: Path, provider: Any = None, *, memory: Any = None
) -> tuple[AgentHost, FakeToolbox, Recording]:
    session = Session.create(layout, cwd, entrypoint="cli", record_history=True)
    session.file_history = FileHistory(layout, session.session_id, str(cwd))
    toolbox = FakeToolbox(session, cwd)
    recording = Recording(provider or OfflineProvider())
    host = AgentHost(session, recording, toolbox, model=MODEL, layout=layout, memory=memory)
    return host, toolbox, recording


def types(session: Session) -> list[str]:
    out = []
    for r in records(session):
        kind = r["type"]
        if kind in ("user", "assistant"):
            content = r["message"]["content"]
            first = content if isinstance(content, str) else content[0]
            kind += ":" + ("text" if isinstance(first, str) else first["type"])
        elif kind == "system":
            kind += ":" + r.get("subtype", "")
        out.append(kind)
    return out


def test_a_plain_turn_is_written_as_the_client_writes_it(project: tuple[Layout, Path]) -> None:
    layout, _cwd = project
    host, _tools, recording = make_host(*project)
    texts: list[str] = []
    result = host.turn("hello there", events=TurnEvents(on_text=texts.append))
    assert result.text == "Echo: hello there"
    assert "".join(texts) == "Echo: hello there"
    assert not result.interrupted and result.responses == 1
    assert types(host.session) == [
        "file-history-snapshot",
        "user:text",
        "assistant:text",
        "system:turn_duration",
        "last-prompt",
        "ai-title",
    ]
    title = [r for r in records(host.session) if r["type"] == "ai-title"]
    assert title[0]["aiTitle"] == "Offline session title"
    # the request sent was the session's context, the prompt last
    assert recording.requests[0].messages[-1]["role"] == "user"
    assert "hello there" in json.dumps(recording.requests[0].messages[-1])
    history = (layout.root / "history.jsonl").read_text()
    assert "hello there" in history


def test_each_request_is_the_context_sessiontree_computes(project: tuple[Layout, Path]) -> None:
    _layout, cwd = project
    (cwd / "a.txt").write_text("one\n")
    host, _tools, recording = make_host(*project, memory=Memory())
    host.turn("first")
    host.turn("read it [[READ a.txt]] then [[EDIT a.txt|one|two]]")
    transcript = Transcript.open(host.session.path)
    full = transcript.context()
    last = recording.requests[-2]  # the last turn's final request (then the title's)
    last = next(r for r in reversed(recording.requests) if r.tools)
    # the request is the context up to its tip, with the memory reminder in front
    assert last.messages[0]["content"][0]["text"].startswith("<system-reminder>\nmemory")
    without = [dict(m) for m in last.messages]
    without[0] = {**without[0], "content": without[0]["content"][1:]}
    assert without[0]["content"] == [{"type": "text", "text": "first"}]
    assert full[0]["content"] == "first"  # the same text, as a block beside the reminder
    assert without[1:] == full[1 : len(without)]
    # and the whole transcript's context extends it by the final answer only
    assert full[len(without) :] == [
        {"role": "assistant", "content": [{"type": "text", "text": "Done with 2 steps."}]}
    ]


def test_write_then_edit_takes_checkpoints(project: tuple[Layout, Path]) -> None:
    _layout, cwd = project
    host, tools, _ = make_host(*project)
    result = host.turn("[[WRITE notes.md|alpha\\nbeta]] [[EDIT notes.md|beta|gamma]]")
    assert result.text == "Done with 2 steps." and result.tool_calls == 2
    assert (cwd / "notes.md").read_text() == "alpha\ngamma"
    assert [c[0] for c in tools.calls] == ["Write", "Edit"]
    kinds = types(host.session)
    assert kinds.count("file-history-snapshot") == 1  # the prompt's
    assert kinds.count("file-history-delta") == 1  # notes.md backed up before its Write
    host.turn("[[EDIT notes.md|alpha|omega]]")
    checkpoints = read_checkpoints(Transcript.open(host.session.path))
    assert len(checkpoints) == 2
    assert any(c.files for c in checkpoints[1:])


def test_parallel_calls_each_answered_on_its_own_call(project: tuple[Layout, Path]) -> None:
    _layout, cwd = project
    for name in ("a", "b", "c"):
        (cwd / f"{name}.txt").write_text(name)
    host, _tools, _ = make_host(*project)
    result = host.turn("[[PAR READ a.txt ;; READ b.txt ;; READ c.txt]]")
    assert result.tool_calls == 3 and result.text == "Done with 1 steps."
    rows = records(host.session)
    uses = {
        block["id"]: row["uuid"]
        for row in rows
        if row["type"] == "assistant"
        for block in row["message"]["content"]
        if block["type"] == "tool_use"
    }
    results = [row for row in rows if row["type"] == "user" and "toolUseResult" in row]
    assert len(results) == 3
    for row in results:  # each on its own call's record
        assert row["parentUuid"] == uses[row["message"]["content"][0]["tool_use_id"]]
    # the response after them hangs on the result written last
    final = [r for r in rows if r["type"] == "assistant"][-1]
    assert final["parentUuid"] == results[-1]["uuid"]
    # one message of three calls, and one of their three results, in what is sent
    context = Transcript.open(host.session.path).context()
    calls = [m for m in context if m["role"] == "assistant" and len(m["content"]) == 4]
    assert len(calls) == 1


class Cancelling:
    """Offline answers; the cancel event is set while the text of response ``at`` streams."""

    name = "cancelling"

    def __init__(self, cancel: threading.Event, at: int) -> None:
        self.inner, self.cancel, self.at, self.n = OfflineProvider(chunk=2), cancel, at, 0

    def respond(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelResponse:
        self.n += 1

        def text(piece: str) -> None:
            if self.n == self.at:
                self.cancel.set()
            if on_text is not None:
                on_text(piece)

        response: ModelResponse = self.inner.respond(request, on_text=text, cancel=cancel)
        return response


def test_ctrl_c_while_streaming_is_recorded_as_the_client_records_it(
    project: tuple[Layout, Path],
) -> None:
    cancel = threading.Event()
    host, _tools, _ = make_host(*project, provider=Cancelling(cancel, at=1))
    result = host.turn("a long answer please", cancel=cancel)
    assert result.interrupted
    rows = records(host.session)
    assert rows[-1]["type"] == "last-prompt"
    last = rows[-2]
    assert last["type"] == "user"
    assert last["message"]["content"] == [{"type": "text", "text": INTERRUPTED}]
    prompt = next(r for r in rows if r["type"] == "user")
    assert last["promptId"] == prompt["promptId"]
    # what had streamed is kept, as a response that never stopped; no turn end
    partial = [r for r in rows if r["type"] == "assistant"]
    assert len(partial) == 1 and partial[0]["message"]["stop_reason"] is None
    assert partial[0]["message"]["content"] == [{"type": "text", "text": "Ec"}]
    assert partial[0]["parentUuid"] == prompt["uuid"] and last["parentUuid"] == partial[0]["uuid"]
    assert "turn_duration" not in json.dumps(rows)
    cancel.clear()
    host.provider = OfflineProvider()
    assert host.turn("again").text.endswith("again")


def test_ctrl_c_while_tools_run(project: tuple[Layout, Path]) -> None:
    _layout, cwd = project
    (cwd / "a.txt").write_text("a")
    host, tools, _ = make_host(*project)
    cancel = threading.Event()
    tools.gate = threading.Event()

    def stop_soon() -> None:
        tools.started.wait(10)
        cancel.set()
        assert tools.gate is not None
        tools.gate.set()

    threading.Thread(target=stop_soon).start()
    result = host.turn("[[BASH echo one]] [[READ a.txt]]", cancel=cancel)
    assert result.interrupted
    rows = records(host.session)
    assert rows[-1]["type"] == "last-prompt"
    assert rows[-2]["message"]["content"] == [{"type": "text", "text": INTERRUPTED_FOR_TOOL_USE}]
    # the command stopped is answered as the client answers it; nothing more was asked
    (result,) = [r for r in rows if "toolUseResult" in r]
    assert result["toolUseResult"] == REJECTED_RESULT
    assert result["message"]["content"][0]["content"] == REJECTED
    assert rows[-2]["parentUuid"] == result["uuid"]
    assert [r["type"] for r in rows].count("assistant") == 2  # text + tool_use of one response
    assert len(tools.calls) == 1


def test_interrupted_calls_left_are_answered_as_interrupted(
    project: tuple[Layout, Path],
) -> None:
    _layout, _cwd = project
    host, tools, _ = make_host(*project)
    cancel = threading.Event()
    tools.gate = threading.Event()

    def stop_soon() -> None:
        tools.started.wait(10)
        cancel.set()
        assert tools.gate is not None
        tools.gate.set()

    threading.Thread(target=stop_soon).start()
    result = host.turn("[[PAR BASH echo a ;; BASH echo b]]", cancel=cancel)
    assert result.interrupted
    results = [
        r["message"]["content"][0]
        for r in records(host.session)
        if r["type"] == "user" and "toolUseResult" in r
    ]
    assert len(results) == 2  # the one stopped and the one never run
    assert all(r["content"] == REJECTED and r["is_error"] is True for r in results)
    # the real client's rule: every call answered, nothing left to repair on resume
    sent = json.dumps(Transcript.open(host.session.path).context())
    assert "Tool call interrupted" not in sent


def test_compact_summarize_rewind_clear_fork_rename_cost(project: tuple[Layout, Path]) -> None:
    _layout, cwd = project
    host, _tools, _ = make_host(*project)
    first = host.turn("[[WRITE f.txt|v1]]").prompt_uuid
    host.turn("[[EDIT f.txt|v1|v2]]")
    third = host.turn("third").prompt_uuid
    assert (cwd / "f.txt").read_text() == "v2"

    rewound = host.rewind(third, conversation=False, code=True)
    assert rewound.prompt_text == "third" and not rewound.files_changed  # nothing to undo
    rewound = host.rewind(first, conversation=True, code=True)
    assert rewound.prompt_text == "[[WRITE f.txt|v1]]"
    assert not (cwd / "f.txt").exists()  # back before the Write
    assert host.turn("after the rewind").text == "Echo: after the rewind"
    transcript = Transcript.open(host.session.path)
    assert [m["role"] for m in transcript.context()] == ["user", "assistant"]

    host.turn("more")
    host.compact("keep it short")
    context = Transcript.open(host.session.path).context()
    assert "OFFLINE SUMMARY" in json.dumps(context)
    assert host.turn("after compact").text.endswith("after compact")

    usage = host.cost()
    assert usage.responses >= 4 and usage.input_tokens > 0
    assert usage.cost is None  # the price table has no claude-opus-5-5: unknown, not guessed

    host.rename("My chat")
    assert Transcript.open(host.session.path).metadata("custom-title")
    old = host.session.session_id
    host.fork()
    assert host.session.session_id != old
    assert host.turn("in the fork").text == "Echo: in the fork"
    forked = host.session.path
    host.clear()
    assert host.session.path != forked
    assert host.turn("fresh").text.endswith("</local-command-stdout>\nfresh")
    assert [m["role"] for m in session_context(host.session.transcript(), host.session.tip)][
        -1
    ] == "assistant"


def test_summarize_from_a_prompt(project: tuple[Layout, Path]) -> None:
    host, _tools, _ = make_host(*project)
    host.turn("one")
    second = host.turn("two").prompt_uuid
    host.turn("three")
    host.summarize(second, direction="from")
    context = json.dumps(Transcript.open(host.session.path).context())
    assert "OFFLINE SUMMARY" in context and "Echo: one" in context
    assert host.turn("four").text.endswith("four")


class Big:
    """Offline answers that report a context near the limit."""

    name = "big"

    def __init__(self) -> None:
        self.inner = OfflineProvider()

    def respond(self, request: ModelRequest, **kw: Any) -> ModelResponse:
        r: ModelResponse = self.inner.respond(request, **kw)
        usage = {**r.usage, "cache_read_input_tokens": 190_000}
        return ModelResponse(r.message_id, r.model, r.content, r.stop_reason, usage)


def test_auto_compact_near_the_limit(project: tuple[Layout, Path]) -> None:
    host, _tools, _ = make_host(*project, provider=Big())
    notices: list[str] = []
    assert not host.turn("one").compacted
    # one exchange: nothing to summarize before the response that is kept (the client's)
    assert not host.turn("two").compacted
    result = host.turn("three", events=TurnEvents(on_notice=notices.append))
    assert result.compacted and notices
    rows = records(host.session)
    boundary = [r for r in rows if r.get("subtype") == "compact_boundary"]
    assert boundary and boundary[0]["compactMetadata"]["preTokens"] >= 190_000
    # as the client compacts by itself (seen with mock_api.py reporting a full context)
    metadata = boundary[0]["compactMetadata"]
    assert metadata["trigger"] == "auto" and metadata["runningTurnPrompt"] == {}
    assert metadata["cumulativeDroppedTokens"] == metadata["preTokens"] - metadata["postTokens"]
    by_uuid = {r["uuid"]: r for r in rows if "uuid" in r}
    kept = [by_uuid[u] for u in metadata["preservedMessages"]["uuids"]]
    # the last response and what followed it: the new prompt, written before compacting
    assert kept[0]["type"] == "assistant" and kept[-1]["uuid"] == result.prompt_uuid
    summary = by_uuid[metadata["preservedSegment"]["anchorUuid"]]
    assert summary["isCompactSummary"] and summary["parentUuid"] == boundary[0]["uuid"]
    assert summary["summarizedTurnPromptUuids"] == [result.prompt_uuid]
    context = Transcript.open(host.session.path).context()
    texts = [json.dumps(m["content"]) for m in context]
    assert "OFFLINE SUMMARY" in texts[0] and "Echo: two" in texts[1] and "three" in texts[2]
    assert [m["role"] for m in context] == ["user", "assistant", "user", "assistant"]


class BigWhenCalling(Big):
    """Offline answers that report a context near the limit when they call a tool."""

    def respond(self, request: ModelRequest, **kw: Any) -> ModelResponse:
        r: ModelResponse = self.inner.respond(request, **kw)
        if not r.tool_calls:
            return r
        usage = {**r.usage, "cache_read_input_tokens": 190_000}
        return ModelResponse(r.message_id, r.model, r.content, r.stop_reason, usage)


def test_auto_compact_between_the_responses_of_a_turn(project: tuple[Layout, Path]) -> None:
    host, _tools, _ = make_host(*project, provider=BigWhenCalling())
    host.turn("one")
    result = host.turn("[[WRITE a.txt|x]] [[WRITE b.txt|y]]")
    assert result.compacted and result.tool_calls == 1
    rows = records(host.session)
    (boundary,) = [r for r in rows if r.get("subtype") == "compact_boundary"]
    metadata = boundary["compactMetadata"]
    assert metadata["trigger"] == "auto" and metadata["preTokens"] >= 190_000
    by_uuid = {r["uuid"]: r for r in rows if "uuid" in r}
    kept = [by_uuid[u] for u in metadata["preservedMessages"]["uuids"]]
    # the response that called Write, then its result (the prompt is in the summary)
    *response, result_record = kept
    assert {r["type"] for r in response} == {"assistant"} and "toolUseResult" in result_record
    assert len({r["message"]["id"] for r in response}) == 1  # all of the one response
    calls = [b["name"] for r in response for b in r["message"]["content"] if "name" in b]
    assert calls == ["Write"]
    context = Transcript.open(host.session.path).context()
    assert [m["role"] for m in context] == ["user", "assistant", "user", "assistant"]
    assert "OFFLINE SUMMARY" in json.dumps(context[0]) and "tool_result" in json.dumps(context[2])


def test_a_resumed_session_goes_on(project: tuple[Layout, Path]) -> None:
    layout, cwd = project
    host, _tools, _ = make_host(*project)
    host.turn("[[WRITE g.txt|x]]")
    again = Session.open(host.session.path, history_layout=layout)
    again.file_history = FileHistory.load(layout, again.transcript(), cwd=str(cwd))
    tools = FakeToolbox(again, cwd)
    resumed = AgentHost(again, OfflineProvider(), tools, model=MODEL, layout=layout)
    assert resumed.turn("[[EDIT g.txt|x|y]]").text == "Done with 1 steps."
    assert (cwd / "g.txt").read_text() == "y"
    titles = [r for r in records(again) if r["type"] == "ai-title"]
    assert len(titles) == 1  # titled once


def test_the_offline_provider_stops_on_cancel() -> None:
    cancel = threading.Event()
    cancel.set()
    request = ModelRequest(MODEL, [], [{"role": "user", "content": "hi"}], [])
    with pytest.raises(Interrupted):
        OfflineProvider().respond(request, on_text=lambda _t: None, cancel=cancel)


def test_rewind_points_count_the_files_each_turn_changed(project: tuple[Layout, Path]) -> None:
    _layout, cwd = project
    host, _tools, _ = make_host(*project)
    host.turn("[[WRITE a.txt|1]] [[WRITE b.txt|1]]")
    host.turn("just talk")
    host.turn("[[EDIT a.txt|1|2]]")
    points = host.rewind_points()
    assert [p.text for p in points] == [
        "[[WRITE a.txt|1]] [[WRITE b.txt|1]]",
        "just talk",
        "[[EDIT a.txt|1|2]]",
    ]
    assert [p.files_changed for p in points] == [2, 0, 1]
    assert all(p.has_checkpoint for p in points)
    # the conversation rewound to the second prompt; its text comes back for editing
    back = host.rewind(points[1].prompt_uuid, conversation=True, code=False)
    assert back.prompt_text == "just talk"
    assert (cwd / "a.txt").read_text() == "2"  # the code stays


def test_resume_another_session(project: tuple[Layout, Path]) -> None:
    _layout, _cwd = project
    host, tools, _ = make_host(*project)
    host.turn("[[WRITE a.txt|1]]")
    first = host.session.path
    host.clear()
    host.turn("other session")
    host.resume(first)
    assert host.session.path == first and tools.session is host.session
    host.turn("[[EDIT a.txt|1|2]]")
    assert [p.files_changed for p in host.rewind_points()] == [1, 1]


class Failing:
    name = "failing"

    def respond(self, request: ModelRequest, **kw: Any) -> ModelResponse:
        raise ProviderError(
            "the model API failed (400): no",
            message="no",
            status=400,
            error_type="invalid_request_error",
        )


def test_an_api_failure_is_recorded_as_the_client_records_it(
    project: tuple[Layout, Path],
) -> None:
    host, _tools, _ = make_host(*project, provider=Failing())
    with pytest.raises(ProviderError):
        host.turn("hello")
    rows = records(host.session)
    error = next(r for r in rows if r["type"] == "assistant")
    assert error["isApiErrorMessage"] is True and error["apiErrorStatus"] == 400
    assert error["apiErrorType"] == "invalid_request_error" and error["error"] == "unknown"
    assert error["message"]["model"] == "<synthetic>"
    assert error["message"]["content"] == [{"type": "text", "text": "API Error: 400 no"}]
    assert rows[-1]["type"] == "last-prompt" and rows[-1]["leafUuid"] == error["uuid"]
    # the next request leaves the error out: the prompt is sent again, with the new one
    host.provider = Recording(OfflineProvider())
    assert host.turn("again").text.endswith("again")
    sent = host.provider.requests[0].messages
    assert "API Error" not in json.dumps(sent)
    assert [m["role"] for m in sent] == ["user"]
    assert "hello" in json.dumps(sent) and "again" in json.dumps(sent)


def test_the_live_entry_follows_the_session_the_host_writes(project: tuple[Layout, Path]) -> None:
    layout, _cwd = project
    host, _tools, _ = make_host(*project)
    first = host.session
    with run_session(layout, first, env={}, snapshot_shell=False) as running:
        host.running = running
        host.turn("one")
        entry = json.loads(layout.live_session_path(running.live.pid).read_text())
        assert entry["sessionId"] == first.session_id and entry["status"] == "idle"
        host.clear()  # as client 2.1.328's /clear: the entry names the new session
        entry = json.loads(layout.live_session_path(running.live.pid).read_text())
        assert entry["sessionId"] == host.session.session_id != first.session_id
        host.resume(first.path)
        assert running.live.session_id == first.session_id
    assert not layout.live_session_path(running.live.pid).exists()


def test_hooks_run_after_an_automatic_compaction_and_on_clear(
    project: tuple[Layout, Path],
) -> None:
    host, _tools, _ = make_host(*project, provider=Big())
    calls: list[tuple[str, str, str | None]] = []

    def hooks(source: str, session: Session, prompt_id: str | None) -> list[Any]:
        calls.append((source, session.session_id, prompt_id))
        attachment = {"type": "hook_success", "hookName": f"SessionStart:{source}"}
        return [(attachment, f"<system-reminder>{source}</system-reminder>")]

    host.session_start_hooks = hooks
    for text in ("one", "two", "three"):
        host.turn(text)
    rows = records(host.session)
    summary = next(r for r in rows if r.get("isCompactSummary"))
    third = next(r for r in rows if r.get("message", {}).get("content") == "three")
    # the summary of an automatic compaction is written under the turn's prompt id
    assert summary["promptId"] == third["promptId"]
    assert calls == [("compact", host.session.session_id, third["promptId"])]
    hook = next(r for r in rows if r.get("attachment", {}).get("hookName"))
    assert rows.index(hook) > rows.index(summary)
    answer = [r for r in rows if r["type"] == "assistant"][-1]
    assert answer["parentUuid"] == hook["uuid"]  # the next response hangs on it

    host.clear()
    assert calls[-1] == ("clear", host.session.session_id, None)
    first, *rest = records(host.session)
    assert first["attachment"]["hookName"] == "SessionStart:clear" and first["parentUuid"] is None
    assert next(r for r in rest if r.get("isMeta"))["parentUuid"] == first["uuid"]
