"""The request a turn sends: the system prompt, the tools, and as ``messages`` the
context sessiontree computes for the session (:mod:`sessiontree.model.context`: what the
real client would send if it resumed the session now), with the memory reminder in front.

So what the real client resumes from a session ``chat`` wrote is, by construction, what
``chat`` sent (``tests/agent/test_interop_chat.py`` checks it). The memory reminder is not
in the transcript: the client too renders it afresh at every start and sends it as the
first text of the first user message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sessiontree.agent.provider import JsonDict, ModelRequest
from sessiontree.conversation.transcript import Transcript
from sessiontree.model.context import NO_RESPONSE, build_context

#: The model's context window, and how much of it a turn keeps free (the answer's room
#: and a margin): past ``window - reserve`` the host compacts before the next prompt,
#: as the client auto-compacts.
CONTEXT_WINDOW = 200_000
CONTEXT_WINDOW_1M = 1_000_000
AUTO_COMPACT_RESERVE = 33_000

SYSTEM_PROMPT = """\
You are an AI coding agent run by sessiontree chat, a terminal host for Claude Code \
sessions. You help the user with software engineering tasks in their project.

Use the tools to read, search, write and edit files and to run shell commands; prefer \
Edit for changing part of a file and Read before editing. Several independent tool \
calls can go in one response. Be concise: the answer is shown in a terminal."""


@dataclass(frozen=True)
class Environment:
    """What the system prompt says about where the agent runs."""

    cwd: str
    platform: str
    today: str  # YYYY-MM-DD
    is_git_repo: bool = False


def build_system(env: Environment, *, model: str) -> list[JsonDict]:
    """The system prompt blocks."""
    facts = (
        f"<env>\nWorking directory: {env.cwd}\n"
        f"Is directory a git repo: {'Yes' if env.is_git_repo else 'No'}\n"
        f"Platform: {env.platform}\nToday's date: {env.today}\n</env>\n"
        f"You are powered by the model {model}."
    )
    return [{"type": "text", "text": SYSTEM_PROMPT}, {"type": "text", "text": facts}]


def session_path(transcript: Transcript, tip: str | None) -> list[str]:
    """The records the conversation that ends at ``tip`` sends: the active path resuming
    the session would send (the blocks and results of parallel calls gathered as the
    client gathers them), when ``tip`` ends it (or only the messages a compaction kept
    verbatim follow it: the summary is the tip right after an automatic one, and what it
    kept is re-linked after it); else (the session was rewound to ``tip`` and has written
    nothing since) the chain up to ``tip``."""
    if tip is None:
        return []
    path = transcript.active_path
    if tip in path:
        tree = transcript.tree
        after = path[path.index(tip) + 1 :]
        kept = set(tree.preserved)
        if not any(tree.is_message(uuid) and uuid not in kept for uuid in after):
            return path
    return transcript.tree.path_to(tip)


def session_context(
    transcript: Transcript, tip: str | None, *, before: str | None = None
) -> list[JsonDict]:
    """The messages for the conversation that ends at ``tip`` (:func:`session_path`;
    ``before``: only what comes before that record), without the placeholder reply the
    client adds on resume after a conversation that ends unanswered (the model is about
    to answer it)."""
    path = session_path(transcript, tip)
    if before is not None and before in path:
        path = path[: path.index(before)]
    messages = build_context(transcript.records(path))
    if messages and messages[-1]["role"] == "assistant":
        content = messages[-1]["content"]
        if content == [{"type": "text", "text": NO_RESPONSE}]:
            messages.pop()
    return [dict(m) for m in messages]


def with_reminder(messages: Sequence[JsonDict], reminder: str | None) -> list[JsonDict]:
    """``messages`` with ``reminder`` as the first text of the first user message."""
    out = [dict(m) for m in messages]
    if not reminder:
        return out
    block = {"type": "text", "text": reminder}
    for i, message in enumerate(out):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        rest = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out[i] = {**message, "content": [block, *(rest or [])]}
        break
    return out


def build_request(
    transcript: Transcript,
    tip: str | None,
    *,
    model: str,
    system: list[JsonDict],
    tools: list[JsonDict],
    reminder: str | None = None,
    max_tokens: int = 32000,
) -> ModelRequest:
    """The request for the next response of the session that ends at ``tip``."""
    messages = with_reminder(session_context(transcript, tip), reminder)
    return ModelRequest(
        model=model, system=system, messages=messages, tools=tools, max_tokens=max_tokens
    )


def context_window(model: str) -> int:
    """The model's context window (``[1m]`` models: a million tokens)."""
    return CONTEXT_WINDOW_1M if model.endswith("[1m]") else CONTEXT_WINDOW


def context_tokens(usage: JsonDict) -> int:
    """How big the context was for a response with this ``usage``: what it read (fresh,
    from the cache and written to it) and what it wrote."""
    return sum(
        int(usage.get(key) or 0)
        for key in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
    )


def needs_compaction(usage: JsonDict | None, *, model: str) -> bool:
    """Whether the last response's context is near the model's limit."""
    if not usage:
        return False
    return context_tokens(usage) >= context_window(model) - AUTO_COMPACT_RESERVE
