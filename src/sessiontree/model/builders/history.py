"""``history.jsonl`` lines and pasted texts (inline, or by hash in ``paste-cache/``):
built (:func:`build_history_entry`), parsed (:func:`parse_history_entry`), and the
placeholders of a prompt replaced by their pastes (:func:`expand_pastes`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sessiontree.model.builders.envelope import JsonDict

#: Pastes longer than this many characters go to ``paste-cache/`` (history keeps a hash).
INLINE_PASTE_LIMIT = 1024

#: A reference to a pasted item in the prompt box's text, as the client finds them (2.1.x;
#: 2.0 had the first three kinds): ``[Pasted text #N +L lines]``, ``[Image #N]``,
#: ``[...Truncated text #N]``, ``[✦ Team setup guide #N]``, with any trailing dots. Only
#: ``N > 0`` counts, and only a ``text`` item is put in place of its reference.
PASTE_REFERENCE = re.compile(
    r"\[(?:Pasted text|Image|\.\.\.Truncated text|\u2726 Team setup guide) #(\d+)"
    r"(?: \+\d+ lines)?\.*\]"
)


def find_paste_references(display: str) -> list[int]:
    """The item numbers ``display`` refers to (:data:`PASTE_REFERENCE`), in order."""
    return [n for m in PASTE_REFERENCE.finditer(display) if (n := int(m.group(1))) > 0]


def paste_placeholder(paste_id: int, text: str) -> str:
    """``[Pasted text #N +L lines]`` as the prompt box shows a paste (L = its newlines);
    ``[Pasted text #N]`` for a paste with no newline, as the client writes it."""
    newlines = text.count("\n")
    if not newlines:
        return f"[Pasted text #{paste_id}]"
    return f"[Pasted text #{paste_id} +{newlines} lines]"


def is_large_paste(text: str) -> bool:
    """True when the client stores the paste in ``paste-cache/`` instead of inline."""
    return len(text) > INLINE_PASTE_LIMIT


def build_pasted_text(paste_id: int, text: str, *, content_hash: str | None = None) -> JsonDict:
    """One ``pastedContents`` entry: inline ``content``, or ``contentHash`` for a large paste
    (``content_hash`` = ``sha256(text)[:16]``, the stem of its paste-cache file)."""
    if content_hash is not None:
        return {"id": paste_id, "type": "text", "contentHash": content_hash}
    return {"id": paste_id, "type": "text", "content": text}


def expand_pastes(
    display: str, texts: Mapping[int, str], *, tag_ids: Mapping[int, str] | None = None
) -> str:
    """The prompt text sent for ``display``: each reference (:data:`PASTE_REFERENCE`)
    with an entry in ``texts`` replaced by that text, taken literally; the others stay.

    With a ``tag_ids`` entry the paste is wrapped as the transcript stores large pastes:
    ``\\n\\n<pasted_content id="X">\\n…\\n</pasted_content id="X">\\n`` and one more
    ``\\n`` when more text follows that does not start with a newline.
    """

    def replace(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number <= 0 or number not in texts:
            return match.group(0)
        tag = (tag_ids or {}).get(number)
        if tag is None:
            return texts[number]
        # one newline after the closing tag, a second one only before more text that
        # does not start with its own (the client's rule)
        rest = display[match.end() :]
        after = "\n\n" if rest and not rest.startswith("\n") else "\n"
        return (
            f'\n\n<pasted_content id="{tag}">\n{texts[number]}\n</pasted_content id="{tag}">{after}'
        )

    return PASTE_REFERENCE.sub(replace, display)


def build_history_entry(
    *,
    display: str,
    timestamp_ms: int,
    project: str,
    session_id: str,
    pasted_contents: Mapping[int, JsonDict] | None = None,
) -> JsonDict:
    """One ``history.jsonl`` line: what the user typed (slash commands included)."""
    return {
        "display": display,
        "pastedContents": {str(k): dict(v) for k, v in (pasted_contents or {}).items()},
        "timestamp": timestamp_ms,
        "project": project,
        "sessionId": session_id,
    }


@dataclass(frozen=True)
class PastedContent:
    """One ``pastedContents`` entry of a history line, its fields type-checked (a field of
    another type reads as absent)."""

    type: str | None
    content: str | None
    content_hash: str | None

    @property
    def is_text(self) -> bool:
        """A pasted text (an entry without a ``type`` is taken as one), not an image."""
        return self.type in (None, "text")


@dataclass(frozen=True)
class HistoryLine:
    """One ``history.jsonl`` line, parsed. ``pasted`` is keyed as stored (``"1"``)."""

    display: str | None
    pasted: Mapping[str, PastedContent]
    timestamp: int | float | None
    project: str | None
    session_id: str | None
    line: int | None = None

    def paste_texts(self, read_paste: Any) -> dict[int, str]:
        """The texts of the pastes :attr:`display` refers to, for :func:`expand_pastes`:
        inline, else ``read_paste(contentHash)`` (a str, or None when it cannot be read)."""
        texts: dict[int, str] = {}
        for number in find_paste_references(self.display or ""):
            item = self.pasted.get(str(number))
            if item is None or not item.is_text or number in texts:
                continue
            text = item.content
            if text is None and item.content_hash is not None:
                found = read_paste(item.content_hash)
                text = found if isinstance(found, str) else None
            if text is not None:
                texts[number] = text
        return texts


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_history_entry(raw: Mapping[str, Any], *, line: int | None = None) -> HistoryLine:
    """A ``history.jsonl`` line's fields (:func:`build_history_entry` writes them)."""
    pasted: dict[str, PastedContent] = {}
    stored = raw.get("pastedContents")
    if isinstance(stored, dict):
        for key, item in stored.items():
            if isinstance(item, dict):
                pasted[str(key)] = PastedContent(
                    _str(item.get("type")), _str(item.get("content")), _str(item.get("contentHash"))
                )
    timestamp = raw.get("timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
        timestamp = None
    return HistoryLine(
        display=_str(raw.get("display")),
        pasted=pasted,
        timestamp=timestamp,
        project=_str(raw.get("project")),
        session_id=_str(raw.get("sessionId")),
        line=line,
    )
