"""A list to pick one line from, in the terminal: ↑/↓ (or the line's number, up to 9)
and Enter; Esc or Ctrl+C cancels. :class:`MenuModel` is the state (pure);
:func:`choose` the thin prompt_toolkit face over it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # prompt_toolkit is imported only when a list is shown
    from prompt_toolkit.key_binding import KeyBindings


@dataclass
class MenuModel:
    """Lines to choose from and the one selected."""

    options: Sequence[str]
    selected: int = 0

    def __post_init__(self) -> None:
        self.move(0)

    def move(self, step: int) -> None:
        """Up (-1) or down (+1), stopping at the ends."""
        last = max(len(self.options) - 1, 0)
        self.selected = min(max(self.selected + step, 0), last)

    def number(self, digit: int) -> bool:
        """Select option ``digit`` (1-based); False when there is none."""
        if 1 <= digit <= len(self.options):
            self.selected = digit - 1
            return True
        return False

    def lines(self, height: int = 20) -> list[tuple[bool, str]]:
        """The lines to draw, (selected, text), numbered, scrolled to keep the selection
        in view."""
        start = max(0, min(self.selected - height // 2, len(self.options) - height))
        return [
            (start + i == self.selected, f"{start + i + 1}. {text}")
            for i, text in enumerate(self.options[start : start + height])
        ]


def choose(
    title: str,
    options: Sequence[str],
    *,
    selected: int = 0,
    no_color: bool = False,
    footer: str = "↑↓ move · Enter selects · Esc cancels",
) -> int | None:
    """Show ``options`` under ``title``; the index chosen, or None (Esc, Ctrl+C)."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.key_binding import KeyPressEvent
    from prompt_toolkit.layout import HSplit, Window
    from prompt_toolkit.layout import Layout as PtLayout
    from prompt_toolkit.layout.controls import FormattedTextControl
    from prompt_toolkit.output.color_depth import ColorDepth

    model = MenuModel(options, selected)
    result: list[int | None] = [None]

    def chosen() -> bool:
        result[0] = model.selected
        return True

    bindings = list_keys(model.move, chosen, lambda: result.__setitem__(0, None))

    for digit in range(1, min(len(options), 9) + 1):

        @bindings.add(str(digit))
        def _number(event: KeyPressEvent, digit: int = digit) -> None:
            if model.number(digit):
                result[0] = model.selected
                event.app.exit()

    def body() -> FormattedText:
        parts = [("bold", title), ("", "\n"), *drawn_rows(model.lines()), ("", "\n")]
        parts.append(("italic", footer))
        return FormattedText(parts)

    app: Application[None] = Application(
        layout=PtLayout(HSplit([Window(FormattedTextControl(body), wrap_lines=False)])),
        key_bindings=bindings,
        full_screen=False,
        color_depth=ColorDepth.MONOCHROME if no_color else None,
        erase_when_done=True,
    )
    app.run()
    return result[0]


def list_keys(
    move: Callable[[int], None],
    enter: Callable[[], bool],
    cancel: Callable[[], None],
    *,
    page: int | None = None,
) -> KeyBindings:
    """The keys of a list in the terminal: ↑/↓ (Ctrl+P/N) ``move`` by one, PageUp/PageDown
    by ``page`` (None: not bound); Enter leaves when ``enter()`` says so; Esc and Ctrl+C
    ``cancel`` and leave."""
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.keys import Keys

    bindings = KeyBindings()
    steps: list[tuple[tuple[Keys, ...], int]] = [
        ((Keys.Up, Keys.ControlP), -1),
        ((Keys.Down, Keys.ControlN), 1),
    ]
    if page is not None:
        steps += [((Keys.PageUp,), -page), ((Keys.PageDown,), page)]
    for keys, step in steps:
        for key in keys:
            bindings.add(key)(lambda event, step=step: move(step))

    @bindings.add(Keys.Enter)
    def _enter(event: KeyPressEvent) -> None:
        if enter():
            event.app.exit()

    @bindings.add(Keys.Escape, eager=True)
    @bindings.add(Keys.ControlC)
    def _cancel(event: KeyPressEvent) -> None:
        cancel()
        event.app.exit()

    return bindings


def drawn_rows(rows: Sequence[tuple[bool, str]]) -> list[tuple[str, str]]:
    """Rows as a list draws them, one a line: the selected one reversed, behind ``❯``."""
    parts: list[tuple[str, str]] = []
    for selected, text in rows:
        parts.append(("reverse" if selected else "", ("❯ " if selected else "  ") + text))
        parts.append(("", "\n"))
    return parts[:-1]
