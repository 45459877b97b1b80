"""``/instructions``: edit what this conversation adds to the system prompt.

A plain text area prefilled with the conversation's instructions; ctrl+s
keeps them (empty: none), Esc leaves them as they were. The text is the
person's own (and the disk's): shown in a TextArea, never parsed as markup.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from selfref_tui.safety import content, name_line


class InstructionsEditor(ModalScreen[str | None]):
    """Dismisses with the edited text (ctrl+s), or None (Esc)."""

    DEFAULT_CSS = """
    InstructionsEditor { align: center middle; background: $background 60%; }
    InstructionsEditor > #dialog {
        width: 90;
        max-width: 100%;
        height: 70%;
        min-height: 12;
        padding: 0 1;
        border: round $primary;
        border-title-color: $text-primary;
        background: $surface;
    }
    InstructionsEditor #about { color: $text-muted; height: auto; }
    InstructionsEditor TextArea { height: 1fr; margin: 1 0; }
    InstructionsEditor #hint { color: $text-muted; height: 1; }
    InstructionsEditor #error { color: $text-error; height: auto; }
    """

    # Not a priority binding: ctrl+s reaches the text area after the keys typed
    # before it, so a fast burst of typing ending in ctrl+s is saved whole.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", id="instructions.save"),
        Binding("escape", "cancel", "Cancel", id="instructions.cancel"),
    ]

    def __init__(self, text: str, key: str, error: str = "") -> None:
        """``error``: why the text was not kept (the app opens the editor again with it,
        and says why here: a notice would wait until the editor closes)."""
        super().__init__()
        self.text = text
        self.key = key
        self.error = error

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = content(f"Instructions for {name_line(self.key)}", line=True)
            yield Static(
                "Added to the system prompt of every request in this conversation "
                "(not to others). Leave it empty for none.",
                id="about",
            )
            yield TextArea(self.text, id="instructions", soft_wrap=True, show_line_numbers=False)
            if self.error:
                yield Static(content(self.error), id="error")
            yield Static(
                Content.assemble(
                    ("ctrl+s", "bold $text-primary"), " save   ",
                    ("esc", "bold $text-primary"), " cancel"
                ),
                id="hint",
            )

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        area.cursor_blink = False
        area.focus()
        area.move_cursor(area.document.end)

    def action_save(self) -> None:
        self.dismiss(self.query_one(TextArea).text)

    def action_cancel(self) -> None:
        self.dismiss(None)
