"""One response's tool calls: run through the toolbox, each result recorded as the client
records it.

* Calls next to each other in one response that the toolbox says may run side by side
  (:meth:`ToolboxLike.concurrency_safe`: reads, searches, commands that only look) run at
  once; each result hangs on its own call and is written in the order they finish
  (:meth:`Session.append_tool_result`); the other calls run one after another.
* Each result is written as the tools say the client writes it
  (:func:`sessiontree.agent.tools.record_outcome`: a plain Bash output over 30,000 bytes
  saved to ``tool-results/``, the model given the ``<persisted-output>`` preview).
* Ctrl+C (``cancel``): a command that was running (:data:`STOPPABLE_TOOLS`) and each call
  not yet run get the result client 2.1.328 gives a call the user stopped
  (:data:`REJECTED`, ``toolUseResult`` :data:`REJECTED_RESULT`); a tool that finished
  keeps its result.
* A tool that raises is the model's to read (``<tool_use_error>``), not a crash.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Protocol, cast

from sessiontree.agent.tools import ToolOutcome, record_outcome
from sessiontree.session.session import Session

JsonDict = dict[str, Any]

#: The result of each call the user stopped (client 2.1.328), and its ``toolUseResult``.
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. "
    "if it was a file edit, the new_string was NOT written to the file). STOP what you are "
    "doing and wait for the user to tell you how to proceed."
)
REJECTED_RESULT = "User rejected tool use"

#: Tools Ctrl+C stops while they run (a command is killed); the others finish, and their
#: result is kept.
STOPPABLE_TOOLS = frozenset({"Bash"})


class ToolOutcomeLike(Protocol):
    """What a tool call gave (``agent.tools.ToolOutcome``)."""

    @property
    def content(self) -> str | list[JsonDict]: ...
    @property
    def tool_use_result(self) -> Any: ...
    @property
    def is_error(self) -> bool: ...


class ToolboxLike(Protocol):
    """The tools a turn runs (``agent.tools.Toolbox``). Its ``session`` is the one its
    Write and Edit checkpoint through; the host sets it when ``/clear``, ``/fork`` or
    ``/resume`` changes the session."""

    session: Session

    def schemas(self) -> list[JsonDict]: ...

    def concurrency_safe(self, name: str, tool_input: JsonDict) -> bool:
        """Whether the call may run beside the others of its response."""
        ...

    def run(
        self,
        name: str,
        tool_input: JsonDict,
        *,
        tool_use_id: str,
        cancel: threading.Event | None = None,
    ) -> ToolOutcomeLike: ...


@dataclass(frozen=True)
class Outcome:
    """A tool outcome the engine makes itself (an error, a stopped call)."""

    content: str | list[JsonDict]
    tool_use_result: Any
    is_error: bool = True


STOPPED = Outcome(REJECTED, REJECTED_RESULT)

OnCall = Callable[[str, JsonDict], None]
OnResult = Callable[[str, ToolOutcomeLike], None]


def run_calls(
    session: Session,
    toolbox: ToolboxLike,
    calls: list[JsonDict],
    *,
    cancel: threading.Event | None = None,
    on_call: OnCall | None = None,
    on_result: OnResult | None = None,
) -> bool:
    """Run one response's ``calls`` and record their results in ``session``; True when
    ``cancel`` stopped them (the calls left answered as stopped)."""
    at = 0
    while at < len(calls):
        if cancel is not None and cancel.is_set():
            for call in calls[at:]:
                record_result(session, call, STOPPED, on_result)
            return True
        group = [calls[at]]
        if _safe(toolbox, calls[at]):
            while at + len(group) < len(calls) and _safe(toolbox, calls[at + len(group)]):
                group.append(calls[at + len(group)])
        for call in group:
            if on_call is not None:
                on_call(str(call.get("name")), dict(call.get("input") or {}))
        if len(group) == 1:
            record_result(session, group[0], run_call(toolbox, group[0], cancel), on_result)
        else:
            with ThreadPoolExecutor(max_workers=min(len(group), 8)) as pool:
                running: dict[Future[ToolOutcomeLike], JsonDict] = {
                    pool.submit(run_call, toolbox, call, cancel): call for call in group
                }
                for done in as_completed(running):  # in the order they finish
                    record_result(session, running[done], done.result(), on_result)
        at += len(group)
    return cancel is not None and cancel.is_set()


def _safe(toolbox: ToolboxLike, call: JsonDict) -> bool:
    tool_input = call.get("input")
    return toolbox.concurrency_safe(
        str(call.get("name")), tool_input if isinstance(tool_input, dict) else {}
    )


def run_call(
    toolbox: ToolboxLike, call: JsonDict, cancel: threading.Event | None
) -> ToolOutcomeLike:
    """One call's outcome."""
    name, tool_id = str(call.get("name")), str(call.get("id"))
    tool_input = call.get("input")
    if not isinstance(tool_input, dict):
        tool_input = {}
    try:
        outcome = toolbox.run(name, tool_input, tool_use_id=tool_id, cancel=cancel)
    except Exception as exc:  # a tool's failure is the model's to read, not a crash
        message = str(exc) or type(exc).__name__
        return Outcome(f"<tool_use_error>{message}</tool_use_error>", f"Error: {message}")
    if name in STOPPABLE_TOOLS and cancel is not None and cancel.is_set():
        return STOPPED  # the command was stopped: as the client says it
    return outcome


def record_result(
    session: Session, call: JsonDict, outcome: ToolOutcomeLike, on_result: OnResult | None
) -> None:
    """Append one call's result, hung on its call, as the tools say the client records
    it (:func:`sessiontree.agent.tools.record_outcome`: a plain Bash output over 30,000
    bytes saved to ``tool-results/``)."""
    tool_id = str(call.get("id"))
    record_outcome(session, tool_id, str(call.get("name")), cast(ToolOutcome, outcome))
    if on_result is not None:
        on_result(tool_id, outcome)
