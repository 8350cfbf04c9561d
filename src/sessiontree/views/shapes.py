"""What the read commands show, as plain data: the ``--json`` shapes of CLI.md.

Pure over a :class:`~sessiontree.conversation.transcript.Transcript` (it decodes records lazily but
writes nothing); the CLI prints these dicts as JSON or renders them for people.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Generator, Iterable, Iterator
from typing import Any, TypeVar

import msgspec
import orjson

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.branches import newest_leaves
from sessiontree.model.context import Message
from sessiontree.model.records import Record, one_line
from sessiontree.storage.layout import utf8_name

SNIPPET = 200


def role_of(record: Record) -> str:
    if record.type in ("user", "assistant"):
        return record.type
    if record.type == "attachment":
        role = record.get("renderedRole")
        return role if isinstance(role, str) else "system"
    return "system"


def is_shown(record: Record) -> bool:
    """Records a reader of the conversation wants: prompts, replies, results, boundaries."""
    return is_shown_kind(record.type, record.subtype)


def is_shown_kind(kind: str | None, subtype: str | None) -> bool:
    """:func:`is_shown` by a record's ``type`` and ``subtype`` (a skeleton's, undecoded)."""
    if kind in ("user", "assistant"):
        return True
    if kind == "system":
        return subtype in ("compact_boundary", "local_command")
    return False


def message_json(record: Record, *, on_active_path: bool | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "uuid": record.uuid,
        "type": record.type,
        "role": role_of(record),
        "text": record.text(),
        "timestamp": record.timestamp,
    }
    if on_active_path is not None:
        out["parentUuid"] = record.parent_uuid
        out["onActivePath"] = on_active_path
    return out


def show_json(transcript: Transcript, *, all_branches: bool = False) -> dict[str, Any]:
    """``show``: the active path's messages, or every branch's (file order) with flags."""
    if not all_branches:
        records = [r for r in transcript.active_records() if is_shown(r)]
        return {
            "sessionId": transcript.session_id,
            "messages": [message_json(r) for r in records],
        }
    on_path = set(transcript.active_path)
    records = [r for r in transcript.iter_all_records() if is_shown(r) and not r.is_sidechain]
    return {
        "sessionId": transcript.session_id,
        "leafUuid": transcript.leaf,
        "messages": [message_json(r, on_active_path=r.uuid in on_path) for r in records],
        "forkPoints": [
            {"uuid": f.uuid, "children": list(f.children)} for f in transcript.fork_points()
        ],
    }


def tree_json(transcript: Transcript) -> dict[str, Any]:
    """``tree``: every chain record, the active path, fork points and off-path leaves."""
    tree = transcript.tree
    on_path = set(transcript.active_path)
    nodes = []
    for record in transcript.iter_all_records():
        uuid = record.uuid
        if uuid is None or uuid not in tree.nodes:
            continue
        nodes.append(
            {
                "uuid": uuid,
                "parentUuid": tree.parent.get(uuid),
                "logicalParentUuid": record.get("logicalParentUuid"),
                "type": record.type,
                "subtype": record.subtype,
                "isSidechain": record.is_sidechain,
                "onActivePath": uuid in on_path,
                "text": one_line(record.text(), SNIPPET),
            }
        )
    return {
        "sessionId": transcript.session_id,
        "leafUuid": transcript.leaf,
        "activePath": list(transcript.active_path),
        "nodes": nodes,
        "forkPoints": [
            {"uuid": f.uuid, "children": list(f.children)} for f in transcript.fork_points()
        ],
        "offPathLeaves": transcript.off_path_leaves(),
        "subagents": [s.as_json() for s in transcript.subagents()],
    }


def prompts_json(
    transcript: Transcript, checkpoint_ids: set[str], gone_ids: Collection[str] = ()
) -> list[dict[str, Any]]:
    """``prompts``: the rewind list, oldest first, every branch included. ``number``: the
    prompt's place on the active path (1 the first), as a ``PROMPT`` argument takes it
    (:meth:`~sessiontree.conversation.transcript.Transcript.resolve_prompt`); None off it.
    ``checkpointGone``: the prompt's checkpoint names backups no longer on disk
    (``gone_ids``: the client prunes those of all but its newest checkpoints).
    ``branchLeafUuid``: the leaf ``switch --to`` the prompt makes the client resume, the
    newest below it (:func:`~sessiontree.model.branches.newest_leaves`); None for a
    prompt a compaction summarized away."""
    branch_leaves = newest_leaves(transcript.tree)
    records = [r for r in transcript.records(transcript.prompt_uuids()) if r.is_prompt]
    numbers = {u: n for n, u in enumerate(transcript.numbered_prompts(), 1)}
    return [
        {
            "uuid": record.uuid,
            "text": record.text(),
            "timestamp": record.timestamp,
            "onActivePath": record.uuid in numbers,
            "checkpoint": record.uuid in checkpoint_ids,
            "compacted": record.uuid in transcript.tree.compacted,
            "number": numbers.get(record.uuid) if record.uuid is not None else None,
            "checkpointGone": record.uuid in gone_ids,
            "branchLeafUuid": branch_leaves.get(record.uuid) if record.uuid is not None else None,
            "sessionId": transcript.session_id,
        }
        for record in records
    ]


#: What :func:`iter_context_json` cuts off each message's formatting: a message formatted
#: inside two lists is indented as it is inside ``{"messages": [...]}``.
_NESTED_OPEN, _NESTED_CLOSE = b"[\n  [\n", b"\n  ]\n]"


#: What stands for pieces made apart (a forked child's output, say).
Piece = TypeVar("Piece")


def iter_context_json(
    session_id: str,
    messages: Iterable[Message],
    *,
    then: Callable[[], Iterable[Piece]] | None = None,
) -> Iterator[bytes | memoryview | Piece]:
    """``context --json`` in pieces, one message at a time: together, byte for byte, the
    document that ``{"sessionId": session_id, "messages": [...]}`` prints as (indented by
    two, newline-terminated), without the whole list or its encoding in memory.

    ``then``: the pieces of the messages after ``messages`` (:func:`iter_messages_json`
    of them, ``first`` False, or what stands for those), made apart; ``messages`` must
    then have at least one."""
    yield b'{\n  "sessionId": ' + msgspec.json.encode(utf8_name(session_id)) + b',\n  "messages": ['
    some = yield from iter_messages_json(messages)
    if then is not None:
        yield from then()
    yield b"\n  ]\n}\n" if some or then is not None else b"]\n}\n"


def iter_messages_json(
    messages: Iterable[Message], *, first: bool = True
) -> Generator[bytes | memoryview, None, bool]:
    """The messages of :func:`iter_context_json`, each after its separator (``first``:
    these come first in the list); returns whether there was one."""
    separator = b"\n" if first else b",\n"
    some = False
    for message in messages:
        formatted = _formatted(message)
        yield separator
        yield memoryview(formatted)[len(_NESTED_OPEN) : len(formatted) - len(_NESTED_CLOSE)]
        del formatted
        separator, some = b",\n", True
    return some


#: A number with an exponent as orjson writes it (``1e+300``; msgspec writes ``1e300``).
_PLUS_EXPONENT = re.compile(rb"[0-9]e\+")


def _formatted(message: Message) -> bytes:
    """``[[message]]`` indented by two, as :func:`msgspec.json.format` prints it: by
    orjson, twice as fast, unless what it wrote may differ (a number with a positive
    exponent, which it writes ``e+``) or it cannot write it (an integer beyond 64 bits)."""
    try:
        formatted = orjson.dumps([[message]], option=orjson.OPT_INDENT_2)
    except TypeError:  # (orjson.JSONEncodeError is one)
        pass
    else:
        if b"e+" not in formatted or not _PLUS_EXPONENT.search(formatted):
            return formatted
    return msgspec.json.format(msgspec.json.encode([[message]]), indent=2)
