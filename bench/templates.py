# mypy: disable-error-code="import-untyped"
# (sessiontree has no py.typed marker yet; drop this line once it has.)
"""Line templates cut from the real-client fixtures, and the text pools that fill them.

Every line the generator writes is a real Claude Code 2.1.328 record, encoded once with
its variable fields (uuids, parents, timestamps, session id, cwd, message and tool ids,
texts) replaced by ``@@slot@@`` markers. Writing a line is then a join of byte pieces:
no JSON is encoded per record, and large texts are written as views of one pool.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from sessiontree.storage.layout import encode_cwd

#: The real-client data the templates are cut from.
FIXTURE_ROOT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claude-code-2.1.328"
#: A 2.0.x client's compaction (its boundary preserves nothing), for 2.0.x-shaped sessions.
FIXTURE_ROOT_2_0 = FIXTURE_ROOT.parent / "claude-code-2.0.76"

#: A piece of an output line: the template's own bytes or a view into a text pool.
Chunk = bytes | memoryview
Record = dict[str, Any]
FieldPath = tuple[str | int, ...]

_SLOT = re.compile(rb"@@([a-z_]+)@@")
_JSON_SLOT = b'"@@parent@@"'  # parentUuid may be null: its slot takes a JSON value
_BACKSLASH = 0x5C
_UTF8_CONTINUATION = 0x80  # 0b10xxxxxx
_ESCAPED_NEWLINE = b"\\n"

#: Slots filled from the session, not per record (see :meth:`Template.render`).
SESSION_SLOTS = ("sid", "cwd", "project")

_CHAIN: dict[FieldPath, str] = {("uuid",): "uuid", ("parentUuid",): "parent", ("timestamp",): "ts"}
_BLOCK = ("message", "content", 0)
_ASSISTANT: dict[FieldPath, str] = {
    **_CHAIN,
    ("message", "id"): "msg_id",
    ("requestRef",): "req",
}
_TOOL_RESULT: dict[FieldPath, str] = {
    **_CHAIN,
    ("promptId",): "prompt_id",
    (*_BLOCK, "tool_use_id"): "tool_id",
    ("sourceToolAssistantUUID",): "source",
}

#: Tools whose results carry a sized text (the tool_result content and toolUseResult).
PAYLOAD_FIELDS: dict[str, tuple[FieldPath, ...]] = {
    "Read": ((*_BLOCK, "content"), ("toolUseResult", "file", "content")),
    "Bash": ((*_BLOCK, "content"), ("toolUseResult", "stdout")),
}
TOOLS = ("Read", "Bash", "Edit", "Write")

#: Attachments of a session's first prompt, in the real client's order.
OPENING_ATTACHMENTS = (
    "environment",
    "model",
    "deferred_tools_delta",
    "agent_listing_delta",
    "skill_listing",
    "auto_mode",
    "session_context",
    "date",
    "remote_session_change",
    "prompt_snapshot",
)
#: Attachments the client re-injects after a compaction (as in 06-compact).
COMPACTION_ATTACHMENTS = ("file", "deferred_tools_delta", "skill_listing", "environment", "model")
#: Attachments that may follow a later prompt or tool result.
TURN_ATTACHMENTS = ("date", "file", "remote_session_change", "prompt_snapshot")
#: Metadata records the client sprinkles between turns.
NOISE = ("mode", "permission-mode", "atis-latch", "cost-state")


@dataclass(frozen=True)
class Template:
    """One record's encoded bytes, cut at its slots: ``pieces[i]`` precedes ``slots[i]``."""

    kind: str
    pieces: tuple[bytes, ...]
    slots: tuple[str, ...]

    @property
    def fixed_size(self) -> int:
        """Bytes of the line that are not slot values."""
        return sum(len(piece) for piece in self.pieces)

    def render(self, values: Mapping[str, Chunk | Sequence[Chunk]]) -> list[Chunk]:
        """The line's chunks with every slot filled from ``values`` (no newline)."""
        parts: list[Chunk] = [self.pieces[0]]
        for name, piece in zip(self.slots, self.pieces[1:], strict=True):
            value = values[name]
            if isinstance(value, bytes | memoryview):
                parts.append(value)
            else:
                parts.extend(value)
            parts.append(piece)
        return parts


def parse_template(kind: str, encoded: bytes) -> Template:
    """Cut encoded JSON at its ``@@slot@@`` markers (``"@@parent@@"`` takes raw JSON)."""
    cut = _SLOT.split(encoded.replace(_JSON_SLOT, b"@@parent@@"))
    return Template(kind, tuple(cut[0::2]), tuple(s.decode() for s in cut[1::2]))


def format_json_string(text: str) -> bytes:
    """``text`` as the inside of a JSON string (escaped, without the quotes)."""
    return msgspec.json.encode(text)[1:-1]


@dataclass(frozen=True)
class FixtureRecord:
    """A record of a fixture transcript, with the session and cwd it was written in."""

    record: Record
    session_id: str
    cwd: str
    scenario: str

    @property
    def type(self) -> str | None:
        value = self.record.get("type")
        return value if isinstance(value, str) else None


def read_fixture_records(root: Path = FIXTURE_ROOT) -> list[FixtureRecord]:
    """Every record of the fixture transcripts (subagents left out), in file order."""
    out: list[FixtureRecord] = []
    for path in sorted(root.glob("*/claude-home/projects/*/*.jsonl")):
        records = [msgspec.json.decode(line) for line in path.read_bytes().splitlines() if line]
        cwd = next(r["cwd"] for r in records if isinstance(r.get("cwd"), str))
        scenario = path.parents[3].name
        out.extend(FixtureRecord(r, path.stem, cwd, scenario) for r in records)
    return out


def _assign(record: Record, path: FieldPath, value: object) -> None:
    """Set ``record[path]``; a missing key means the fixtures changed shape: fail loudly."""
    target: Any = record
    for key in path[:-1]:
        target = target[key]
    if isinstance(path[-1], str) and path[-1] not in target:
        raise KeyError(f"fixture record has no {'.'.join(map(str, path))}")
    target[path[-1]] = value


def build_template(
    kind: str, source: FixtureRecord, fields: Mapping[FieldPath, object]
) -> Template:
    """Template ``kind`` from ``source``, its ``fields`` replaced by slot markers.

    Values in ``fields`` are slot names, or lists of slot names for arrays of uuids.
    The session id, cwd and project folder name are made slots wherever they occur.
    """
    record = copy.deepcopy(source.record)
    for path, name in fields.items():
        marker = [f"@@{n}@@" for n in name] if isinstance(name, list) else f"@@{name}@@"
        _assign(record, path, marker)
    encoded = msgspec.json.encode(record)
    for text, slot in (
        (source.session_id, "sid"),
        (source.cwd, "cwd"),
        (encode_cwd(source.cwd), "project"),
    ):
        encoded = encoded.replace(text.encode(), f"@@{slot}@@".encode())
    return parse_template(kind, encoded)


Predicate = Callable[[FixtureRecord], bool]


def _first(records: Sequence[FixtureRecord], what: str, predicate: Predicate) -> FixtureRecord:
    for fixture in records:
        if predicate(fixture):
            return fixture
    raise LookupError(f"no fixture record for {what}")


def _content(fixture: FixtureRecord) -> Any:
    message = fixture.record.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _first_block(fixture: FixtureRecord) -> dict[str, Any]:
    content = _content(fixture)
    if isinstance(content, list) and content and isinstance(content[0], dict):
        return content[0]
    return {}


def _is_typed_prompt(fixture: FixtureRecord) -> bool:
    origin = fixture.record.get("origin")
    return (
        fixture.type == "user"
        and isinstance(_content(fixture), str)
        and isinstance(origin, dict)
        and origin.get("kind") == "human"
    )


def _is_assistant(fixture: FixtureRecord, block: str, stop: str) -> bool:
    message = fixture.record.get("message")
    return (
        fixture.type == "assistant"
        and isinstance(message, dict)
        and message.get("stop_reason") == stop
        and _first_block(fixture).get("type") == block
    )


def _first_by(
    records: Sequence[FixtureRecord], key: Callable[[FixtureRecord], str | None]
) -> dict[str, FixtureRecord]:
    """The first record of each ``key`` (records whose key is None left out)."""
    found: dict[str, FixtureRecord] = {}
    for fixture in records:
        value = key(fixture)
        if value is not None:
            found.setdefault(value, fixture)
    return found


def _pick(found: Mapping[str, FixtureRecord], key: str, what: str) -> FixtureRecord:
    try:
        return found[key]
    except KeyError:
        raise LookupError(f"no fixture record for {key} {what}") from None


def _tool_use_name(fixture: FixtureRecord) -> str | None:
    block = _first_block(fixture)
    name = block.get("name")
    is_use = fixture.type == "assistant" and block.get("type") == "tool_use"
    return name if is_use and isinstance(name, str) else None


def _is_system(fixture: FixtureRecord, subtype: str) -> bool:
    return fixture.type == "system" and fixture.record.get("subtype") == subtype


def _attachment_type(fixture: FixtureRecord) -> str | None:
    attachment = fixture.record.get("attachment")
    kind = attachment.get("type") if isinstance(attachment, dict) else None
    return kind if fixture.type == "attachment" and isinstance(kind, str) else None


def _tool_templates(records: Sequence[FixtureRecord]) -> Iterator[Template]:
    """``tool_use:<Tool>`` and ``tool_result:<Tool>`` for each tool in :data:`TOOLS`."""
    names = {str(f.record["uuid"]): name for f in records if (name := _tool_use_name(f))}

    def result_tool(fixture: FixtureRecord) -> str | None:
        result = fixture.record.get("toolUseResult")
        if not isinstance(result, dict) or "persistedOutputPath" in result:
            return None  # a spilled output's record is only a preview
        return names.get(str(fixture.record.get("sourceToolAssistantUUID")))

    uses = _first_by(records, _tool_use_name)
    results = _first_by(records, result_tool)
    for tool in TOOLS:
        yield build_template(
            f"tool_use:{tool}",
            _pick(uses, tool, "tool_use"),
            {**_ASSISTANT, (*_BLOCK, "id"): "tool_id"},
        )
        payload = dict.fromkeys(PAYLOAD_FIELDS.get(tool, ()), "payload")
        yield build_template(
            f"tool_result:{tool}",
            _pick(results, tool, "tool_result"),
            {**_TOOL_RESULT, **payload},
        )


def _attachment_templates(records: Sequence[FixtureRecord]) -> Iterator[Template]:
    found = _first_by(records, _attachment_type)
    for kind in dict.fromkeys((*OPENING_ATTACHMENTS, *COMPACTION_ATTACHMENTS, *TURN_ATTACHMENTS)):
        yield build_template(f"attachment:{kind}", _pick(found, kind, "attachment"), _CHAIN)


def _metadata_templates(records: Sequence[FixtureRecord]) -> Iterator[Template]:
    def of_type(kind: str, predicate: Predicate = lambda f: True) -> FixtureRecord:
        return _first(records, kind, lambda f: f.type == kind and predicate(f))

    yield build_template(
        "file-history-snapshot",
        of_type(
            "file-history-snapshot", lambda f: bool(f.record["snapshot"]["trackedFileBackups"])
        ),
        {
            ("messageId",): "prompt_uuid",
            ("snapshot", "messageId"): "prompt_uuid",
            ("snapshot", "timestamp"): "ts",
        },
    )
    yield build_template(
        "file-history-delta",
        of_type("file-history-delta"),
        {
            ("messageId",): "source",
            ("snapshotMessageId",): "prompt_uuid",
            ("timestamp",): "ts",
            ("backup", "backupTime"): "ts",
        },
    )
    yield build_template(
        "last-prompt",
        of_type("last-prompt", lambda f: "lastPrompt" in f.record),
        {("lastPrompt",): "prompt", ("leafUuid",): "leaf"},
    )
    yield build_template(
        "rewind-marker", of_type("last-prompt", lambda f: f.record.get("explicit") is True), {}
    )
    yield build_template(
        "api-request",
        of_type("api-request", lambda f: "base" in f.record),
        {("id",): "req", ("base",): "req_base", ("timestamp",): "ts"},
    )
    yield build_template("api-request-shape", of_type("api-request-shape"), {("timestamp",): "ts"})
    blobs = [f for f in records if f.type == "api-request-blob" and f.scenario == "01-basic"]
    for number, blob in enumerate(blobs[:2]):
        yield build_template(f"api-request-blob:{number}", blob, {})
    yield build_template("tools-used", of_type("tools-used"), {})
    for kind in NOISE:
        yield build_template(kind, of_type(kind), {})


def _compaction_templates(records: Sequence[FixtureRecord]) -> Iterator[Template]:
    boundary = _first(
        records,
        "compact boundary",
        lambda f: (
            _is_system(f, "compact_boundary") and "preservedSegment" in f.record["compactMetadata"]
        ),
    )
    segment = ("compactMetadata", "preservedSegment")
    kept = ("compactMetadata", "preservedMessages")
    yield build_template(
        "compact-boundary",
        boundary,
        {
            ("uuid",): "uuid",
            ("timestamp",): "ts",
            ("logicalParentUuid",): "logical",
            (*segment, "headUuid"): "head",
            (*segment, "anchorUuid"): "anchor",
            (*segment, "tailUuid"): "tail",
            (*kept, "anchorUuid"): "anchor",
            (*kept, "uuids"): ["head", "tail"],
            (*kept, "allUuids"): ["head", "tail"],
        },
    )
    summary = _first(records, "compact summary", lambda f: f.record.get("isCompactSummary") is True)
    yield build_template("compact-summary", summary, {**_CHAIN, ("promptId",): "prompt_id"})


def compaction_templates_2_0(records: Sequence[FixtureRecord]) -> dict[str, Template]:
    """A 2.0.x client's compaction, cut from its records (``FIXTURE_ROOT_2_0``'s): the
    boundary (``compactMetadata`` without ``preservedSegment``: nothing preserved) and the
    compact summary hung on it."""
    boundary = _first(
        records, "2.0.x compact boundary", lambda f: _is_system(f, "compact_boundary")
    )
    if "preservedSegment" in boundary.record["compactMetadata"]:
        raise LookupError("the 2.0.x compact boundary preserves a segment")
    summary = _first(records, "compact summary", lambda f: f.record.get("isCompactSummary") is True)
    templates = [
        build_template(
            "compact-boundary:2.0",
            boundary,
            {("uuid",): "uuid", ("timestamp",): "ts", ("logicalParentUuid",): "logical"},
        ),
        build_template("compact-summary:2.0", summary, _CHAIN),
    ]
    return {t.kind: t for t in templates}


def build_templates(records: Sequence[FixtureRecord]) -> dict[str, Template]:
    """Every template the generator writes, by kind."""
    basic = [f for f in records if f.scenario == "01-basic"] or list(records)
    prompt = _first(basic, "typed prompt", _is_typed_prompt)
    text = _first(basic, "assistant text", lambda f: _is_assistant(f, "text", "tool_use"))
    final = _first(basic, "final assistant text", lambda f: _is_assistant(f, "text", "end_turn"))
    text_fields = {**_ASSISTANT, (*_BLOCK, "text"): "text"}
    templates = [
        build_template(
            "prompt",
            prompt,
            {**_CHAIN, ("promptId",): "prompt_id", ("message", "content"): "prompt"},
        ),
        build_template("assistant-text", text, text_fields),
        build_template("assistant-final", final, text_fields),
        build_template(
            "turn-duration",
            _first(basic, "turn_duration", lambda f: _is_system(f, "turn_duration")),
            _CHAIN,
        ),
        *_tool_templates(records),
        *_attachment_templates(records),
        *_metadata_templates(records),
        *_compaction_templates(records),
    ]
    return {t.kind: t for t in templates}


def read_prompts(records: Sequence[FixtureRecord]) -> list[str]:
    """The distinct prompts people typed in the fixtures, with ``@@cwd@@`` for their cwd."""
    prompts = [
        f.record["message"]["content"].replace(f.cwd, "@@cwd@@")
        for f in records
        if _is_typed_prompt(f)
    ]
    return sorted(set(prompts))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\\]")


def read_text_lines(records: Sequence[FixtureRecord]) -> list[str]:
    """Distinct lines of real text found in the fixtures (no backslashes, no control chars)."""
    lines = {
        _UNSAFE.sub("", line).rstrip()
        for fixture in records
        for text in _strings(fixture.record)
        if len(text) >= 40
        for line in text.splitlines()
    }
    return sorted(line for line in lines if line.strip())


@dataclass
class TextPool:
    """A few MB of JSON-escaped text, handed out as zero-copy slices of any length.

    The text holds no backslashes, so every backslash in ``data`` starts a two-byte
    escape; a slice is valid JSON string content when it splits neither an escape nor a
    UTF-8 character.
    """

    data: bytes
    _view: memoryview = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._view = memoryview(self.data)

    @classmethod
    def build(cls, lines: Sequence[str], *, size: int, rng: random.Random) -> TextPool:
        """Lines drawn at random (with numbers, like Read output) until ``size`` bytes."""
        out: list[bytes] = []
        total = 0
        number = 0
        while total < size:
            number += 1
            piece = format_json_string(f"{number:>6}\t{rng.choice(lines)}\n")
            out.append(piece)
            total += len(piece)
        return cls(b"".join(out))

    def _safe_end(self, start: int, end: int) -> int:
        """``end`` moved back so the slice splits neither an escape nor a UTF-8 character."""
        while end > start and self.data[end] & 0xC0 == _UTF8_CONTINUATION:
            end -= 1
        if end > start and self.data[end - 1] == _BACKSLASH:
            end -= 1
        return end

    def take(self, size: int, rng: random.Random) -> list[Chunk]:
        """About ``size`` bytes of escaped text from a random line on, as views of the pool."""
        chunks: list[Chunk] = []
        remaining = size
        while remaining > 0:
            start = self.data.find(_ESCAPED_NEWLINE, rng.randrange(len(self.data)))
            start = 0 if start < 0 else start + len(_ESCAPED_NEWLINE)
            end = min(len(self.data), start + remaining)
            if end < len(self.data):
                end = self._safe_end(start, end)
            if end <= start:
                break  # a one-byte remainder that would split an escape: stop short
            chunks.append(self._view[start:end])
            remaining -= end - start
        return chunks
