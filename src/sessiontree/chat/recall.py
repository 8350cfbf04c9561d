"""What ↑ and Ctrl+R walk: the prompts of ``history.jsonl``, this project's first.

Newest first: every prompt typed in this project (newest to oldest), then those of other
projects. A prompt typed twice in a row is offered once. Each keeps the pastes its
placeholders stand for, so a recalled prompt sends them again. Pure over what
``history.log`` reads; the prompt_toolkit ``History`` is in :mod:`sessiontree.chat.prompt`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sessiontree.history.log import iter_history_lines, read_paste
from sessiontree.storage.layout import Layout


@dataclass(frozen=True)
class Recalled:
    """One prompt ↑ offers: what the box shows, and the pastes of its placeholders."""

    display: str
    pastes: dict[int, str] = field(default_factory=dict)


def order_for_recall(
    entries: list[tuple[str, str | None, dict[int, str]]], project: str
) -> list[Recalled]:
    """``entries`` (display, project, pastes) in file order -> newest first, ``project``'s
    first; consecutive duplicates within each group dropped; blank displays skipped."""
    mine: list[Recalled] = []
    others: list[Recalled] = []
    for display, where, pastes in reversed(entries):
        if not display.strip():
            continue
        group = mine if where == project else others
        if group and group[-1].display == display:
            continue
        group.append(Recalled(display, pastes))
    return mine + others


def load_recall(layout: Layout, project: str) -> list[Recalled]:
    """:func:`order_for_recall` over ``history.jsonl`` (none when it is missing)."""
    entries: list[tuple[str, str | None, dict[int, str]]] = []
    for line in iter_history_lines(layout):
        if line.display is None:
            continue
        pastes = line.paste_texts(lambda h: read_paste(layout, h)) if line.pasted else {}
        entries.append((line.display, line.project, pastes))
    return order_for_recall(entries, project)
