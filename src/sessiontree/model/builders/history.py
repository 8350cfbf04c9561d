"""``history.jsonl`` lines and pasted texts (inline, or by hash in ``paste-cache/``)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from sessiontree.model.builders.envelope import JsonDict

#: Pastes longer than this many characters go to ``paste-cache/`` (history keeps a hash).
INLINE_PASTE_LIMIT = 1024

_PLACEHOLDER = re.compile(r"\[Pasted text #(\d+)(?: \+\d+ lines)?\]")


def paste_placeholder(paste_id: int, text: str) -> str:
    """``[Pasted text #N +L lines]`` as the prompt box shows a paste (L = its newlines)."""
    return f"[Pasted text #{paste_id} +{text.count(chr(10))} lines]"


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
    """The prompt text sent for ``display``: each placeholder replaced by its paste.

    With a ``tag_ids`` entry the paste is wrapped as the transcript stores large pastes:
    ``\\n\\n<pasted_content id="X">\\n…\\n</pasted_content id="X">\\n`` and one more
    ``\\n`` when more text follows that does not start with a newline.
    """

    def replace(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number not in texts:
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

    return _PLACEHOLDER.sub(replace, display)


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
