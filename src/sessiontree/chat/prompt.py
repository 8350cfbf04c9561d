"""The prompt box (prompt_toolkit): history, pastes, multi-line input and the keys.

- Enter sends; Alt+Enter (Esc then Enter), Ctrl+J, or a ``\\`` before the cursor then
  Enter start a new line.
- ↑/↓ walk ``history.jsonl`` (this project's prompts first, :mod:`sessiontree.chat.recall`),
  Ctrl+R searches it (prompt_toolkit's reverse search).
- A bracketed paste goes through :class:`~sessiontree.chat.pastes.PasteBook`: a long one
  becomes ``[Pasted text #N +L lines]``.
- Esc Esc on an empty input asks for the rewind menu (on text: clears it).
- Ctrl+C clears the text; on an empty input, asks to press it again, and a second one
  exits. Ctrl+D on an empty input exits.

:meth:`PromptBox.read` returns what happened as an :class:`Entry`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from sessiontree.chat.commands import complete_commands
from sessiontree.chat.pastes import PasteBook
from sessiontree.chat.recall import Recalled

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import CompleteEvent, Completion
    from prompt_toolkit.document import Document
    from prompt_toolkit.key_binding import KeyBindings

EntryKind = Literal["text", "rewind", "exit"]


@dataclass(frozen=True)
class Entry:
    """What the prompt box gave: text sent (with the pastes its placeholders stand for),
    the rewind menu asked for (Esc Esc), or exit (Ctrl+D, Ctrl+C twice)."""

    kind: EntryKind
    text: str = ""
    pastes: dict[int, str] | None = None


class PromptBox:
    """One prompt_toolkit session for the whole chat (its history lives across turns)."""

    def __init__(self, recalled: Iterable[Recalled], *, no_color: bool = False) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import Completer
        from prompt_toolkit.history import History
        from prompt_toolkit.output.color_depth import ColorDepth

        recalled = list(recalled)
        self.pastes = PasteBook()
        self._recalled_pastes = {r.display: r.pastes for r in reversed(recalled) if r.pastes}
        self._action: EntryKind = "text"
        self._ctrl_c_armed = False
        self.hint = ""

        class _Recall(History):
            def load_history_strings(self) -> Iterator[str]:
                yield from (r.display for r in recalled)

            def store_string(self, string: str) -> None:
                pass  # Session.append_prompt writes history.jsonl

        class _Commands(Completer):
            def get_completions(
                self, document: Document, complete_event: CompleteEvent
            ) -> Iterator[Completion]:
                from prompt_toolkit.completion import Completion

                text = document.text_before_cursor
                if text.startswith("/") and " " not in text and "\n" not in text:
                    for name in complete_commands(text[1:]):
                        yield Completion("/" + name, start_position=-len(text))

        self.session: PromptSession[str] = PromptSession(
            history=_Recall(),
            multiline=True,
            key_bindings=self._bindings(),
            completer=_Commands(),
            complete_while_typing=True,
            enable_history_search=False,
            prompt_continuation=lambda width, line, wrap: " " * (width - 2) + ". ",
            bottom_toolbar=lambda: self.hint or None,
            color_depth=ColorDepth.MONOCHROME if no_color else None,
            erase_when_done=False,
        )

    def _bindings(self) -> KeyBindings:
        from prompt_toolkit.filters import Condition, has_completions, is_searching
        from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
        from prompt_toolkit.keys import Keys

        bindings = KeyBindings()
        empty = Condition(lambda: not self.session.default_buffer.text)

        def disarm() -> None:
            self._ctrl_c_armed = False
            self.hint = ""

        @bindings.add(Keys.Enter, filter=~has_completions & ~is_searching)
        def _send(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            before = buffer.document.text_before_cursor
            if before.endswith("\\"):
                buffer.delete_before_cursor(1)
                buffer.insert_text("\n")
                return
            self._action = "text"
            disarm()
            buffer.validate_and_handle()

        @bindings.add(Keys.Enter, filter=has_completions & ~is_searching)
        def _take_completion(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            state = buffer.complete_state
            if state is not None and state.current_completion is not None:
                buffer.apply_completion(state.current_completion)
            elif state is not None and state.completions:
                buffer.apply_completion(state.completions[0])
            buffer.cancel_completion()
            self._action = "text"
            disarm()
            buffer.validate_and_handle()

        @bindings.add(Keys.Escape, Keys.Enter)
        @bindings.add(Keys.ControlJ)
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @bindings.add(Keys.Escape, Keys.Escape, filter=~is_searching)
        def _rewind(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()
                return
            self._action = "rewind"
            disarm()
            event.app.exit(result="")

        @bindings.add(Keys.ControlC, filter=~is_searching)
        def _interrupt(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()
                disarm()
                return
            if self._ctrl_c_armed:
                self._action = "exit"
                disarm()
                event.app.exit(result="")
                return
            self._ctrl_c_armed = True
            self.hint = "Press Ctrl+C again to exit"

        @bindings.add(Keys.ControlD, filter=empty)
        def _eof(event: KeyPressEvent) -> None:
            self._action = "exit"
            disarm()
            event.app.exit(result="")

        @bindings.add(Keys.BracketedPaste)
        def _paste(event: KeyPressEvent) -> None:
            disarm()
            rows = event.app.output.get_size().rows
            event.current_buffer.insert_text(self.pastes.paste(event.data, rows=rows))

        @bindings.add(Keys.Any)
        def _type(event: KeyPressEvent) -> None:
            disarm()
            event.current_buffer.insert_text(event.data * event.arg)

        return bindings

    def read(self, *, default: str = "", typed: str = "") -> Entry:
        """Wait for the next entry; ``default`` is put in the input first (a rewound
        prompt back for editing); ``typed``: keys typed while the last turn ran, handled
        first as if typed now (text, Enter, arrows…)."""
        self._action = "text"
        text = self.session.prompt(
            "> ", default=default, pre_run=(lambda: self._feed(typed)) if typed else None
        )
        if self._action != "text":
            return Entry(self._action)
        recalled = self._recalled_pastes.get(text)
        if recalled:
            self.pastes.remember(recalled)
        return Entry("text", text, self.pastes.for_prompt(text))

    def _feed(self, typed: str) -> None:
        from prompt_toolkit.input.vt100_parser import Vt100Parser
        from prompt_toolkit.key_binding.key_processor import KeyPress

        keys: list[KeyPress] = []
        parser = Vt100Parser(keys.append)
        parser.feed_and_flush(typed)
        processor = self.session.app.key_processor
        processor.feed_multiple(keys)
        processor.process_keys()

    def remember(self, text: str) -> None:
        """A prompt sent some other way (a rewound one put back) for ↑."""
        self.session.history.append_string(text)
