"""A one-key yes/no question for destructive actions."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from selfref_tui.safety import content


class ConfirmScreen(ModalScreen[bool]):
    """``y`` answers yes; any other key answers no, so a stray key is always safe."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; background: $background 60%; }
    ConfirmScreen > #dialog {
        width: auto;
        max-width: 70;
        height: auto;
        padding: 1 2;
        border: round $primary;
        border-title-color: $text-primary;
        background: $surface;
    }
    ConfirmScreen #question { text-style: bold; width: auto; max-width: 64; }
    ConfirmScreen #keys { color: $text-muted; margin-top: 1; width: auto; }
    """

    def __init__(
        self, question: str, *, title: str = "Confirm", yes_keys: tuple[str, ...] = ("y",)
    ) -> None:
        super().__init__()
        self.question = question
        self.dialog_title = title
        self.yes_keys = yes_keys

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = content(self.dialog_title, line=True)
            yield Static(content(self.question), id="question")
            yield Static(
                Content.assemble(
                    (" / ".join(self.yes_keys), "bold $text-primary"),
                    " yes   ",
                    ("any other key", "bold"),
                    " no",
                ),
                id="keys",
            )

    async def _on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        self.dismiss(event.key in self.yes_keys)
