"""What a listing row reads from the two ends of a transcript, decoding as few lines as it can.

The *head* (the first 64 KiB of whole lines, grown until it holds a typed prompt) gives
the working folder, the first prompt and the start time: the first of each in it. The
*tail* (the last 64 KiB of whole lines, grown until it holds a turn end) gives the
client's message count, the titles, the last prompt and the last activity: the last of
each in it. Both windows grow fourfold, up to 4 MiB or the whole file.

Neither end is split into lines and decoded whole. The head is decoded line by line
from the start and stops once each fact is settled. The tail is searched backwards for
the quoted name each fact is stored under (``"customTitle"``, ``"turn_duration"``...),
and only the lines holding one are decoded. A quote inside a JSON string is always
escaped, so every line a fact can come from holds its name unescaped; decoding the line
then says whether the name is the record's own field or something nested in it. The
answer is the same as decoding every line of the window (the tests compare the two).
"""

import os
import re
from collections.abc import Callable
from typing import Literal

import msgspec

from sessiontree.model.conversation import find_no_conversation
from sessiontree.model.records import Record, is_typed_prompt

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024
MAX_END_BYTES = 4 * 1024 * 1024  # how far a head or tail read may grow to find a record

_PASTE_TAG = re.compile(r"</?pasted_content[^>]*>")
#: Typed prompts a title is not taken from: a bash-mode command, a slash command's rows,
#: an older client's untagged caveat (the first *meaningful* prompt, as the client says).
_NOT_A_TITLE = ("<command-", "<local-command", "<bash-", "Caveat:")


class EndRecord(msgspec.Struct):
    """The fields a listing row reads from the records at the ends of a transcript."""

    type: str | None = None
    uuid: str | None = None
    isSidechain: bool | None = None
    cwd: str | None = None
    timestamp: str | None = None
    subtype: str | None = None
    messageCount: int | None = None
    customTitle: str | None = None
    aiTitle: str | None = None
    lastPrompt: str | None = None
    leafUuid: str | None = None


_decoder = msgspec.json.Decoder(EndRecord)


def _decode(line: bytes) -> EndRecord | None:
    try:
        return _decoder.decode(line)
    except (msgspec.DecodeError, RecursionError):  # a damaged line says nothing
        return None


def prompt_text(record: EndRecord, line: bytes) -> str | None:
    """The text of a typed prompt (:func:`is_typed_prompt`), flattened for a title; None
    for any other record, and for a prompt no title is taken from."""
    if record.type != "user":
        return None
    try:
        raw = msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(raw, dict) or not is_typed_prompt(raw):
        return None
    text = Record(raw).text().strip()
    if not text or text.startswith(_NOT_A_TITLE):
        return None
    return " ".join(_PASTE_TAG.sub("", text).split())[:200] or None


class Head(msgspec.Struct, frozen=True):
    """The first of each fact in the head window."""

    cwd: str | None
    first_prompt: str | None
    started: str | None
    #: Whether the window holds a conversation record (:func:`find_no_conversation`).
    has_conversation: bool


class Tail(msgspec.Struct, frozen=True):
    """The last of each fact in the tail window."""

    message_count: int | None  # the newest turn end's ``messageCount``
    custom_title: str | None
    ai_title: str | None
    last_prompt: str | None
    updated: str | None
    #: Whether the newest ``last-prompt`` bookmark names a sidechain record in the window.
    names_sidechain: bool


def _window_sizes(first: int, file_size: int) -> list[int]:
    sizes = [first]
    while sizes[-1] < MAX_END_BYTES and sizes[-1] < file_size:
        sizes.append(sizes[-1] * 4)
    return sizes


def read_head(
    fd: int, file_size: int, *, subagent: bool, enough: Literal["prompt", "conversation"] = "prompt"
) -> Head:
    """The head facts of an open transcript of ``file_size`` bytes; the window grows until
    it holds a typed prompt (or, ``enough="conversation"``, a conversation record)."""
    for size in _window_sizes(HEAD_BYTES, file_size):
        data = os.pread(fd, size, 0)
        head = _scan_head(data, cut=len(data) == size, subagent=subagent)
        found = head.first_prompt is not None if enough == "prompt" else head.has_conversation
        if found or size >= MAX_END_BYTES or size >= file_size:
            return head
    raise AssertionError("unreachable: the last window size ends the loop")


def _scan_head(data: bytes, *, cut: bool, subagent: bool) -> Head:
    """The head facts of ``data`` (``cut``: its last line may be partial, and is left out)."""
    cwd = prompt = started = None
    conversation = False
    seen: list[EndRecord] = []
    start, end_of_data = 0, len(data)
    while start < end_of_data:
        end = data.find(b"\n", start)
        if end < 0:
            if cut:
                break
            end = end_of_data
        line = data[start:end]
        start = end + 1
        record = _decode(line) if line.strip() else None
        if record is None:
            continue
        seen.append(record)
        cwd = cwd or record.cwd or None
        started = started or record.timestamp or None
        if prompt is None:
            prompt = prompt_text(record, line)
        if not conversation:
            conversation = find_no_conversation([record], subagent=subagent) is None
        if cwd and started and prompt is not None and conversation:
            break
    return Head(cwd, prompt, started, conversation)


def read_tail(fd: int, file_size: int) -> Tail:
    """The tail facts of an open transcript of ``file_size`` bytes."""
    for size in _window_sizes(TAIL_BYTES, file_size):
        start = max(0, file_size - size)
        data = os.pread(fd, file_size - start, start)
        tail = _Window(data, cut=start > 0).tail()
        if tail.message_count is not None or size >= MAX_END_BYTES or size >= file_size:
            return tail
    raise AssertionError("unreachable: the last window size ends the loop")


class _Window:
    """The whole lines of a tail read, searched from the end (``cut``: the first line may
    be partial, and is left out)."""

    def __init__(self, data: bytes, *, cut: bool) -> None:
        self.data = data
        self.low = data.find(b"\n") + 1 if cut else 0
        if cut and self.low == 0:
            self.low = len(data)  # one partial line: no whole line at all
        self.decoded: dict[int, EndRecord | None] = {}

    def last(self, marker: bytes, accept: Callable[[EndRecord], bool]) -> EndRecord | None:
        """The last record whose line holds ``marker`` and that ``accept`` takes."""
        data, high = self.data, len(self.data)
        while (at := data.rfind(marker, self.low, high)) >= 0:
            start = data.rfind(b"\n", self.low, at) + 1 or self.low
            record = self._record(start)
            if record is not None and accept(record):
                return record
            high = start
        return None

    def _record(self, start: int) -> EndRecord | None:
        if start not in self.decoded:
            end = self.data.find(b"\n", start)
            self.decoded[start] = _decode(self.data[start : end if end >= 0 else None])
        return self.decoded[start]

    def tail(self) -> Tail:
        turn_end = self.last(b'"turn_duration"', _is_turn_end)
        custom = self.last(b'"customTitle"', lambda r: bool(r.customTitle))
        ai = self.last(b'"aiTitle"', lambda r: bool(r.aiTitle))
        last_prompt = self.last(b'"lastPrompt"', lambda r: bool(r.lastPrompt))
        updated = self.last(b'"timestamp"', lambda r: bool(r.timestamp))
        bookmark = self.last(b'"last-prompt"', lambda r: r.type == "last-prompt")
        named = bookmark.leafUuid if bookmark is not None else None
        sidechain = bool(named) and (
            self.last(msgspec.json.encode(named), lambda r: r.uuid == named and bool(r.isSidechain))
            is not None
        )
        return Tail(
            message_count=turn_end.messageCount if turn_end is not None else None,
            custom_title=custom.customTitle if custom is not None else None,
            ai_title=ai.aiTitle if ai is not None else None,
            last_prompt=last_prompt.lastPrompt if last_prompt is not None else None,
            updated=updated.timestamp if updated is not None else None,
            names_sidechain=sidechain,
        )


def _is_turn_end(record: EndRecord) -> bool:
    return (
        record.type == "system"
        and record.subtype == "turn_duration"
        and record.messageCount is not None
    )
