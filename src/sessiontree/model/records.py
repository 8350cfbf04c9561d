"""Records as read from a transcript: a skeleton for the tree, the raw dict for the rest.

A transcript line is decoded twice at most. The *skeleton* (:class:`Skeleton`) holds only
the fields the tree needs and is decoded for every line; the full record (:class:`Record`)
is the exact dict that was stored, decoded lazily for the few records a command shows.
Unknown record types and fields are never dropped: a :class:`Record` *is* the stored dict.
"""

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, NewType, Protocol, TypedDict, TypeGuard

import msgspec

#: A session's id: a UUID, the stem of its ``<sessionId>.jsonl`` and the name of its
#: folders (``file-history/``, ``session-env/``); check one with :func:`is_session_id`.
SessionId = NewType("SessionId", str)
Uuid = NewType("Uuid", str)

_SESSION_ID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def is_session_id(value: str) -> TypeGuard[SessionId]:
    """True for a session id as the client makes them: a UUID (``8-4-4-4-12`` hex digits,
    either case). The one rule: file names, folder names and ``SESSION`` arguments are
    checked with it, and only such a name is ever a path component."""
    return _SESSION_ID.fullmatch(value) is not None


#: ``leafUuid`` of the reset marker a rewind writes (``last-prompt`` with ``explicit``).
NULL_UUID = "00000000-0000-0000-0000-000000000000"

#: Record types that are part of the uuid/parentUuid tree.
CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})

#: How the client's records of a slash command begin (not prompts one can rewind to).
COMMAND_RECORD_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
)

ProblemKind = Literal[
    "torn-line",
    "bad-json",
    "bad-utf8",
    "nul-bytes",
    "bad-shape",
    "duplicate-uuid",
    "dangling-parent",
    "cycle",
    "missing-backup",
    "pruned-backup",
    "missing-paste",
    "stale-live-entry",
    "unreadable",
    "too-deep",
    "bad-number",
    "bad-field",
    "missing-parent-key",
    "bad-last-prompt",
    "hostile-path",
    "self-link",
    "not-a-session",
    "misnamed-transcript",
]


class Problem(msgspec.Struct, frozen=True):
    """Something wrong in stored data, with where it is. Readers collect, never raise."""

    kind: ProblemKind
    path: str
    line: int | None
    detail: str

    def as_json(self) -> dict[str, Any]:
        """``{kind, path, line, detail}``, as ``doctor --json`` prints it."""
        return {"kind": self.kind, "path": self.path, "line": self.line, "detail": self.detail}


class BlockRef(msgspec.Struct, gc=False):
    """What a skeleton keeps of a content block: its type and ids, each as stored (text,
    tool inputs and results are skipped, not decoded). Enough to pair calls with results
    without reading the line again (:func:`~sessiontree.model.context.skeleton_facts`)."""

    type: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    tool_use_id: Any = msgspec.UNSET


#: :attr:`MessageSkeleton.content` of a line whose content the scan could not read
#: (invalid UTF-8 in its text, say): what it holds is known only from the record.
CONTENT_UNREAD = "\x00unread"


class MessageSkeleton(msgspec.Struct, omit_defaults=True):
    id: str | None = None
    #: The blocks of ``message.content``; a string content is kept as ``""`` (it holds
    #: no block), an absent or null one as None, one not read as :data:`CONTENT_UNREAD`.
    content: list[BlockRef] | str | None = None


class PreservedSegment(msgspec.Struct):
    headUuid: str | None = None
    anchorUuid: str | None = None
    tailUuid: str | None = None


class PreservedMessages(msgspec.Struct):
    anchorUuid: str | None = None
    uuids: list[str] = msgspec.field(default_factory=list)


class CompactMetadataSkeleton(msgspec.Struct, omit_defaults=True):
    preservedSegment: PreservedSegment | None = None
    preservedMessages: PreservedMessages | None = None


class Skeleton(msgspec.Struct, gc=False, omit_defaults=True):
    """The tree fields of one line. Everything else stays on disk until asked for."""

    type: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    timestamp: str | None = None
    isSidechain: bool | None = None
    isMeta: bool | None = None
    isCompactSummary: bool | None = None
    leafUuid: str | msgspec.UnsetType | None = msgspec.UNSET  # null ≠ absent: a rewind to empty
    explicit: bool | None = None
    subtype: str | None = None
    message: MessageSkeleton | None = None
    sourceToolAssistantUUID: str | None = None
    toolUseResult: msgspec.Raw = msgspec.Raw()
    compactMetadata: CompactMetadataSkeleton | None = None
    #: As stored: only ``true`` marks an API error (any other value is read as absent).
    isApiErrorMessage: Any = None


class RecordFields(Protocol):
    """The three fields that say what a line is (whether a file holds a conversation:
    :func:`~sessiontree.model.conversation.find_no_conversation`)."""

    @property
    def type(self) -> str | None: ...

    @property
    def uuid(self) -> str | None: ...

    @property
    def isSidechain(self) -> bool | None: ...


class MessageIdField(Protocol):
    """What :class:`TreeFields` reads of ``message``: its id."""

    @property
    def id(self) -> str | None: ...


class TreeFields(RecordFields, Protocol):
    """What a fold over a transcript's lines reads of each
    (:class:`~sessiontree.model.tail.HeadReading`): fields a :class:`Skeleton` shares
    with the bare skeleton a scan decodes without ``message.content``
    (:class:`~sessiontree.storage.scan.LineFold`)."""

    @property
    def message(self) -> MessageIdField | None: ...

    @property
    def parentUuid(self) -> str | None: ...

    @property
    def timestamp(self) -> str | None: ...

    @property
    def leafUuid(self) -> str | msgspec.UnsetType | None: ...

    @property
    def subtype(self) -> str | None: ...

    @property
    def compactMetadata(self) -> CompactMetadataSkeleton | None: ...


class FactBlock(msgspec.Struct, gc=False):
    """What :class:`FactFields` keeps of a content block."""

    type: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    tool_use_id: Any = msgspec.UNSET


class FactMessage(msgspec.Struct, gc=False):
    """What :class:`FactFields` keeps of ``message``."""

    id: Any = msgspec.UNSET
    model: Any = msgspec.UNSET
    content: str | list[FactBlock] | msgspec.UnsetType | None = msgspec.UNSET


class FactFields(msgspec.Struct, gc=False):
    """What :func:`~sessiontree.model.context.context_facts` reads of a record: its type,
    ``isApiErrorMessage``, and of its message the id, the model and each content block's
    type and ids (text, tool inputs and results are skipped, not decoded). A line of
    another shape (a block that is no object, say) is not one of these: decode it whole."""

    type: Any = msgspec.UNSET
    isApiErrorMessage: Any = msgspec.UNSET
    message: FactMessage | msgspec.UnsetType | None = msgspec.UNSET
    content: str | list[FactBlock] | msgspec.UnsetType | None = msgspec.UNSET


class ContextFields(TypedDict, total=False):
    """The fields of a record that :func:`~sessiontree.model.context.build_context` reads,
    each as stored; the rest of the line (``toolUseResult``, which repeats a tool's
    output, above all) is skipped, not decoded. A dict, not a struct: msgspec decodes a
    line straight into one holding only the fields the line has, in its order, so
    nothing is converted (on a long path that conversion cost a tenth of the build).
    ``tests/model/test_context_stream.py`` checks that the context of these is the context
    of the whole records."""

    type: Any
    uuid: Any
    parentUuid: Any
    timestamp: Any
    subtype: Any
    message: Any
    content: Any
    isApiErrorMessage: Any
    isMeta: Any
    isCompactSummary: Any
    isSidechain: Any
    origin: Any
    promptSource: Any
    attachment: Any
    rendered: Any
    renderedRole: Any


def fields_as_dict(value: msgspec.Struct | dict[str, Any]) -> dict[str, Any]:
    """The fields of a decoded :class:`FactFields` or :class:`ContextFields` that the line
    has, as the record's dict holds them (absent ones left out)."""
    if isinstance(value, dict):  # ContextFields: decoded as the dict it is
        return value
    converted: dict[str, Any] = msgspec.to_builtins(value)
    return converted


class Line(msgspec.Struct, frozen=True, gc=False):
    """One line of a transcript: where it is, and its skeleton (``None`` if undecodable).

    A struct, not a dataclass: a scan makes one per line, and a frozen dataclass's
    ``__init__`` costs several times more.
    """

    number: int
    offset: int
    length: int
    skeleton: Skeleton | None


class Record:
    """A stored record: the exact dict read from disk, with typed accessors over it."""

    __slots__ = ("line", "raw")

    def __init__(self, raw: dict[str, Any], line: int | None = None) -> None:
        self.raw = raw
        self.line = line

    def __repr__(self) -> str:
        return f"Record({self.type!r}, uuid={self.uuid!r}, line={self.line})"

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    @property
    def type(self) -> str | None:
        value = self.raw.get("type")
        return value if isinstance(value, str) else None

    @property
    def uuid(self) -> Uuid | None:
        value = self.raw.get("uuid")
        return Uuid(value) if isinstance(value, str) else None

    @property
    def parent_uuid(self) -> Uuid | None:
        value = self.raw.get("parentUuid")
        return Uuid(value) if isinstance(value, str) else None

    @property
    def timestamp(self) -> str | None:
        value = self.raw.get("timestamp")
        return value if isinstance(value, str) else None

    @property
    def subtype(self) -> str | None:
        value = self.raw.get("subtype")
        return value if isinstance(value, str) else None

    @property
    def message(self) -> dict[str, Any]:
        value = self.raw.get("message")
        return value if isinstance(value, dict) else {}

    @property
    def content(self) -> str | list[dict[str, Any]]:
        """``message.content`` (user/assistant) or ``content`` (system), blocks kept as-is."""
        value = self.message.get("content") if "message" in self.raw else self.raw.get("content")
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return [b for b in value if isinstance(b, dict)]
        return ""

    @property
    def message_id(self) -> str | None:
        value = self.message.get("id")
        return value if isinstance(value, str) else None

    @property
    def is_meta(self) -> bool:
        return self.raw.get("isMeta") is True

    @property
    def is_sidechain(self) -> bool:
        return self.raw.get("isSidechain") is True

    @property
    def is_compact_summary(self) -> bool:
        return self.raw.get("isCompactSummary") is True

    @property
    def origin_kind(self) -> str | None:
        origin = self.raw.get("origin")
        kind = origin.get("kind") if isinstance(origin, dict) else None
        return kind if isinstance(kind, str) else None

    @property
    def is_tool_result(self) -> bool:
        content = self.content
        return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)

    @property
    def is_prompt(self) -> bool:
        """A prompt the user typed (:func:`is_typed_prompt`)."""
        return is_typed_prompt(self.raw)

    def text(self) -> str:
        """The visible text: string content, text blocks, short tags for other blocks."""
        if self.type == "attachment":
            return attachment_text(self.raw)
        return content_text(self.content)


def may_be_typed_prompt(skeleton: Skeleton) -> bool:
    """What a skeleton shows of :func:`is_typed_prompt`: a ``user`` record that is not
    meta, not a compact summary, not on a sidechain. True does not make it a prompt (the
    rest of the rule needs the whole record); False rules it out without decoding it."""
    return (
        skeleton.type == "user"
        and not skeleton.isMeta
        and not skeleton.isCompactSummary
        and not skeleton.isSidechain
    )


def is_typed_prompt(raw: Mapping[str, Any]) -> bool:
    """A prompt the user typed, in a stored record: what ``/rewind`` lists, what a
    listing's first prompt is taken from, what ``promptIndex`` counts.

    A ``user`` record on the main chain that is not meta, not a compact summary, not shown
    in the transcript only, sent by a person (``origin.kind`` absent or ``human``), not a
    tool result, and not one of a slash command's own records (its text does not begin
    with one of :data:`COMMAND_RECORD_PREFIXES`).
    """
    if raw.get("type") != "user" or raw.get("isVisibleInTranscriptOnly"):
        return False
    if any(raw.get(flag) is True for flag in ("isMeta", "isCompactSummary", "isSidechain")):
        return False
    origin = raw.get("origin")
    kind = origin.get("kind") if isinstance(origin, dict) else None
    if kind not in (None, "human") and isinstance(kind, str):
        return False
    message = raw.get("message")
    if "message" in raw:  # as :attr:`Record.content` reads it
        content = message.get("content") if isinstance(message, dict) else None
    else:
        content = raw.get("content")
    if isinstance(content, list):
        blocks = [b for b in content if isinstance(b, dict)]
        if any(b.get("type") == "tool_result" for b in blocks):
            return False
        text = content_text(blocks)
    else:
        text = content if isinstance(content, str) else ""
    return not text.lstrip().startswith(COMMAND_RECORD_PREFIXES)


def prompt_index(records: Iterable[Record]) -> int:
    """How many prompts the conversation of these records (root first) has had: the
    ``turnPosition.promptIndex`` of the last record that carries one (prompts and compact
    summaries do, and it counts prompts that a compaction summarized away; a re-send
    after a rewind reuses its index), else the prompts among them (older clients)."""
    counted = 0
    last: int | None = None
    for record in records:
        counted += record.is_prompt
        position = record.get("turnPosition")
        if isinstance(position, dict):
            index = position.get("promptIndex")
            if isinstance(index, int) and not isinstance(index, bool):
                last = index
    return last if last is not None else counted


def one_line(text: str, limit: int, *, shown: Callable[[str], str] | None = None) -> str:
    """``text`` on one line (each run of whitespace one space, none at the ends), cut to
    ``limit`` (1 or more) characters with an ellipsis; ``shown`` (one character at a
    time, as :func:`~sessiontree.views.text.printable` does) is applied before the folding.

    Only a prefix is folded, longer until it gives more than ``limit``: a tool result of
    megabytes folded whole to show 200 characters took half of ``tree``'s time. A folded
    prefix is a prefix of the folded text, so the result is the same."""
    size = max(4 * limit, 64)
    while True:
        prefix = text[:size] if shown is None else shown(text[:size])
        flat = " ".join(prefix.split())
        if len(flat) > limit:
            return flat[: limit - 1] + "…"
        if size >= len(text):
            return flat
        size *= 4


def content_text(content: str | list[Any]) -> str:
    """Plain text of message content; non-text blocks become short bracketed tags.

    Blocks that are not objects (damage: a string, a number, null) are left out."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(f"[tool_use {block.get('name', '?')} {block.get('id', '')}]")
        elif kind == "tool_result":
            inner = block.get("content")
            body = content_text(inner) if isinstance(inner, (str, list)) else ""
            parts.append(f"[tool_result {block.get('tool_use_id', '')}] {body}".rstrip())
        elif kind == "thinking":
            parts.append("[thinking]")
        elif kind == "image":
            parts.append("[image]")
        else:
            parts.append(f"[{kind}]")
    return "\n".join(parts)


def attachment_text(raw: dict[str, Any]) -> str:
    """The text an attachment renders to, else its kind in brackets."""
    rendered = raw.get("rendered")
    if isinstance(rendered, list):
        texts = [str(r.get("content", "")) for r in rendered if isinstance(r, dict)]
        if texts:
            return "\n".join(texts)
    attachment = raw.get("attachment")
    kind = attachment.get("type") if isinstance(attachment, dict) else None
    return f"[attachment {kind}]"
