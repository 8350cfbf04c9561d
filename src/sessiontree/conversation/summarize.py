"""Compaction: ``/compact`` (:func:`plan_compact`) and the partial kind, "Summarize from
here" and "Summarize up to here" of ``/rewind`` (:func:`plan_summarize`).

A full compaction (fixture 06) writes a ``compact_boundary`` that starts a new root
(``logicalParentUuid`` = the end of the active path), the summary under it, and a
``last-prompt`` bookmark naming the summary; the originals stay on disk.

What the client writes (fixtures 07 and 08 of client 2.1.328), around a prompt P on the
active path:

- **from P**: everything from P to the leaf is summarized; what came before P is kept
  verbatim and re-linked *after the boundary* (the anchor), then the summary follows.
  The conversation goes on after the summary.
- **up to P**: everything before P is summarized; P to the leaf is kept verbatim and
  re-linked *after the summary* (the anchor). The conversation goes on after the kept
  tail.

Both write a ``compact_boundary`` (a new root, ``isMeta: false``, ``logicalParentUuid`` =
the record just before P, ``messagesSummarized``, ``preservedSegment`` head/anchor/tail)
and the ``isCompactSummary`` user record with ``summarizeMetadata``; the kept records are
not re-written and nothing is removed. ``messagesSummarized`` counts the chain records
summarized (18 in 07, 17 in 08). The summary text carries neither the "continue without
asking" paragraph nor the kept-verbatim note of a full ``/compact``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.model.builders import (
    LOCAL_COMMAND_CAVEAT,
    Envelope,
    JsonDict,
    PreservedSegment,
    build_compact_boundary,
    build_compact_summary,
    build_last_prompt,
    build_user_text,
    format_command,
    format_compact_summary,
)
from sessiontree.model.records import Record, prompt_index

Direction = Literal["from", "up_to"]


@dataclass(frozen=True)
class SummarizePlan:
    """The two records a partial compaction appends, and what they do."""

    session_id: str
    prompt_uuid: str
    direction: Direction
    summarized: tuple[str, ...]
    preserved: tuple[str, ...]
    boundary_uuid: str
    summary_uuid: str
    #: The end of the active path once the records are written (where the next one hangs).
    leaf_uuid: str
    records: tuple[JsonDict, ...]


@dataclass(frozen=True)
class CompactPlan:
    """The records a full compaction appends: the boundary, the summary, then the
    ``last-prompt`` bookmark (or, for a typed ``/compact``, the command's records)."""

    session_id: str
    boundary_uuid: str
    summary_uuid: str
    records: tuple[JsonDict, ...]
    #: The end of the active path once the records are written: the summary, or the
    #: command's output after a typed ``/compact``.
    tip: str


def plan_compact(
    summary: str,
    *,
    tip: str,
    env: Envelope,
    transcript_path: str,
    stamp: Callable[[], str],
    new_id: Callable[[], str],
    prompt_index: int,
    last_prompt: str,
    tools_used: Sequence[str] = (),
    turn_index: int | None = None,
    preserved_uuids: Sequence[str] = (),
    typed: bool = False,
    pre_tokens: int = 0,
    post_tokens: int = 0,
    trigger: Literal["manual", "auto"] = "manual",
    cumulative_dropped_tokens: int = 0,
    running_prompt: str | None = None,
    prompt_id: str | None = None,
) -> CompactPlan:
    """Full compaction of the conversation that ends at ``tip``, as ``/compact`` writes
    it: a boundary (a new root whose ``logicalParentUuid`` is ``tip``) and the summary
    under it (``/compact`` is a prompt of its own: a new prompt id, fixture 06).

    Then, by default, the ``last-prompt`` bookmark (``last_prompt``: the text of the
    prompt in progress). ``typed``: as the interactive client writes a ``/compact`` the
    user typed: ``preserved_uuids`` (the last response and its turn end) are kept as the
    boundary's preserved segment, and the command's caveat, the command and its output
    follow the summary instead of a bookmark. ``stamp`` gives each timestamp (one for the
    boundary and summary, one per command record).

    ``trigger="auto"``: as the client compacts by itself when the context nears the
    limit, before a request of the turn whose prompt is ``running_prompt`` (the summary
    names it); ``preserved_uuids`` are then the last response and what followed it,
    ``cumulative_dropped_tokens`` what the session's compactions have dropped, this one
    included; ``prompt_id``: that turn's (the summary is written under it, as the client
    writes it; else the summary is a prompt of its own)."""
    boundary, summary_uuid = new_id(), new_id()
    prompt_id = prompt_id or new_id()
    timestamp = stamp()
    text = format_compact_summary(
        summary,
        transcript_path=transcript_path,
        tools_used=tools_used,
        has_preserved_messages=bool(preserved_uuids),
    )
    preserved = (
        PreservedSegment(preserved_uuids[0], summary_uuid, tip, tuple(preserved_uuids))
        if preserved_uuids
        else None
    )
    records = [
        build_compact_boundary(
            env,
            uuid=boundary,
            logical_parent_uuid=tip,
            timestamp=timestamp,
            pre_tokens=pre_tokens,
            post_tokens=post_tokens,
            preserved=preserved,
            trigger=trigger,
            cumulative_dropped_tokens=cumulative_dropped_tokens,
        ),
        build_compact_summary(
            env,
            uuid=summary_uuid,
            boundary_uuid=boundary,
            prompt_id=prompt_id,
            text=text,
            timestamp=timestamp,
            prompt_index=prompt_index,
            turn_index=turn_index,
            summarized_turn_prompts=(running_prompt,) if running_prompt else (),
        ),
    ]
    end = summary_uuid
    if typed:
        stdout = (
            "<local-command-stdout>Compacted (ctrl+o to see full summary)</local-command-stdout>"
        )
        command = format_command("compact")
        for content, meta in ((LOCAL_COMMAND_CAVEAT, True), (command, False), (stdout, False)):
            uuid = new_id()
            records.append(
                build_user_text(
                    env,
                    uuid=uuid,
                    parent_uuid=end,
                    prompt_id=prompt_id,
                    content=content,
                    timestamp=stamp(),
                    is_meta=meta,
                )
            )
            end = uuid
    else:
        records.append(build_last_prompt(env.session_id, last_prompt=last_prompt, leaf_uuid=end))
    return CompactPlan(env.session_id, boundary, summary_uuid, tuple(records), end)


def _is_boundary(record: Record) -> bool:
    return record.type == "system" and record.subtype == "compact_boundary"


def tools_used(records: list[Record]) -> list[str]:
    """Names of the tools the assistant called in these records."""
    names: set[str] = set()
    for record in records:
        if record.type != "assistant":
            continue
        content = record.content
        if isinstance(content, list):
            names.update(
                str(block["name"])
                for block in content
                if block.get("type") == "tool_use" and isinstance(block.get("name"), str)
            )
    return sorted(names)


def plan_summarize(
    transcript: Transcript,
    prompt_uuid: str,
    summary: str,
    *,
    direction: Direction,
    env: Envelope,
    timestamp: str,
    new_id: Callable[[], str],
    prompt_id: str | None = None,
) -> SummarizePlan:
    """The boundary and summary that summarize the active path from / up to a prompt."""
    path = [r for r in transcript.records(transcript.active_path) if not _is_boundary(r)]
    uuids = [str(r.uuid) for r in path]
    prompt = transcript.record(prompt_uuid)
    if prompt is None or not prompt.is_prompt or prompt_uuid not in uuids:
        raise Refused(f"{prompt_uuid} is not a prompt on the active path")
    at = uuids.index(prompt_uuid)
    before, after = uuids[:at], uuids[at:]
    if direction == "from":
        summarized, preserved = after, before
    else:
        summarized, preserved = before, after
        if not summarized:
            raise Refused("nothing comes before this prompt: there is nothing to summarize")
    boundary_uuid, summary_uuid = new_id(), new_id()
    anchor = boundary_uuid if direction == "from" else summary_uuid
    segment = (
        PreservedSegment(preserved[0], anchor, preserved[-1], tuple(preserved))
        if preserved
        else None
    )
    # the summary's turn position counts the prompts of what it stands for: all of them
    # for "from", the summarized ones for "up to" (fixtures 07: 3, 08: 1)
    counted = path if direction == "from" else path[:at]
    index = prompt_index(counted)
    boundary = build_compact_boundary(
        env,
        uuid=boundary_uuid,
        logical_parent_uuid=before[-1] if before else None,
        timestamp=timestamp,
        pre_tokens=0,
        post_tokens=0,
        messages_summarized=len(summarized),
        preserved=segment,
    )
    text = format_compact_summary(
        summary,
        transcript_path=str(transcript.path),
        tools_used=tools_used(path),
        continue_directly=False,
        has_preserved_messages=False,
    )
    summary_record = build_compact_summary(
        env,
        uuid=summary_uuid,
        boundary_uuid=boundary_uuid,
        prompt_id=prompt_id or new_id(),
        text=text,
        timestamp=timestamp,
        prompt_index=index,
        direction=direction,
        messages_summarized=len(summarized),
    )
    leaf = summary_uuid if direction == "from" else preserved[-1]
    return SummarizePlan(
        session_id=transcript.session_id,
        prompt_uuid=prompt_uuid,
        direction=direction,
        summarized=tuple(summarized),
        preserved=tuple(preserved),
        boundary_uuid=boundary_uuid,
        summary_uuid=summary_uuid,
        leaf_uuid=leaf,
        records=(boundary, summary_record),
    )
