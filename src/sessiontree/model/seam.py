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

from collections.abc import Sequence

from sessiontree.model.records import CONTENT_UNREAD, BlockRef, Line, Skeleton

#: Types of records gathered into the user text between two responses.
_GATHERED = ("user", "attachment", "system")


def find_seam(lines: Sequence[Line]) -> int | None:
    """The index in ``lines`` (the records an active path's context reads, root first)
    of the seam nearest the middle of their bytes; None when there is none."""
    seams = all_seams(lines)
    if not seams:
        return None
    offsets, total = [], 0
    for line in lines:
        offsets.append(total)
        total += line.length
    return min(seams, key=lambda k: abs(2 * offsets[k] - total))


def all_seams(lines: Sequence[Line]) -> list[int]:
    """Every seam of ``lines`` (see the module's docstring), in order."""
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
            return []
        kind = skeleton.type
        message = skeleton.message
        content = message.content if message is not None else None
        if content == CONTENT_UNREAD:
            return []  # its blocks are not known
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
    # Looking back from the end: the next response and the next result.
    next_response, next_result = [n] * (n + 1), [n] * (n + 1)
    for i in range(n - 1, -1, -1):
        next_response[i] = i if responses[i] else next_response[i + 1]
        next_result[i] = i if results[i] else next_result[i + 1]

    seams: list[int] = []
    reach = -1  # the last index at which an id found before the current one is found
    last_response = -1
    last_gathered = -1
    for k in range(n):
        if (
            prompts[k]
            and k > 0
            and reach < k
            and last_response >= 0
            and last_gathered < began[last_response]
            and next_result[k + 1] >= next_response[k + 1]
            and ends_turn[last_response]
            and not _called_in(lines[last_response].skeleton, calling)
        ):
            seams.append(k)
        for key in ids[k]:
            reach = max(reach, last_at[key])
        if responses[k]:
            last_response = k
        elif gathered[k]:
            last_gathered = k
    return seams


def _called_in(response: Skeleton | None, calling: set[str]) -> bool:
    """Whether another record of ``response``'s message holds a call."""
    message = response.message if response is not None else None
    return message is not None and bool(message.id) and message.id in calling
