"""What to do when an export would land on an existing file."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from selfref_tui.safety import content

CHOICES = ("overwrite", "append", "cancel")


class OverwritePrompt(ModalScreen[str]):
    """Dismisses with "overwrite", "append" or "cancel" (keys o / a / c or Esc)."""

    DEFAULT_CSS = """
    OverwritePrompt { align: center middle; background: $background 60%; }
    OverwritePrompt > #dialog {
        width: 64;
        max-width: 100%;
        height: auto;
        padding: 1 2;
        border: round $warning;
        border-title-color: $text-warning;
        background: $surface;
    }
    OverwritePrompt #path { color: $text; text-style: bold; margin-bottom: 1; }
    OverwritePrompt #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    OverwritePrompt Button { margin-left: 1; min-width: 12; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "choose('overwrite')", "Overwrite", id="overwrite.overwrite"),
        Binding("a", "choose('append')", "Append", id="overwrite.append"),
        Binding("c", "choose('cancel')", "Cancel", id="overwrite.cancel"),
        Binding("escape", "choose('cancel')", "Cancel", show=False, id="overwrite.escape"),
    ]

    def __init__(self, path: str, *, append: bool = True, link_note: str = "") -> None:
        """``append=False`` (an image: bytes cannot be added to a file's end) offers
        overwrite and cancel only. ``link_note`` (``export_path.link_note``): the path is a
        link, and the write goes where it leads."""
        super().__init__()
        self.path = path
        self.append = append
        self.link_note = link_note

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "File exists"
            yield Static(content(self.path + self.link_note), id="path")
            if self.link_note.endswith("does not exist yet)"):
                question = "This is a link. Write the file where it leads?"
            else:
                what = "This is a link to a file that exists." if self.link_note else \
                    "This file already exists."
                question = f"{what} Replace it, or add this at its end?" if self.append \
                    else f"{what} Replace it?"
            yield Static(question, id="question")
            with Horizontal(id="buttons"):
                yield Button(
                    Content.from_markup("[u]O[/u]verwrite"), id="overwrite", variant="warning"
                )
                if self.append:
                    yield Button(Content.from_markup("[u]A[/u]ppend"), id="append",
                                 variant="primary")
                yield Button(Content.from_markup("[u]C[/u]ancel"), id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def action_choose(self, choice: str) -> None:
        if choice in CHOICES and (self.append or choice != "append"):
            self.dismiss(choice)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id or "cancel")
