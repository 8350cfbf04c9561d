"""The agent host: a turn from a prompt to its end, and the session's commands, on a
:class:`~sessiontree.session.Session`.

A turn appends the prompt, then asks the provider for a response (the request is the
context sessiontree computes for the session: :mod:`sessiontree.agent.request`), runs the
tool calls it makes through the toolbox, records each result as the client does (parallel
calls each on its own call, in the order they finish), and asks again until the model
stops calling tools; the turn end is then written and fsynced. Ctrl+C (the ``cancel``
event) is recorded as the client records an interruption; near the model's context
limit the conversation is compacted first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from sessiontree.agent.provider import Provider
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout

JsonDict = dict[str, Any]


class ToolOutcomeLike(Protocol):
    """What a tool call gave (``agent.tools.ToolOutcome``)."""

    @property
    def content(self) -> str | list[JsonDict]: ...
    @property
    def tool_use_result(self) -> Any: ...
    @property
    def is_error(self) -> bool: ...


class ToolboxLike(Protocol):
    """The tools a turn runs (``agent.tools.Toolbox``)."""

    def schemas(self) -> list[JsonDict]: ...

    def run(
        self,
        name: str,
        tool_input: JsonDict,
        *,
        tool_use_id: str,
        cancel: threading.Event | None = None,
    ) -> ToolOutcomeLike: ...


class MemoryLike(Protocol):
    """The project's memory (``agent.memory.Memory``)."""

    def reminder(self) -> str: ...


@dataclass
class TurnEvents:
    """Callbacks a face draws with; all optional."""

    on_text: Callable[[str], None] | None = None
    on_tool_call: Callable[[str, JsonDict], None] | None = None
    on_tool_result: Callable[[str, ToolOutcomeLike], None] | None = None
    on_notice: Callable[[str], None] | None = None


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended: its prompt, the final answer's text, whether it was interrupted,
    how many responses and tool calls it took."""

    prompt_uuid: str
    text: str
    interrupted: bool = False
    responses: int = 0
    tool_calls: int = 0
    compacted: bool = False


@dataclass(frozen=True)
class RewindResult:
    """What a rewind did: the prompt's text (back in the input for editing), whether the
    conversation and the code were rewound, and the files the code restore changed."""

    prompt_text: str
    conversation: bool
    code: bool
    files_changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Usage:
    """Tokens and cost of this session's API responses (each counted once)."""

    responses: int
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    #: USD; None when a model's price is unknown.
    cost: float | None


class AgentHost:
    """Runs turns and the session's commands; :attr:`session` is the one being written
    (``/clear`` and ``/fork`` replace it)."""

    def __init__(
        self,
        session: Session,
        provider: Provider,
        toolbox: ToolboxLike,
        *,
        model: str,
        layout: Layout,
        memory: MemoryLike | None = None,
    ) -> None:
        self.session = session
        self.provider = provider
        self.toolbox = toolbox
        self.model = model
        self.layout = layout
        self.memory = memory

    def turn(
        self,
        prompt: str,
        *,
        pastes: Mapping[int, str] | None = None,
        events: TurnEvents | None = None,
        cancel: threading.Event | None = None,
    ) -> TurnResult:
        raise NotImplementedError

    def compact(self, instructions: str | None = None) -> None:
        raise NotImplementedError

    def summarize(self, prompt_uuid: str, *, direction: Literal["from", "up_to"]) -> None:
        raise NotImplementedError

    def rewind(self, prompt_uuid: str, *, conversation: bool, code: bool) -> RewindResult:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def fork(self) -> None:
        raise NotImplementedError

    def rename(self, title: str) -> None:
        raise NotImplementedError

    def cost(self) -> Usage:
        raise NotImplementedError
