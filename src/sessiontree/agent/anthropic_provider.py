"""The Anthropic Messages API as a :class:`~sessiontree.agent.provider.Provider`, through
the official ``anthropic`` SDK (imported only when a provider is made: ``sessiontree
--version`` never loads it).

* Streaming: ``client.messages.stream``; text goes to ``on_text`` as it arrives, the
  response is the stream's final message (text, thinking and ``tool_use`` blocks as the
  API returned them, several calls in one response included).
* Prompt caching: a ``cache_control`` breakpoint on the last system block and on the last
  block of the last message, so each request reads the conversation before it from the
  cache and writes what it adds.
* Retries: the SDK retries a request refused with 408, 409, 429, 5xx or 529 (overloaded)
  ``max_retries`` times with its backoff; an error the API sends in the middle of a
  stream (``overloaded_error``, ``api_error``), which the SDK does not retry, and an
  overload the SDK gave up on, are retried here ``stream_retries`` more times, with
  exponential backoff (what has streamed so far is shown again: the face is told by a
  notice).
* Cancel: setting the event closes the stream from another thread; :class:`Interrupted`
  carries the blocks that had arrived.
* Usage: the final message's ``usage`` as the API gave it (cache reads and writes too).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sessiontree.agent.provider import (
    Interrupted,
    JsonDict,
    ModelRequest,
    ModelResponse,
    ProviderError,
)

if TYPE_CHECKING:
    import anthropic

#: Errors the API sends that another try may not get (its ``error.type``).
RETRYABLE_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
CACHE_CONTROL: JsonDict = {"type": "ephemeral"}


def with_cache_control(request: ModelRequest) -> tuple[list[JsonDict], list[JsonDict]]:
    """``(system, messages)`` of ``request`` with the two cache breakpoints set (copies:
    the request is left as it is). An empty text block takes no breakpoint (the API
    refuses one), so the breakpoint goes on the last block that can hold it."""
    system = copy.deepcopy(request.system)
    if system:
        system[-1]["cache_control"] = CACHE_CONTROL
    messages = list(request.messages)
    if messages:
        last = copy.deepcopy(messages[-1])
        content = last.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if isinstance(blocks, list):
            for block in reversed(blocks):
                if isinstance(block, dict) and _cacheable(block):
                    block["cache_control"] = CACHE_CONTROL
                    break
            last["content"] = blocks
        messages[-1] = last
    return system, messages


def _cacheable(block: JsonDict) -> bool:
    kind = block.get("type")
    if kind in ("thinking", "redacted_thinking"):
        return False
    return not (kind == "text" and not block.get("text"))


def _error_type(exc: Exception) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
    return None


def provider_error(exc: Exception) -> ProviderError:
    """The SDK's error as one line for the user, with what the API said."""
    status = getattr(exc, "status_code", None)
    if status == 200:  # an error event inside a stream that had begun: no status of its own
        status = None
    body = getattr(exc, "body", None)
    message = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
    text = str(message or exc or type(exc).__name__).splitlines()[0]
    line = f"the model API failed ({status}): {text}" if status else f"the model API failed: {text}"
    return ProviderError(
        line,
        message=text,
        status=status if isinstance(status, int) else None,
        error_type=_error_type(exc),
    )


class AnthropicProvider:
    """The Messages API. ``api_key`` and ``base_url`` as ``ANTHROPIC_API_KEY`` and
    ``ANTHROPIC_BASE_URL`` give them (the CLI reads those; the library reads no
    environment). ``sleep`` is the backoff's (a test passes one that does not wait)."""

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 4,
        stream_retries: int = 3,
        backoff_s: float = 1.0,
        timeout_s: float = 600.0,
        sleep: Callable[[float], None] = time.sleep,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        import anthropic  # the SDK only when a provider is made

        self._anthropic = anthropic
        self.client: anthropic.Anthropic = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout_s
        )
        self.stream_retries = stream_retries
        self.backoff_s = backoff_s
        self.sleep = sleep
        self.on_retry = on_retry

    def respond(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelResponse:
        system, messages = with_cache_control(request)
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = request.tools
        anthropic = self._anthropic
        for attempt in range(self.stream_retries + 1):
            try:
                return self._stream(params, on_text, cancel)
            except Interrupted:
                raise
            except anthropic.APIStatusError as exc:
                retryable = exc.status_code >= 500 or _error_type(exc) in RETRYABLE_TYPES
                if not retryable or attempt == self.stream_retries:
                    raise provider_error(exc) from exc
                self._wait(attempt, str(provider_error(exc)), cancel)
            except anthropic.AnthropicError as exc:  # no answer: connection, timeout
                raise provider_error(exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait(self, attempt: int, why: str, cancel: threading.Event | None) -> None:
        delay = self.backoff_s * (2**attempt)
        if self.on_retry is not None:
            self.on_retry(f"{why}; trying again in {delay:g} s")
        if cancel is not None:
            if cancel.wait(delay):
                raise Interrupted()
        else:
            self.sleep(delay)

    def _stream(
        self,
        params: dict[str, Any],
        on_text: Callable[[str], None] | None,
        cancel: threading.Event | None,
    ) -> ModelResponse:
        if cancel is not None and cancel.is_set():
            raise Interrupted()
        blocks: dict[int, JsonDict] = {}
        started: JsonDict = {}  # what message_start said

        def stopped() -> Interrupted:
            return Interrupted(
                _partial(blocks),
                message_id=started.get("id"),
                model=started.get("model"),
                usage=started.get("usage"),
            )

        with self.client.messages.stream(**params) as stream:
            stop_watch = threading.Event()
            if cancel is not None:  # closing the stream ends a read that waits for bytes
                threading.Thread(
                    target=_close_on_cancel, args=(stream, cancel, stop_watch), daemon=True
                ).start()
            try:
                for event in stream:
                    if cancel is not None and cancel.is_set():
                        raise stopped()
                    _track(blocks, started, event)
                    if event.type == "text" and on_text is not None:
                        on_text(event.text)
                message = stream.get_final_message()
            except Interrupted:
                raise
            except Exception as exc:
                if cancel is not None and cancel.is_set():
                    raise stopped() from exc
                raise
            finally:
                stop_watch.set()
        if cancel is not None and cancel.is_set():
            raise stopped()
        content = [block.model_dump(mode="json", exclude_none=True) for block in message.content]
        usage = message.usage.model_dump(mode="json", exclude_none=True)
        return ModelResponse(
            message_id=message.id,
            model=message.model,
            content=content,
            stop_reason=str(message.stop_reason or "end_turn"),
            usage=usage,
        )


def _close_on_cancel(stream: Any, cancel: threading.Event, done: threading.Event) -> None:
    while not done.is_set():
        if cancel.wait(0.05):
            if not done.is_set():
                stream.close()
            return


def _track(blocks: dict[int, JsonDict], started: JsonDict, event: Any) -> None:
    """Keep the blocks that arrived and what ``message_start`` said, for
    :class:`Interrupted`."""
    kind = getattr(event, "type", None)
    if kind == "message_start":
        message = event.message
        started.update(
            id=message.id,
            model=message.model,
            usage=message.usage.model_dump(mode="json", exclude_none=True),
        )
    elif kind == "content_block_start":
        blocks[event.index] = event.content_block.model_dump(mode="json", exclude_none=True)
    elif kind == "content_block_delta" and event.index in blocks:
        delta = event.delta
        block = blocks[event.index]
        if delta.type == "text_delta":
            block["text"] = block.get("text", "") + delta.text
        elif delta.type == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.thinking


def _partial(blocks: dict[int, JsonDict]) -> list[JsonDict]:
    return [blocks[i] for i in sorted(blocks) if blocks[i].get("type") != "tool_use"]
