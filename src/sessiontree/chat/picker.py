"""The session picker of ``chat -r`` (no SESSION) and ``/resume``.

The interface ``cli/chat.py`` calls::

    from sessiontree.chat.picker import pick_session

    path = pick_session(layout, cwd=cwd, env=os.environ)   # a transcript Path, or None (cancelled)

The sessions of ``cwd``'s project, newest first, with title, age, size and first prompt;
arrow keys move, typing filters, Enter picks, Esc or Ctrl+C cancels. No session at all:
``NotFound`` is raised before anything is drawn.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sessiontree.catalog.index import SessionInfo, list_sessions
from sessiontree.chat.menu import drawn_rows, list_keys
from sessiontree.errors import NotFound, Refused
from sessiontree.storage.layout import Layout
from sessiontree.views.text import printable_line
from sessiontree.views.times import parse_moment


def age(moment: str | None, *, now: datetime) -> str:
    """How long ago, short: ``just now``, ``5m ago``, ``3h ago``, ``2d ago``, ``6w ago``."""
    when = parse_moment(moment)
    if when is None:
        return "?"
    seconds = max(0, int((now - when).total_seconds()))
    for unit, size in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return "just now"


def size(n_bytes: int) -> str:
    """``812B``, ``4.1KB``, ``2.3MB``."""
    value = float(n_bytes)
    for unit in ("B", "KB", "MB"):
        if value < 1024 or unit == "MB":
            return f"{int(value)}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}GB"  # pragma: no cover - the loop returns


@dataclass
class PickerModel:
    """The picker's state: every session, the filter typed, the row selected (an index
    into :meth:`visible`). Pure: the prompt_toolkit layer only feeds it keys."""

    sessions: Sequence[SessionInfo]
    query: str = ""
    selected: int = 0
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def visible(self) -> list[SessionInfo]:
        """The sessions whose title, first prompt, last prompt or id hold every word of
        the filter (case-insensitive), in listing order (newest first)."""
        words = self.query.casefold().split()
        if not words:
            return list(self.sessions)
        shown = []
        for info in self.sessions:
            hay = " ".join(
                s or "" for s in (info.title, info.firstPrompt, info.lastPrompt, info.sessionId)
            ).casefold()
            if all(w in hay for w in words):
                shown.append(info)
        return shown

    def _clamp(self) -> None:
        count = len(self.visible())
        self.selected = min(max(self.selected, 0), max(count - 1, 0))

    def move(self, step: int) -> None:
        """Up (-1) or down (+1), stopping at the ends."""
        self.selected += step
        self._clamp()

    def type(self, text: str) -> None:
        """Characters typed: they extend the filter; the first row is selected again."""
        self.query += text
        self.selected = 0

    def backspace(self) -> None:
        self.query = self.query[:-1]
        self.selected = 0

    def chosen(self) -> SessionInfo | None:
        """The selected session; None when the filter leaves none."""
        shown = self.visible()
        return shown[self.selected] if shown else None

    def row(self, info: SessionInfo, width: int = 100) -> str:
        """One line: title, age, size, first prompt (the title is the first prompt when
        the session has none of its own)."""
        title = info.customTitle or info.aiTitle or info.title or "(untitled)"
        head = f"{printable_line(title, 40):<40}  {age(info.updatedAt, now=self.now):>8}  "
        head += f"{size(info.sizeBytes):>7}  "
        return head + printable_line(info.firstPrompt or "", max(10, width - len(head)))

    def lines(self, width: int = 100, height: int = 15) -> list[tuple[bool, str]]:
        """The rows to draw, (selected, text), scrolled to keep the selection in view."""
        shown = self.visible()
        start = max(0, min(self.selected - height // 2, len(shown) - height))
        return [
            (start + i == self.selected, self.row(info, width))
            for i, info in enumerate(shown[start : start + height])
        ]


def project_sessions(
    layout: Layout, cwd: str, *, exclude: str | None = None, cache_file: Path | None = None
) -> list[SessionInfo]:
    """The sessions of ``cwd``'s project, newest first (``exclude``: a session id left out,
    the one running)."""
    dirs = layout.find_project_dirs(cwd)
    rows = list_sessions(layout, project_dirs=dirs, cache_file=cache_file) if dirs else []
    return [r for r in rows if r.sessionId != exclude]


def pick_session(
    layout: Layout,
    *,
    cwd: str,
    env: Mapping[str, str],
    exclude: str | None = None,
    cache_file: Path | None = None,
) -> Path | None:
    """Show the picker; the transcript picked, or None (Esc, Ctrl+C). Raises
    :class:`NotFound` when the project has no session to pick, :class:`Refused` when
    stdin is no terminal."""
    sessions = project_sessions(layout, cwd, exclude=exclude, cache_file=cache_file)
    if not sessions:
        missing = NotFound("session", cwd)
        other = "other " if exclude else ""
        missing.args = (f"no {other}session of {cwd} to resume",)
        raise missing
    try:
        tty = sys.stdin is not None and sys.stdin.isatty()
    except ValueError:
        tty = False
    if not tty:
        raise Refused("the session picker needs a terminal; name the session: chat -r SESSION")
    model = PickerModel(sessions)
    info = run_picker(model, env=env)
    return None if info is None else Path(info.path)


def run_picker(model: PickerModel, *, env: Mapping[str, str]) -> SessionInfo | None:
    """The prompt_toolkit face of :class:`PickerModel` (in the terminal, not full screen)."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.key_binding import KeyPressEvent
    from prompt_toolkit.keys import Keys
    from prompt_toolkit.layout import HSplit, Window
    from prompt_toolkit.layout import Layout as PtLayout
    from prompt_toolkit.layout.controls import FormattedTextControl
    from prompt_toolkit.output.color_depth import ColorDepth

    picked: list[SessionInfo | None] = [None]

    def chosen() -> bool:
        picked[0] = model.chosen()
        return picked[0] is not None

    bindings = list_keys(model.move, chosen, lambda: picked.__setitem__(0, None), page=10)

    @bindings.add(Keys.Backspace)
    def _backspace(event: KeyPressEvent) -> None:
        model.backspace()

    @bindings.add(Keys.Any)
    def _type(event: KeyPressEvent) -> None:
        text = event.data
        if text and text.isprintable():
            model.type(text)

    def header() -> FormattedText:
        shown = len(model.visible())
        return FormattedText(
            [
                ("bold", "Resume a session"),
                ("", f"  ({shown} of {len(model.sessions)})  filter: "),
                ("underline", model.query or " "),
                ("", "   ↑↓ move · type to filter · Enter picks · Esc cancels"),
            ]
        )

    def body() -> FormattedText:
        from prompt_toolkit.application.current import get_app

        width = get_app().output.get_size().columns
        rows = model.lines(width=max(40, width - 3))
        if not rows:
            return FormattedText([("", "  no session matches the filter")])
        return FormattedText(drawn_rows(rows))

    app: Application[None] = Application(
        layout=PtLayout(
            HSplit(
                [
                    Window(FormattedTextControl(header), height=1),
                    Window(FormattedTextControl(body)),
                ]
            )
        ),
        key_bindings=bindings,
        full_screen=False,
        color_depth=ColorDepth.MONOCHROME if env.get("NO_COLOR") else None,
        erase_when_done=True,
    )
    app.run()
    return picked[0]
