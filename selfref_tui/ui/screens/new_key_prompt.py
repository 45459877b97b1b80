"""Name a new memory key: a suggested name, selected, that typing replaces."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from selfref_tui.safety import content, name_line


class NewKeyPrompt(ModalScreen[str | None]):
    """Enter dismisses with the name; Esc with None. A name in use is refused here."""

    DEFAULT_CSS = """
    NewKeyPrompt { align: center middle; background: $background 60%; }
    NewKeyPrompt > #dialog {
        width: 60;
        max-width: 95%;
        height: auto;
        padding: 1 2;
        border: round $primary;
        border-title-color: $text-primary;
        background: $surface;
    }
    NewKeyPrompt Input { margin: 0; }
    NewKeyPrompt #error { color: $text-error; height: auto; }
    NewKeyPrompt #hint { color: $text-muted; margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="new_key.cancel"),
    ]

    def __init__(
        self,
        suggested: str,
        *,
        existing: Collection[str] = (),
        validate: Callable[[str], object] | None = None,
        title: str = "New conversation",
    ) -> None:
        """``validate`` raises (any Exception, with a one-line message) on a bad name."""
        super().__init__()
        self.title_text = title
        self.suggested = suggested
        self.existing = set(existing)
        self._validate = validate

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = self.title_text
            yield Input(self.suggested, placeholder="a name, e.g. project-x", id="name")
            yield Static("", id="error")
            yield Static(
                Content.assemble(
                    ("enter", "bold $text-primary"), " create   ",
                    ("esc", "bold $text-primary"), " cancel"
                ),
                id="hint",
            )

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_blink = False
        field.focus()
        field.select_all()  # typing replaces the suggestion; Enter keeps it

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_one("#error", Static).update("")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        name = event.value.strip()
        error = self.query_one("#error", Static)
        if not name:
            error.update("Type a name, or press Esc to cancel.")
            return
        if name in self.existing:
            error.update(
                content(f"A conversation named {name_line(name)} exists; pick another name "
                        "(ctrl+o opens it).")
            )
            return
        if self._validate is not None:
            try:
                self._validate(name)
            except Exception as exc:  # the validator's message is meant for people
                error.update(content(str(exc)))
                return
        self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)
