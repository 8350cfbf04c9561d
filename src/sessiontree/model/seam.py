"""Where the context of a long active path can be built in two parts.

:func:`~sessiontree.model.context.iter_context` carries state from record to record: the
response being merged, the user text gathered since the last response, the calls seen,
the rows that say how the path ends. A *seam* is a record at which, in a whole build,
all of that state is what a fresh build starts with, so that the part before it and the
part from it can be built apart (on two cores) and their messages put end to end. Found
from the lines' skeletons alone, before any record is decoded: a user record that is no
tool result, such that

- the records read for the context between it and the first record of the last
  response before it are neither user text, attachments nor system text (nothing is
  gathered when it comes, and nothing sits inside that response's message);
- that response has a text block (its message is the last of the part before) and no
  call in any of its records (nothing waits for a result the seam's message would carry);
- no ``message.id`` and no call id is found on both sides (no response is merged across
  it, no call is seen twice across it);
- up to the next response, no tool result follows it (its message answers no call).

``tests/model/test_seam.py`` builds every seam of generated paths both ways.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sessiontree.model.records import CONTENT_UNREAD, BlockRef, Line, Skeleton

#: Types of records gathered into the user text between two responses.
_GATHERED = ("user", "attachment", "system")


def find_seam(lines: Sequence[Line]) -> int | None:
    """The index in ``lines`` (the records an active path's context reads, root first)
    of the seam nearest the middle of their bytes (the first of two as near); None when
    there is none. The seams are looked for only up to the first one past the middle."""
    offsets, total = [], 0
    for line in lines:
        offsets.append(total)
        total += line.length
    best: int | None = None
    for seam in _iter_seams(lines):
        if best is None or abs(2 * offsets[seam] - total) < abs(2 * offsets[best] - total):
            best = seam
        if 2 * offsets[seam] >= total:
            break  # every later seam is farther from the middle
    return best


def all_seams(lines: Sequence[Line]) -> list[int]:
    """Every seam of ``lines`` (see the module's docstring), in order."""
    return list(_iter_seams(lines))


def _iter_seams(lines: Sequence[Line]) -> Iterator[int]:
    """:func:`all_seams`, each given out as it is found."""
    n = len(lines)
    # One pass over the skeletons: what each record is, and the ids it holds.
    responses: list[bool] = [False] * n  # an assistant record the context reads
    gathered: list[bool] = [False] * n  # user text, an attachment, system text
    prompts: list[bool] = [False] * n  # a user record with no tool result
    results: list[bool] = [False] * n  # a user record with a tool result
    ids: list[tuple[str, ...]] = [()] * n  # its response id (first), its call ids
    calling: set[str] = set()  # responses with a call in any of their records
    ends_turn: list[bool] = [False] * n  # a response with a text block and no call
    last_at: dict[str, int] = {}
    began: list[int] = list(range(n))  # of a response: where the first of its records is
    first_at: dict[str, int] = {}
    for i, line in enumerate(lines):
        skeleton = line.skeleton
        if skeleton is None:
            return
        kind = skeleton.type
        message = skeleton.message
        content = message.content if message is not None else None
        if content == CONTENT_UNREAD:
            return  # its blocks are not known
        types = [b.type for b in content] if isinstance(content, list) else []
        if kind == "assistant" and skeleton.isApiErrorMessage is not True:
            responses[i] = True
            calls = (
                [
                    b.id
                    for b in content or ()
                    if isinstance(b, BlockRef) and b.type == "tool_use" and isinstance(b.id, str)
                ]
                if "tool_use" in types
                else []
            )
            ends_turn[i] = "text" in types and not calls
            response = message.id if message is not None and message.id else None
            if response is not None:
                began[i] = first_at.setdefault(response, i)
                if calls:
                    calling.add(response)
            held = (f"r{response}",) if response is not None else ()
            ids[i] = held + tuple(f"c{c}" for c in calls)
        else:
            if kind == "user":
                results[i] = "tool_result" in types
                prompts[i] = not results[i]
            if kind in _GATHERED:
                gathered[i] = True
            if "tool_use" in types:  # calls in an API error: seen, not answered
                ids[i] = tuple(
                    f"c{b.id}"
                    for b in content or ()
                    if isinstance(b, BlockRef) and b.type == "tool_use" and isinstance(b.id, str)
                )
        for key in ids[i]:
            last_at[key] = i

    reach = -1  # the last index at which an id found before the current one is found
    last_response = -1
    last_gathered = -1
    event = 0  # from k + 1 on, the first response or tool result (n: none), when asked
    for k in range(n):
        if (
            prompts[k]
            and k > 0
            and reach < k
            and last_response >= 0
            and last_gathered < began[last_response]
            and ends_turn[last_response]
            and not _called_in(lines[last_response].skeleton, calling)
        ):
            if event <= k:  # (it only moves on: the whole loop reads each record once)
                event = k + 1
                while event < n and not (results[event] or responses[event]):
                    event += 1
            if event == n or not results[event]:  # up to the next response, no result
                yield k
        for key in ids[k]:
            at = last_at[key]
            if at > reach:
                reach = at
        if responses[k]:
            last_response = k
        elif gathered[k]:
            last_gathered = k


def _called_in(response: Skeleton | None, calling: set[str]) -> bool:
    """Whether another record of ``response``'s message holds a call."""
    message = response.message if response is not None else None
    return message is not None and bool(message.id) and message.id in calling
