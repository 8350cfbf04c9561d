"""Compaction: the ``compact_boundary`` that starts a new root, and the summary after it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from sessiontree.model.builders.envelope import Envelope, JsonDict, _echo, _tail

COMPACT_BOUNDARY_TEXT = "Conversation compacted"
LOCAL_COMMAND_CAVEAT = (
    "<local-command-caveat>The command below was run directly in Claude Code, not sent to "
    "you as a request, and its output goes straight to the user. It's recorded here as "
    "context for later messages.</local-command-caveat>"
)


@dataclass(frozen=True)
class PreservedSegment:
    """Kept messages of a compaction: ``head``..``tail`` are re-linked after ``anchor``."""

    head_uuid: str
    anchor_uuid: str
    tail_uuid: str
    uuids: tuple[str, ...]


def build_compact_boundary(
    env: Envelope,
    *,
    uuid: str,
    logical_parent_uuid: str | None,
    timestamp: str,
    pre_tokens: int,
    post_tokens: int,
    trigger: Literal["manual", "auto"] = "manual",
    duration_ms: int = 0,
    messages_summarized: int | None = None,
    preserved: PreservedSegment | None = None,
    cumulative_dropped_tokens: int = 0,
) -> JsonDict:
    """``system/compact_boundary``: a new root (``parentUuid`` null) after compaction.

    ``trigger="auto"``: the client compacted by itself (the context near the limit); it
    then also writes ``runningTurnPrompt: {}``, and ``cumulative_dropped_tokens`` (what
    the session's compactions have dropped so far, this one's included).

    ``logical_parent_uuid`` is the last record before compaction (None: nothing came
    before, and the key is left out as the client does); the summarized history stays on
    disk behind it. With ``preserved``, the kept messages are not re-written: readers
    re-link ``head`` after ``anchor`` (the summary, or the boundary itself). A partial
    compaction ("summarize from / up to here") passes ``messages_summarized`` and is
    written with ``isMeta: false``, as the client writes it.
    """
    partial = messages_summarized is not None
    metadata: JsonDict = {"trigger": trigger, "preTokens": pre_tokens}
    if partial:
        # "summarize from / up to here" writes its metadata in this order (fixture 07)
        metadata.update(
            {
                "messagesSummarized": messages_summarized,
                "preCompactOrganizationsCoverStart": False,
                "durationMs": duration_ms,
                "postTokens": post_tokens,
                "cumulativeDroppedTokens": cumulative_dropped_tokens,
            }
        )
    else:
        metadata.update(
            {
                "postTokens": post_tokens,
                "cumulativeDroppedTokens": cumulative_dropped_tokens,
                "durationMs": duration_ms,
            }
        )
    if preserved is not None:
        metadata["preservedSegment"] = {
            "headUuid": preserved.head_uuid,
            "anchorUuid": preserved.anchor_uuid,
            "tailUuid": preserved.tail_uuid,
        }
        metadata["preservedMessages"] = {
            "anchorUuid": preserved.anchor_uuid,
            "uuids": list(preserved.uuids),
            "allUuids": list(preserved.uuids),
        }
    if not partial:
        metadata["preCompactOrganizationsCoverStart"] = False
    if trigger == "auto":
        metadata["runningTurnPrompt"] = {}
    record: JsonDict = {"parentUuid": None}
    if logical_parent_uuid is not None:
        record["logicalParentUuid"] = logical_parent_uuid
    record.update(
        {
            "isSidechain": env.is_sidechain,
            "type": "system",
            "subtype": "compact_boundary",
            "content": COMPACT_BOUNDARY_TEXT,
        }
    )
    if partial:
        record.update({"isMeta": False, "timestamp": timestamp, "uuid": uuid})
        record.update({"level": "info", "compactMetadata": metadata})
    else:
        record.update({"level": "info", "compactMetadata": metadata})
        record.update({"uuid": uuid, "timestamp": timestamp})
    return {**record, **_tail(env)}


def format_compact_summary(
    summary: str,
    *,
    transcript_path: str,
    tools_used: Iterable[str],
    continue_directly: bool = True,
    has_preserved_messages: bool = True,
) -> str:
    """The text of the summary message the client sends after compaction."""
    tools = ", ".join(sorted(set(tools_used)))
    text = (
        "This session is being continued from a previous conversation that ran out of "
        "context. The summary below covers the earlier portion of the conversation.\n\n"
        f"<system-reminder>\n<tools-used-before-summary>{tools}</tools-used-before-summary>\n"
        f"</system-reminder>\nSummary:\n{summary}\n\n"
        "If you need specific details from before compaction (like exact code snippets, "
        "error messages, or content you generated), read the full transcript at: "
        f"{transcript_path}"
    )
    if continue_directly:
        text += (
            "\nContinue the conversation from where it left off without asking the user any "
            "further questions. Resume directly \u2014 do not acknowledge the summary, do not "
            'recap what was happening, do not preface with "I\'ll continue" or similar. '
            "Pick up the last task as if the break never happened."
        )
    if has_preserved_messages:
        text += (
            "\n\nThe messages after this summary are the most recent messages from before "
            "compaction, kept verbatim. The summary was written without seeing them, so "
            "something it says has not happened yet may already have happened in them."
        )
    return text


def build_compact_summary(
    env: Envelope,
    *,
    uuid: str,
    boundary_uuid: str,
    prompt_id: str,
    text: str,
    timestamp: str,
    prompt_index: int,
    turn_index: int | None = None,
    direction: Literal["from", "up_to"] | None = None,
    messages_summarized: int | None = None,
    summarized_turn_prompts: Sequence[str] = (),
) -> JsonDict:
    """The ``isCompactSummary`` user record, child of its boundary.

    Full ``/compact`` writes it ``isVisibleInTranscriptOnly``; a partial "summarize from
    here / up to here" (``direction``) writes ``summarizeMetadata`` instead. An automatic
    compaction names the prompt of the turn it ran in (``summarized_turn_prompts``).
    """
    record: JsonDict = {
        "parentUuid": boundary_uuid,
        "isSidechain": env.is_sidechain,
        "promptId": prompt_id,
        "type": "user",
        "message": {"role": "user", "content": text},
    }
    if direction is None:
        record["isVisibleInTranscriptOnly"] = True
        record["isCompactSummary"] = True
    else:
        record["isCompactSummary"] = True
        record["summarizeMetadata"] = {
            "messagesSummarized": messages_summarized or 0,
            "direction": direction,
        }
    record.update(
        {
            "uuid": uuid,
            "timestamp": timestamp,
            "turnPosition": {
                "promptIndex": prompt_index,
                "turnIndex": prompt_index if turn_index is None else turn_index,
            },
        }
    )
    record.update(_echo(env, direction is None))
    if summarized_turn_prompts:
        record["summarizedTurnPromptUuids"] = list(summarized_turn_prompts)
    return {**record, **_tail(env)}
