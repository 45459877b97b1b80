"""After a rewind: which of the files the model wrote there to put back as they were.

Every file is listed; those still as the model left them are ticked, the
person unticks what to keep (space), and Enter restores the ticked ones. A
file changed since by someone else cannot be ticked: it is never overwritten
(its row says why). Esc keeps every file as it is. Paths come from the store
and are shown inert.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, SelectionList, Static
from textual.widgets.selection_list import Selection

from selfref_tui.safety import content, inert_line
from selfref_tui.ui.screens.short import BREAKPOINTS
from selfref_tui.ui.widgets.tick_list import TickList


class RestoreFiles(ModalScreen[list[int] | None]):
    """``rows``: (path, what restoring does, why it cannot: "" when it can).

    Dismisses with the indexes of the rows to restore, or None (keep them all).
    """

    DEFAULT_CSS = """
    RestoreFiles { align: center middle; background: $background 60%; }
    RestoreFiles > #dialog {
        width: 90;
        max-width: 95%;
        height: auto;
        max-height: 85%;
        padding: 1 2;
        border: round $warning;
        border-title-color: $text-warning;
        background: $surface;
    }
    RestoreFiles #about { height: auto; margin-bottom: 1; }
    RestoreFiles TickList { height: auto; max-height: 16; }
    /* as the rewind list's: Textual's strong cursor colour under the theme's text was
       2.4:1 on gruvbox */
    RestoreFiles TickList > .option-list--option-highlighted,
    RestoreFiles TickList:focus > .option-list--option-highlighted {
        background: $primary 30%;
        color: $text;
        text-style: none;
    }
    RestoreFiles #detail { height: auto; color: $text-muted; margin-top: 1; }
    RestoreFiles #hint { height: auto; color: $text-muted; margin-top: 1; }
    RestoreFiles #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    RestoreFiles Button { margin-left: 1; }
    /* under 24 rows (short.py): the paragraph on one line, no blank lines, the screen's
       height (its blank lines left the list two rows at 60x20, and the buttons cut off) */
    RestoreFiles.-short > #dialog { max-height: 100%; padding: 0 1; }
    RestoreFiles.-short #dialog > #about { margin-bottom: 0; height: 1; text-wrap: nowrap;
                                           text-overflow: ellipsis; }
    RestoreFiles.-short #dialog > #detail, RestoreFiles.-short #dialog > #hint,
    RestoreFiles.-short #dialog > #buttons { margin-top: 0; }
    """

    VERTICAL_BREAKPOINTS = BREAKPOINTS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "keep", "Keep files", id="restore_files.keep"),
    ]

    def __init__(self, rows: Sequence[tuple[str, str, str]], *, note: str = "",
                 undo: bool = False) -> None:
        super().__init__()
        self.rows = list(rows)
        self.note = note
        #: offered after an undo: restoring mostly writes the model's version again,
        #: so "put back as they were before the model wrote them" said the opposite
        self.undo = undo
        #: what the line under the list shows (the highlighted row, or every row)
        self._detail_text = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            if self.undo:
                dialog.border_title = "Files the model wrote there"
                about = ("The rewind was undone. Ticked files are set as their row says "
                         "(mostly the model's version again); the others stay as they are.")
            else:
                dialog.border_title = "Files the model wrote after that point"
                about = ("The conversation was rewound. Ticked files are put back as they "
                         "were before the model wrote them; the others stay as they are.")
            if self.note:
                about += f"\n{self.note}"
            yield Static(content(about), id="about")
            yield TickList[int](*[
                Selection(content(inert_line(f"{path}  — {why or what}", 300)), index,
                          not why, disabled=bool(why))
                for index, (path, what, why) in enumerate(self.rows)
            ])
            yield Static(id="detail")  # the highlighted row whole: a long one is cut above
            # one line in the 70 columns the dialog has at 80 ("… keep them all" left
            # "all" alone on a second line)
            yield Static(Content.assemble(
                ("space", "bold $text-primary"), " tick / untick   ",
                ("enter", "bold $text-primary"), " restore ticked files   ",
                ("esc", "bold $text-primary"), " keep all"), id="hint")
            with Horizontal(id="buttons"):
                yield Button("Restore ticked files", id="restore", variant="warning")
                yield Button("Keep files as they are", id="keep")

    def on_mount(self) -> None:
        files = self.query_one(SelectionList)
        files.focus()
        if files.highlighted is None:
            # Every row is one that cannot be restored, and such a row is never
            # highlighted: its reason was only ever seen cut short ("changed since the
            # model wrote it: left…"). Each is shown whole instead.
            self._show_rows(self.rows)
        self.call_after_refresh(self._fit)

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """The list and the detail share what the dialog has left, the keys and buttons first.

        Both grew with the files (auto height), and at 80x24 four files pushed the hint
        and the buttons past the dialog's bottom, cut off; now the list scrolls instead.
        """
        about, hint, buttons = (self.query_one(part) for part in ("#about", "#hint", "#buttons"))
        detail = self.query_one("#detail", Static)
        files = self.query_one(SelectionList)
        dialog = self.query_one("#dialog")
        # its border and padding, every part's margins, and the parts that keep their height
        fixed = dialog.styles.gutter.height + sum(
            part.styles.margin.top + part.styles.margin.bottom
            for part in (about, files, detail, hint, buttons)
        ) + sum(part.outer_size.height for part in (about, hint, buttons))
        height = self.size.height if self.has_class("-short") else int(self.size.height * 0.85)
        room = max(4, height - fixed)
        rows = len(self.rows)
        width = max(1, detail.content_size.width)
        wanted = sum(max(1, -(-cell_len(line) // width))  # as wrapped at its width
                     for line in self._detail_text.split("\n"))
        frame = files.styles.gutter.height  # the list's own padding or border, outside its rows
        # the detail gives up its second line before the list its second row (a note over
        # the list at 80x24 pushed the buttons a row past the bottom)
        detail_room = max(1, min(wanted, room - frame - min(rows, 3)))
        list_room = frame + max(2, min(16, rows, room - frame - detail_room))
        if detail.styles.max_height != detail_room or files.styles.max_height != list_room:
            detail.styles.max_height = detail_room
            files.styles.max_height = list_room

    @on(SelectionList.SelectionHighlighted)
    def _show_whole(self, event: SelectionList.SelectionHighlighted[int]) -> None:
        self._show_rows([self.rows[event.selection.value]])

    def _show_rows(self, rows: Sequence[tuple[str, str, str]]) -> None:
        self._detail_text = "\n".join(
            f"{inert_line(path, 4000)}\n{inert_line(why or what, 1000)}"
            for path, what, why in rows)
        self.query_one("#detail", Static).update(content(self._detail_text))

    def on_key(self, event: events.Key) -> None:
        # Enter in the list restores what is ticked, as the hint says (space ticks):
        # the list's own Enter toggled the row, and the person meant to be done
        if event.key == "enter" and isinstance(self.focused, SelectionList):
            event.stop()
            event.prevent_default()
            self._restore_ticked()

    @on(Button.Pressed, "#restore")
    def _restore(self, event: Button.Pressed) -> None:
        event.stop()
        self._restore_ticked()

    def _restore_ticked(self) -> None:
        self.dismiss(sorted(self.query_one(SelectionList).selected))

    @on(Button.Pressed, "#keep")
    def _keep(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    def action_keep(self) -> None:
        self.dismiss(None)
