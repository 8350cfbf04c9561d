"""The model an agent host talks to, behind one small interface.

A :class:`Provider` takes a :class:`ModelRequest` (the Messages API request: model, system
prompt blocks, messages, tools) and returns one :class:`ModelResponse` (the content blocks
as the API returned them, the stop reason and the usage), streaming the text it receives
to ``on_text`` as it comes. Two providers exist: the Anthropic SDK
(:mod:`sessiontree.agent.anthropic_provider`) and an offline, deterministic one that
scripts its answers from directives in the prompt (:mod:`sessiontree.agent.offline`).

A cancel event set while a response streams ends it with :class:`Interrupted` (carrying
what had arrived); a failure the user should read is a :class:`ProviderError`, one line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from sessiontree.errors import SessionTreeError

JsonDict = dict[str, Any]

ProviderName = Literal["anthropic", "offline"]

#: The model ``chat`` asks when none is named: the one client 2.1.328 asks by default.
DEFAULT_MODEL = "claude-opus-5-5"


@dataclass(frozen=True)
class ModelRequest:
    """One Messages API request."""

    model: str
    system: list[JsonDict]  # system prompt blocks
    messages: list[JsonDict]  # Messages API messages
    tools: list[JsonDict] = field(default_factory=list)  # the tools' schemas
    max_tokens: int = 32000


@dataclass(frozen=True)
class ModelResponse:
    """One response, as the API returned it."""

    message_id: str
    model: str
    content: list[JsonDict]  # text / thinking / tool_use blocks
    stop_reason: str
    usage: JsonDict

    @property
    def tool_calls(self) -> list[JsonDict]:
        """The ``tool_use`` blocks, in the order the model made them."""
        return [block for block in self.content if block.get("type") == "tool_use"]

    @property
    def text(self) -> str:
        """The text blocks, joined."""
        return "".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


class Interrupted(Exception):
    """The cancel event was set while the response streamed. ``partial``: the text and
    thinking blocks that had arrived (an unfinished one with what it had; tool calls left
    out), and what ``message_start`` said of the response (its id, model and usage), when
    it had come: the client keeps what streamed before the user stopped it."""

    def __init__(
        self,
        partial: list[JsonDict] | None = None,
        *,
        message_id: str | None = None,
        model: str | None = None,
        usage: JsonDict | None = None,
    ) -> None:
        super().__init__("interrupted")
        self.partial = list(partial or [])
        self.message_id = message_id
        self.model = model
        self.usage = usage


class ProviderError(SessionTreeError):
    """The model could not be reached or refused the request: one clear line.
    ``message``: what the API said; ``status`` and ``error_type``: its HTTP status and
    ``error.type``, when it answered."""

    code = "provider"

    def __init__(
        self,
        line: str,
        *,
        message: str | None = None,
        status: int | None = None,
        error_type: str | None = None,
    ) -> None:
        super().__init__(line)
        self.message = message if message is not None else line
        self.status = status
        self.error_type = error_type


class Provider(Protocol):
    """What answers a request: the Anthropic API or the offline script."""

    name: str

    def respond(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelResponse:
        """One response to ``request``; its text is given to ``on_text`` as it streams.
        Raises :class:`Interrupted` when ``cancel`` is set before it ends, and
        :class:`ProviderError` when it fails for good."""
        ...
