"""Pick one of a few rows: the actions on a message, or the message to rewind to.

One dialog for every short list the person picks from, so each list is data
(rows of id and label) and the keys are the same everywhere: the arrows and
Enter choose, Esc cancels (dismisses with None). Labels quote messages and
are shown inert (``safety.content``), never parsed as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from selfref_tui.safety import content, inert_line
from selfref_tui.ui.screens.short import BREAKPOINTS, rows_left


class ChoiceList(ModalScreen[str | None]):
    """``rows``: (id, label); a row whose id starts with ``-`` is shown but not chosen."""

    DEFAULT_CSS = """
    ChoiceList { align: center middle; background: $background 60%; }
    ChoiceList > #dialog {
        width: 76;
        max-width: 95%;
        height: auto;
        max-height: 80%;
        padding: 1 2;
        border: round $primary;
        border-title-color: $text-primary;
        background: $surface;
    }
    ChoiceList #about { color: $text-muted; margin-bottom: 1; height: auto; }
    /* what the dialog (80% of the screen) has left under its words and over its hint: 20
       rows ran past it at 80x24 */
    ChoiceList OptionList { height: auto; max-height: 33vh; }
    /* as the conversation switcher's: Textual's strong cursor colour under the theme's
       text was 2.4:1 on gruvbox */
    ChoiceList OptionList > .option-list--option-highlighted,
    ChoiceList OptionList:focus > .option-list--option-highlighted {
        background: $primary 30%;
        color: $text;
        text-style: none;
    }
    ChoiceList #hint { color: $text-muted; margin-top: 1; }
    /* under 24 rows (short.py): the about line one line, no blank lines, and the list
       given at most what is left of the screen's height (_fit) */
    ChoiceList.-short > #dialog { max-height: 100%; padding: 0 1; }
    ChoiceList.-short #dialog > #about { margin-bottom: 0; height: 1; text-wrap: nowrap;
                                         text-overflow: ellipsis; }
    ChoiceList.-short #dialog > #hint { margin-top: 0; }
    """

    VERTICAL_BREAKPOINTS = BREAKPOINTS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="choice_list.cancel"),
    ]

    def __init__(self, title: str, rows: Sequence[tuple[str, str]], *, about: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.rows = list(rows)
        self.about = about

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = content(self.title_text, line=True)
            if self.about:
                yield Static(content(self.about), id="about")
            yield OptionList(*[
                Option(content(inert_line(label, 200)), id=row_id,
                       disabled=row_id.startswith("-"))
                for row_id, label in self.rows
            ])
            yield Static(Content.assemble(
                ("↑↓", "bold $text-primary"), " choose   ",
                ("enter", "bold $text-primary"), " do it   ",
                ("esc", "bold $text-primary"), " cancel"), id="hint")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.focus()
        first = next((i for i, (row_id, _) in enumerate(self.rows)
                      if not row_id.startswith("-")), None)
        if first is not None:
            options.highlighted = first
        self.call_after_refresh(self._fit)

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """Under 24 rows the list gets at most what the about line and the keys leave of
        the screen (its 33vh left it two rows at 60x20); from 24 up, the CSS's height."""
        options = self.query_one(OptionList)
        if not self.has_class("-short"):
            options.styles.max_height = None
            return
        room = rows_left(self.query_one("#dialog"), options, self.size.height)
        options.styles.max_height = max(3, room)
        options.scroll_to_highlight()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
