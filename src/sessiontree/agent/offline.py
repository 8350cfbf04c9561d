"""A deterministic provider that needs no key: it scripts its answers from directives.

What ``chat`` uses when no ``ANTHROPIC_API_KEY`` is set, and what tests and demos drive.
It understands the directives of the scripted Messages API stand-in the interop tests run
the real client against (``realclient/mock_api.py``), so one scenario plays the same
through the real client, through ``chat --provider anthropic`` against that stand-in, and
through ``chat --provider offline``. In the newest prompt the user typed:

* ``[[WRITE path|content]]``, ``[[READ path]]``, ``[[EDIT path|old|new]]``,
  ``[[BASH command]]``, ``[[BIG n]]`` (Bash printing about n bytes): one tool call per
  response, in order (``\\n`` in a text is a newline);
* ``[[PAR READ a ;; EDIT b|x|y ;; BASH c]]``: several calls in one response;
* after the last directive: ``Done with N steps.``; with none, an echo of the prompt.

A compaction request gets a ``<summary>``, a title request a small JSON title. Ids come
from a hash of the request, so the same conversation gets the same answer.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sessiontree.agent.provider import Interrupted, JsonDict, ModelRequest, ModelResponse

#: What the chat's ``/help`` says of the directives, when this provider answers.
DIRECTIVE_HELP: tuple[str, ...] = (
    "offline provider (no API key): it answers from directives in your prompt, one tool"
    " call per response, in order, then says Done with N steps (with none it echoes):",
    "  [[WRITE path|text]]       write a file (\\n in text is a newline)",
    "  [[READ path]]             read a file",
    "  [[EDIT path|old|new]]     replace old with new in a file",
    "  [[BASH command]]          run a command",
    "  [[BIG n]]                 a command printing about n bytes",
    "  [[PAR READ a ;; BASH b]]  several calls in one response",
)

_DIRECTIVE = re.compile(r"\[\[(\w+)\s+(.*?)\]\]", re.S)
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)

#: What the offline provider says its model is, whatever the request named.
OFFLINE_STOP = "end_turn"


@dataclass(frozen=True)
class Directive:
    """One ``[[NAME argument]]`` of a prompt."""

    name: str
    argument: str


def parse_directives(text: str) -> list[list[Directive]]:
    """The steps a prompt asks for, one list of calls per response (``PAR`` makes one
    step of several calls)."""
    steps: list[list[Directive]] = []
    for name, argument in _DIRECTIVE.findall(text):
        if name == "PAR":
            parts = [part.strip().partition(" ") for part in argument.split(";;")]
            steps.append([Directive(n, a) for n, _, a in parts if n])
        else:
            steps.append([Directive(name, argument)])
    return steps


def _blocks(message: JsonDict) -> list[JsonDict]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _user_text(message: JsonDict) -> str:
    return "\n".join(str(b.get("text", "")) for b in _blocks(message) if b.get("type") == "text")


def _is_prompt(message: JsonDict) -> bool:
    """A user message with text the user typed: not only tool results or reminders."""
    if message.get("role") != "user":
        return False
    blocks = _blocks(message)
    if any(b.get("type") == "tool_result" for b in blocks):
        return False
    return any(
        b.get("type") == "text" and not str(b.get("text", "")).lstrip().startswith("<system-")
        for b in blocks
    )


def _system_text(request: ModelRequest) -> str:
    return " ".join(str(block.get("text", "")) for block in request.system)


def request_kind(request: ModelRequest) -> str:
    """``compact``, ``title`` or ``main``: what the request asks for (the stand-in's rule)."""
    messages = request.messages
    last = _user_text(messages[-1]) if messages and messages[-1].get("role") == "user" else ""
    lowered = last.lower()
    if "summary" in lowered and (
        "CRITICAL: Respond with TEXT ONLY" in last or "create a detailed summary" in lowered
    ):
        return "compact"
    system = _system_text(request).lower()
    if not request.tools and ("title" in system or "topic" in system):
        return "title"
    return "main"


def _tool(request: ModelRequest, *names: str) -> str | None:
    offered = {str(t.get("name")) for t in request.tools}
    return next((name for name in names if name in offered), None)


def _call(request: ModelRequest, directive: Directive) -> tuple[str, str, JsonDict] | str:
    """(intro text, tool name, input) for a directive, or the text saying it cannot."""
    arg = directive.argument
    if directive.name == "WRITE":
        path, _, content = arg.partition("|")
        return (
            "Writing.",
            "Write",
            {"file_path": path.strip(), "content": content.replace("\\n", "\n")},
        )
    if directive.name == "EDIT":
        parts = [x.replace("\\n", "\n") for x in arg.split("|")]
        if len(parts) != 3:
            return f"EDIT needs path|old|new, not {arg!r}."
        path, old, new = parts
        return "Editing.", "Edit", {"file_path": path.strip(), "old_string": old, "new_string": new}
    if directive.name == "READ":
        return "Reading.", "Read", {"file_path": arg.strip()}
    if directive.name == "BASH":
        return "Running.", "Bash", {"command": arg.strip(), "description": "run command"}
    if directive.name == "BIG":
        try:
            lines = max(1, int(arg.strip()) // 50)
        except ValueError:
            return f"BIG needs a number, not {arg!r}."
        command = f"yes 'big output line padded to fifty bytes 0123456' | head -n {lines}"
        return "Printing.", "Bash", {"command": command, "description": "print big output"}
    return f"Unknown directive {directive.name}"


def plan_response(request: ModelRequest) -> list[JsonDict]:
    """The content blocks of the answer (tool ids left empty: :func:`_with_ids` fills
    them)."""
    kind = request_kind(request)
    messages = request.messages
    if kind == "compact":
        return [
            _text(
                "<analysis>offline analysis</analysis>\n<summary>\n1. Primary Request and "
                f"Intent: OFFLINE SUMMARY of {len(messages)} messages.\n</summary>"
            )
        ]
    if kind == "title":
        if "json" in _system_text(request).lower():
            return [_text(json.dumps({"title": "Offline session title"}))]
        return [_text("Offline session title")]
    at = next((i for i in range(len(messages) - 1, -1, -1) if _is_prompt(messages[i])), None)
    if at is None:
        return [_text("Echo: (no prompt)")]
    prompt = _user_text(messages[at])
    steps = parse_directives(prompt)
    if not steps:
        return [_text("Echo: " + _REMINDER.sub("", prompt).strip()[-120:])]
    done = sum(
        1
        for message in messages[at + 1 :]
        if message.get("role") == "assistant"
        for block in _blocks(message)
        if block.get("type") == "tool_use"
    )
    seen = 0
    for step in steps:
        if done < seen + len(step):
            return _step(request, step)
        seen += len(step)
    return [_text(f"Done with {len(steps)} steps.")]


def _step(request: ModelRequest, step: Sequence[Directive]) -> list[JsonDict]:
    calls: list[tuple[str, str, JsonDict]] = []
    for directive in step:
        call = _call(request, directive)
        if isinstance(call, str):
            return [_text(call)]
        intro, name, tool_input = call
        if _tool(request, name) is None:
            return [_text(f"I have no {name} tool here.")]
        calls.append((intro, name, tool_input))
    uses = [{"type": "tool_use", "id": "", "name": n, "input": i} for _, n, i in calls]
    if len(calls) == 1:
        return [_text(calls[0][0]), *uses]
    return [_text(f"Doing {len(calls)} things at once."), *uses]


def _text(text: str) -> JsonDict:
    return {"type": "text", "text": text}


def _with_ids(blocks: list[JsonDict], seed: str) -> list[JsonDict]:
    out = []
    for n, block in enumerate(blocks):
        if block.get("type") == "tool_use":
            digest = hashlib.sha256(f"{seed}/{n}".encode()).hexdigest()
            block = {**block, "id": f"toolu_{digest[:24]}"}
        out.append(block)
    return out


class OfflineProvider:
    """Answers from the prompt's directives; no network. ``chunk``: how many characters
    of text go to ``on_text`` at a time (a stream, so a face shows it arriving)."""

    name = "offline"

    def __init__(self, *, chunk: int = 16) -> None:
        self.chunk = chunk

    def respond(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelResponse:
        body = json.dumps([request.model, request.messages], sort_keys=True, default=str)
        seed = hashlib.sha256(body.encode()).hexdigest()
        content = _with_ids(plan_response(request), seed)
        streamed: list[JsonDict] = []
        message_id = f"msg_{seed[:24]}"

        def stopped(partial: list[JsonDict]) -> Interrupted:
            kept = [b for b in partial if b.get("type") != "tool_use"]
            return Interrupted(kept, message_id=message_id, model=request.model)

        for block in content:
            if cancel is not None and cancel.is_set():
                raise stopped(streamed)
            if block.get("type") == "text" and on_text is not None:
                text = str(block["text"])
                for at in range(0, len(text), self.chunk):
                    if cancel is not None and cancel.is_set():
                        raise stopped([*streamed, _text(text[:at])] if at else streamed)
                    on_text(text[at : at + self.chunk])
            streamed.append(block)
        stop = "tool_use" if any(b.get("type") == "tool_use" for b in content) else OFFLINE_STOP
        usage = {
            "input_tokens": max(1, len(body) // 4),
            "output_tokens": max(1, len(json.dumps(content)) // 4),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        return ModelResponse(message_id, request.model, content, stop, usage)
