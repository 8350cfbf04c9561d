"""The Anthropic provider over HTTP: the official SDK against the scripted stand-in the real
client runs against (``mock_api.py``), and against small servers that fail as the API
fails (overloaded before and during a stream, a bad request, a slow stream cancelled)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sessiontree.agent.anthropic_provider import AnthropicProvider, with_cache_control
from sessiontree.agent.provider import Interrupted, ModelRequest, ProviderError
from tests.agent.loop_harness import SCHEMAS, MockAPI, free_port, mock_api, needs_mock_api

MODEL = "claude-opus-5-5"
SYSTEM = [{"type": "text", "text": "You are a test."}]


def request(text: str, *, tools: bool = True) -> ModelRequest:
    return ModelRequest(
        MODEL, SYSTEM, [{"role": "user", "content": text}], SCHEMAS if tools else []
    )


@pytest.fixture
def api(tmp_path: Path) -> Iterator[MockAPI]:
    with mock_api(tmp_path) as running:
        yield running


def provider(url: str, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider(api_key="sk-ant-test", base_url=url, **kw)


@needs_mock_api
def test_a_streamed_answer_and_its_usage(api: MockAPI) -> None:
    pieces: list[str] = []
    response = provider(api.url).respond(request("hello"), on_text=pieces.append)
    assert response.content == [{"type": "text", "text": "Echo: hello"}]
    assert "".join(pieces) == "Echo: hello"
    assert response.stop_reason == "end_turn" and response.message_id.startswith("msg_")
    assert response.usage["input_tokens"] == 120 and response.usage["output_tokens"] == 30
    sent = api.requests()[0]
    assert sent["stream"] is True and sent["model"] == MODEL
    assert sent["tools"] == ["Read", "Write", "Edit", "Bash"]


@needs_mock_api
def test_tool_calls_and_parallel_calls(api: MockAPI) -> None:
    one = provider(api.url).respond(request("[[WRITE a.txt|hi]]"))
    assert one.stop_reason == "tool_use"
    assert [b["type"] for b in one.content] == ["text", "tool_use"]
    assert one.tool_calls[0]["name"] == "Write"
    assert one.tool_calls[0]["input"] == {"file_path": "a.txt", "content": "hi"}
    par = provider(api.url).respond(request("[[PAR READ a ;; READ b ;; BASH ls]]"))
    assert [c["name"] for c in par.tool_calls] == ["Read", "Read", "Bash"]
    assert len({c["id"] for c in par.tool_calls}) == 3


@needs_mock_api
def test_prompt_caching_breakpoints(api: MockAPI) -> None:
    messages = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [{"type": "text", "text": "Echo: one"}]},
        {"role": "user", "content": [{"type": "text", "text": "two"}]},
    ]
    original = json.dumps(messages)
    provider(api.url).respond(ModelRequest(MODEL, SYSTEM, messages, []))
    assert json.dumps(messages) == original  # the request is left as it was
    body = api.requests()[0]["body"]
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(body["messages"][:-1])


def test_cache_breakpoint_skips_what_cannot_hold_one() -> None:
    messages = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": ""}],
        }
    ]
    _system, sent = with_cache_control(ModelRequest(MODEL, [], messages, []))
    assert sent[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in sent[0]["content"][1]


# -- servers that fail as the API fails ----------------------------------------------------


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    message = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    return [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        *[
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": w},
                },
            )
            for w in text.split(" ")
        ],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 7},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


@contextmanager
def server(script: list[str], *, delay: float = 0.0) -> Iterator[tuple[str, list[str]]]:
    """A server that answers request n as ``script[n]`` says (the last one repeats):
    ``529``, ``400``, ``midstream`` (an overloaded error event after the first text),
    ``ok``. ``delay``: seconds between stream events."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            what = script[min(len(seen), len(script) - 1)]
            seen.append(what)
            if what in ("529", "400"):
                kind = "overloaded_error" if what == "529" else "invalid_request_error"
                body = json.dumps(
                    {"type": "error", "error": {"type": kind, "message": f"no ({what})"}}
                )
                data = body.encode()
                self.send_response(int(what))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("x-should-retry", "false")
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            events = _events("all is well here")
            if what == "midstream":
                events = [*events[:3], ("error", OVERLOADED)]
            for name, data_obj in events:
                try:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data_obj)}\n\n".encode())
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(delay)
            self.close_connection = True

    httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_overloaded_mid_stream_is_tried_again() -> None:
    notices: list[str] = []
    with server(["midstream", "midstream", "ok"]) as (url, seen):
        got = provider(url, max_retries=0, backoff_s=0, on_retry=notices.append).respond(
            request("x", tools=False)
        )
    assert got.text == "alliswellhere"  # the deltas of the try that went through, only
    assert seen == ["midstream", "midstream", "ok"]
    assert len(notices) == 2 and "Overloaded" in notices[0]
    assert got.usage["output_tokens"] == 7


def test_overloaded_529_is_tried_again() -> None:
    with server(["529", "ok"]) as (url, seen):
        got = provider(url, max_retries=0, backoff_s=0).respond(request("x", tools=False))
    assert seen == ["529", "ok"] and got.stop_reason == "end_turn"


def test_giving_up_is_one_clear_line() -> None:
    with server(["529"]) as (url, seen), pytest.raises(ProviderError) as failed:
        provider(url, max_retries=0, stream_retries=2, backoff_s=0).respond(request("x"))
    assert len(seen) == 3
    assert str(failed.value) == "the model API failed (529): no (529)"


def test_a_bad_request_is_not_tried_again() -> None:
    with (
        server(["400"]) as (url, seen),
        pytest.raises(ProviderError, match=r"\(400\): no \(400\)"),
    ):
        provider(url, max_retries=0, backoff_s=0).respond(request("x"))
    assert seen == ["400"]


def test_no_server_is_one_clear_line() -> None:
    """One line naming the failure; the SDK's own words for a refused connection change
    between its releases ("Connection error." in older ones, the address and errno in
    2.17), so only their gist is held to."""
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ProviderError) as failed:
        provider(url, max_retries=0).respond(request("x"))
    said = str(failed.value)
    assert said.startswith("the model API failed: ") and "\n" not in said
    assert "connection" in said.lower()


def test_cancel_stops_a_stream_and_keeps_what_arrived() -> None:
    cancel = threading.Event()
    pieces: list[str] = []

    def on_text(piece: str) -> None:
        pieces.append(piece)
        cancel.set()

    with server(["ok"], delay=0.3) as (url, _seen):
        started = time.monotonic()
        with pytest.raises(Interrupted) as stopped:
            provider(url).respond(request("x"), on_text=on_text, cancel=cancel)
        assert time.monotonic() - started < 2
    assert pieces == ["all"]
    assert stopped.value.partial == [{"type": "text", "text": "all"}]
    assert stopped.value.message_id == "msg_test" and stopped.value.model == MODEL
