"""A list to pick one line from, in the terminal: ↑/↓ (or the line's number, up to 9)
and Enter; Esc or Ctrl+C cancels. :class:`MenuModel` is the state (pure);
:func:`choose` the thin prompt_toolkit face over it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.keys import Keys
    from prompt_toolkit.layout import HSplit, Window
    from prompt_toolkit.layout import Layout as PtLayout
    from prompt_toolkit.layout.controls import FormattedTextControl
    from prompt_toolkit.output.color_depth import ColorDepth

    model = MenuModel(options, selected)
    result: list[int | None] = [None]
    bindings = KeyBindings()

    @bindings.add(Keys.Up)
    @bindings.add(Keys.ControlP)
    def _up(event: KeyPressEvent) -> None:
        model.move(-1)

    @bindings.add(Keys.Down)
    @bindings.add(Keys.ControlN)
    def _down(event: KeyPressEvent) -> None:
        model.move(1)

    @bindings.add(Keys.Enter)
    def _enter(event: KeyPressEvent) -> None:
        result[0] = model.selected
        event.app.exit()

    @bindings.add(Keys.Escape, eager=True)
    @bindings.add(Keys.ControlC)
    def _cancel(event: KeyPressEvent) -> None:
        result[0] = None
        event.app.exit()

    for digit in range(1, min(len(options), 9) + 1):

        @bindings.add(str(digit))
        def _number(event: KeyPressEvent, digit: int = digit) -> None:
            if model.number(digit):
                result[0] = model.selected
                event.app.exit()

    def body() -> FormattedText:
        parts: list[tuple[str, str]] = [("bold", title), ("", "\n")]
        for is_selected, text in model.lines():
            parts.append(("reverse" if is_selected else "", ("❯ " if is_selected else "  ") + text))
            parts.append(("", "\n"))
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
