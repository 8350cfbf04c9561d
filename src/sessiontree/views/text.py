"""Text from transcripts, made safe to print on a terminal.

A transcript holds whatever a tool printed or a user pasted: colour codes, a title-setting
or screen-clearing escape sequence, a carriage return that overwrites the line, a bidi
override that makes text read other than it is. Shown raw, they act on the terminal.
:func:`printable` shows each as a visible escape instead (``\\x1b``, ``\\x0d``,
``\\u202e``); newlines and tabs stay, for the renderers that lay text out.

A file name that is not UTF-8 cannot be written as JSON at all: :func:`utf8_safe` shows
its stray bytes as U+FFFD.
"""

from __future__ import annotations

import re
from typing import Any

from sessiontree.model.records import one_line
from sessiontree.storage.layout import utf8_name

#: C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides
#: and isolates.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every character that acts on a terminal shown as an escape."""
    return _UNPRINTABLE.sub(_escaped, text)


def printable_line(text: str, limit: int) -> str:
    """:func:`printable` text on one line, cut to ``limit``
    (:func:`~sessiontree.model.records.one_line`): controls shown escaped before the
    whitespace is folded, so that a carriage return shows as ``\\x0d``."""
    return one_line(text, limit, shown=printable)


def utf8_safe(value: Any) -> Any:
    """``value`` (JSON-shaped: dicts, lists, strings, numbers) with every string, keys
    included, made :func:`~sessiontree.storage.layout.utf8_name`: what a JSON encoder
    can write."""
    if isinstance(value, str):
        return utf8_name(value)
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [utf8_safe(v) for v in value]
    return value
