"""The find bar: one line above the input to find text in the conversation on screen.

It only asks; the transcript finds, marks and scrolls (``Transcript.find``).
Typing finds as one types, at the newest occurrence (the bottom, where a
chat is read); Enter or ↑ goes on to the one above it, ↓ or shift+Enter
back down, wrapping around; Esc closes the bar and takes the marks away. The
count ("3 of 17", counted from the top) is set by the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, Static


class FindBar(Horizontal):
    """Messages up: :class:`Changed` (the text), :class:`Step` (next/previous), :class:`Closed`."""

    DEFAULT_CSS = """
    FindBar {
        height: 1;
        margin: 0 1;
        background: $boost;
        display: none;
    }
    FindBar > #find-label { width: auto; padding: 0 1; color: $text-muted; }
    FindBar > Input {
        width: 1fr; height: 1; border: none; padding: 0; background: transparent;
    }
    FindBar > Input:focus { border: none; }
    FindBar > #find-count { width: auto; min-width: 10; padding: 0 1; color: $text-muted; }
    FindBar > #find-keys { width: auto; padding: 0 1; color: $text-muted; }
    FindBar.-none > #find-count { color: $text-error; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="find.close", tooltip="Close the find bar"),
        Binding("up", "step(-1)", "Older", show=False, id="find.older"),
        Binding("down,shift+enter", "step(1)", "Newer", show=False, id="find.newer"),
    ]

    #: "3 of 17", "no match", "" (nothing typed)
    count: reactive[str] = reactive("")

    @dataclass
    class Changed(Message):
        query: str

    @dataclass
    class Step(Message):
        query: str
        step: int

    @dataclass
    class Closed(Message):
        pass

    def compose(self) -> ComposeResult:
        yield Static("Find", id="find-label")
        yield Input(placeholder="text in this conversation", id="find-input")
        yield Static("", id="find-count")
        yield Static(
            Content.assemble(("enter/↑", "bold"), " older  ", ("↓", "bold"), " newer  ",
                             ("esc", "bold"), " close"),
            id="find-keys",
        )

    @property
    def field(self) -> Input:
        return self.query_one("#find-input", Input)

    @property
    def query_text(self) -> str:
        return self.field.value

    def open(self, text: str | None = None) -> None:
        """Show the bar with the cursor in it (``text`` replaces what it held)."""
        self.display = True
        field = self.field
        if self.app.is_headless:
            field.cursor_blink = False
        if text is not None:
            field.value = text
        field.focus()
        field.action_end()

    def watch_count(self, count: str) -> None:
        self.query_one("#find-count", Static).update(count)
        self.set_class(count == "no match", "-none")

    def on_resize(self) -> None:
        # At 80 columns the key hints would leave the field too little room.
        self.query_one("#find-keys").display = self.size.width >= 90

    @on(Input.Changed, "#find-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(event.value))

    @on(Input.Submitted, "#find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Step(event.value, -1))

    def action_step(self, step: int) -> None:
        self.post_message(self.Step(self.field.value, step))

    def action_close(self) -> None:
        self.display = False
        self.post_message(self.Closed())
