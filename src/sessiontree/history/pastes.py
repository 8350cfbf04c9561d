"""The write side of ``history.jsonl``: a prompt the user typed, its pastes, the paste cache.

As client 2.1.328 writes them (fixture 12-big-paste):

- ``history.jsonl`` gets ``{display, pastedContents, timestamp, project, sessionId}``;
  ``display`` keeps the ``[Pasted text #N +L lines]`` placeholders. A paste longer than
  1,024 characters is stored in ``paste-cache/<sha256(text)[:16]>.txt`` (the text's
  bytes, no newline added) and referenced as ``{"id", "type": "text", "contentHash"}``;
  a shorter one is inline (``content``).
- The transcript's user record (and the request) holds the prompt with each paste put
  in place of its placeholder, wrapped as
  ``\\n\\n<pasted_content id="X">\\n<text>\\n</pasted_content id="X">\\n\\n``, where ``X`` is
  ``sha256(sessionId).hexdigest()[:4]`` (``3957`` in fixture 12).
  A paste that ends with a newline gets no second one before the closing tag, and text
  that would open or close a ``pasted_content`` tag inside a paste is neutralized as
  ``<\\pasted_content``, as the client does.

Headless (``-p``) prompts are not written to history by the client: callers decide.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping

from sessiontree.model.builders.envelope import JsonDict
from sessiontree.model.builders.history import (
    build_history_entry,
    build_pasted_text,
    expand_pastes,
    is_large_paste,
)
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.jsonl import append_records
from sessiontree.storage.layout import Layout, paste_hash

Clock = Callable[[], float]

# An opening or closing pasted_content tag inside pasted text (ASCII spelling; the
# client also catches look-alike characters): its "<" becomes "<\".
_TAG_OPENER = re.compile(r"<(?!\\)(?=\s*/?\s*pasted_content(?![A-Za-z0-9_-]))", re.IGNORECASE)


def build_paste_tag_id(session_id: str) -> str:
    """The ``id`` of a session's ``<pasted_content>`` tags: ``sha256(sessionId)[:4]``."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:4]


def neutralize_paste(text: str) -> str:
    """Pasted text made unable to close (or open) the tag that wraps it."""
    return _TAG_OPENER.sub("<\\\\", text)


def build_prompt_text(display: str, pastes: Mapping[int, str], *, session_id: str) -> str:
    """The prompt text the transcript stores for ``display``: every ``[Pasted text #N …]``
    with a paste in ``pastes`` replaced by that paste, wrapped in the session's tags."""
    tag = build_paste_tag_id(session_id)
    texts: dict[int, str] = {}
    for number, text in pastes.items():
        text = neutralize_paste(text)
        # The wrapper adds "\n" before the closing tag only when the text has none.
        texts[number] = text[:-1] if text.endswith("\n") else text
    return expand_pastes(display, texts, tag_ids=dict.fromkeys(texts, tag))


def write_paste(layout: Layout, text: str) -> str:
    """Store a large paste in ``paste-cache/`` (atomic, 0600); its ``contentHash``.

    A file already there with the same bytes is left as it is.
    """
    content_hash = paste_hash(text)
    target = layout.paste_path(content_hash)
    data = text.encode("utf-8")
    try:
        if target.stat().st_size == len(data) and target.read_bytes() == data:
            return content_hash
    except OSError:
        pass
    write_atomically(target, data, mode=0o600, folder_mode=0o700)
    return content_hash


def record_prompt_history(
    layout: Layout,
    *,
    display: str,
    pastes: Mapping[int, str],
    project: str,
    session_id: str,
    clock: Clock = time.time,
    fsync: bool = False,
) -> JsonDict:
    """Append one ``history.jsonl`` line for a submitted prompt (pastes stored first).

    ``pastes`` maps each placeholder number to its text; large ones go to the paste
    cache before the line that names them is written. Returns the line written.
    """
    pasted: dict[int, JsonDict] = {}
    for number, text in pastes.items():
        if is_large_paste(text):
            pasted[number] = build_pasted_text(number, text, content_hash=write_paste(layout, text))
        else:
            pasted[number] = build_pasted_text(number, text)
    entry = build_history_entry(
        display=display,
        timestamp_ms=int(clock() * 1000),
        project=project,
        session_id=session_id,
        pasted_contents=pasted,
    )
    layout.root.mkdir(parents=True, exist_ok=True)
    append_records(layout.history_path, [entry], fsync=fsync)
    return entry
