"""Pasted text in the prompt box (pure; no terminal).

As client 2.1.328 does it: a paste longer than 800 characters, or with more newlines
than ``min(rows - 10, 2)`` (clamped at 0), is not put into the input; a placeholder
``[Pasted text #N +L lines]`` is (``L`` = its newlines; ``[Pasted text #N]`` with none),
and the text is kept, numbered from 1 in the session. A shorter paste goes in as typed.
On submit, the placeholders still in the text select the pastes sent with it
(``Session.append_prompt(display, pastes=...)`` stores them as the client does).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from sessiontree.model.builders.history import find_paste_references, paste_placeholder

#: A paste longer than this many characters becomes a placeholder.
PASTE_CHARS = 800

_LINE_END = re.compile(r"\r\n|\r|\n")


def newline_limit(rows: int) -> int:
    """How many newlines a paste may have and still go into the input as typed."""
    return max(0, min(rows - 10, 2))


def is_placeholder_paste(text: str, *, rows: int) -> bool:
    """True when the client would show ``text`` pasted as a placeholder."""
    newlines = len(_LINE_END.findall(text))
    return len(text) > PASTE_CHARS or newlines > newline_limit(rows)


@dataclass
class PasteBook:
    """The pastes of one session's prompt box: their numbers and texts."""

    texts: dict[int, str] = field(default_factory=dict)

    def next_number(self) -> int:
        return max(self.texts, default=0) + 1

    def paste(self, text: str, *, rows: int) -> str:
        """What a paste of ``text`` inserts into the input: a placeholder (the text kept
        under its number) or the text itself (line ends as ``\\n``)."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if not is_placeholder_paste(text, rows=rows):
            return text
        number = self.next_number()
        self.texts[number] = text
        return paste_placeholder(number, text)

    def remember(self, pastes: Mapping[int, str]) -> None:
        """Pastes of a recalled history line: kept so its placeholders send them again
        (a number taken already keeps its own text)."""
        for number, text in pastes.items():
            self.texts.setdefault(number, text)

    def for_prompt(self, display: str) -> dict[int, str]:
        """The pastes whose placeholders ``display`` still holds."""
        return {n: self.texts[n] for n in find_paste_references(display) if n in self.texts}


#: A paste as the transcript stores it in a prompt (``history.pastes.build_prompt_text``).
_STORED_PASTE = re.compile(
    r'\n\n<pasted_content id="(?P<tag>[0-9a-f]+)">\n(?P<text>.*?)'
    r'\n</pasted_content id="(?P=tag)">\n\n?',
    re.DOTALL,
)


def fold_stored_pastes(text: str, *, first_number: int = 1) -> tuple[str, dict[int, str]]:
    """A stored prompt back as the box shows it: each wrapped paste replaced by its
    placeholder, numbered from ``first_number``; the pastes by number (their trailing
    newline, which the stored form drops, is not counted in ``+L lines``). Sent again
    (``Session.append_prompt(display, pastes=...)``), it is stored as it was."""
    pastes: dict[int, str] = {}

    def fold(match: re.Match[str]) -> str:
        number = first_number + len(pastes)
        pastes[number] = match.group("text")
        return paste_placeholder(number, match.group("text"))

    return _STORED_PASTE.sub(fold, text), pastes
