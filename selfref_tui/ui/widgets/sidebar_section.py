"""A sidebar section: a counted title over an option list fed by a ``rows`` reactive.

The experiences and the refs are shown the same way (a title with figures, a
"Loading…" / empty line, then rows kept in place as the store's rows are
re-sent after every event); only their rows, figures and what a choice does
differ. Subclasses say those; the rest lives here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import var
from textual.widgets import OptionList, Static

from selfref_tui.ui.widgets.lazy_option_list import LazyOptionList
from selfref_tui.ui.widgets.option_rows import LONG, sync_options


class SidebarSection(Vertical):
    """Rows with a ``prompt`` (a ``Content``) and an ``id``, under a counted title.

    ``rows`` is the state: a tuple of rows, or ``None`` while a key is being
    opened ("Loading…", not "nothing yet"). A new value updates only the rows
    that changed, so a list of 1,000 rows is not rebuilt for each new one.
    """

    DEFAULT_CSS = """
    SidebarSection {
        height: auto;
        max-height: 50%;
    }
    /* docked: the list's room ("max-height: 100%") is then what the title leaves; laid
       out above it, the title pushed the list's last line out of the section */
    SidebarSection > .section-title {
        dock: top;
        padding: 0 1;
        color: $text-muted;
        text-style: bold;
    }
    SidebarSection > OptionList {
        height: auto;
        max-height: 100%;
        border: none;
        padding: 0;
        background: transparent;
        scrollbar-size-vertical: 1;
    }
    /* Past LONG rows the list fills the section's room without measuring every row
       (see _show): the height "auto" would come to, found for nothing at each layout. */
    SidebarSection > OptionList.-long { height: 100vh; }
    SidebarSection > OptionList:focus { border: none; background-tint: transparent; }
    SidebarSection > OptionList > .option-list--option-highlighted {
        background: $boost;
        text-style: none;
    }
    SidebarSection > OptionList:focus > .option-list--option-highlighted {
        background: $primary 30%;
        color: $text;  /* the theme's text can be too faint on this tint (solarized-dark) */
        text-style: none;
    }
    SidebarSection > OptionList > .option-list--option { padding: 0 1; }
    SidebarSection > .empty {
        padding: 0 1;
        color: $text-muted;
        text-style: italic;
    }
    """

    #: the title's word, before its figures
    TITLE: ClassVar[str] = ""
    #: what the section says when it has no rows
    EMPTY: ClassVar[str] = ""

    #: the rows, or None while a key is being opened
    rows: var[tuple[Any, ...] | None] = var(())

    def __init__(
        self,
        rows: Sequence[Any] | None = (),
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.set_reactive(SidebarSection.rows, self.validate_rows(rows))
        #: the rows the option list holds now (what the next update is compared with)
        self._shown: tuple[Any, ...] = ()
        self._title = ""

    def compose(self) -> ComposeResult:
        yield Static("", classes="section-title")
        yield Static(self.EMPTY, classes="empty")
        yield LazyOptionList()  # (thousands of rows: only those seen are wrapped)

    def on_mount(self) -> None:
        self._show(self.rows)

    def validate_rows(self, rows: Sequence[Any] | None) -> tuple[Any, ...] | None:
        """The subclass's rows from what the store hands out; ``None`` stays ``None``."""
        return None if rows is None else tuple(rows)

    def watch_rows(self, rows: tuple[Any, ...] | None) -> None:
        if self.is_mounted:
            self._show(rows)

    @property
    def option_list(self) -> OptionList:
        return self.query_one(OptionList)

    @property
    def highlighted_row(self) -> Any | None:
        index = self.option_list.highlighted
        if index is None or not 0 <= index < len(self._shown):
            return None
        return self._shown[index]

    def figures(self, rows: tuple[Any, ...]) -> str:
        """What the title counts."""
        return str(len(rows))

    def rehighlight(self, previous: Any | None, index: int | None) -> None:
        """Put the highlight back after the rows changed (``previous`` was highlighted at
        ``index``): on the same row when it is still there, else near where it was."""
        ids = [row.id for row in self._shown]
        if previous is not None and previous.id in ids:
            self.option_list.highlighted = ids.index(previous.id)
        elif ids:
            self.option_list.highlighted = min(index or 0, len(ids) - 1)

    def _show(self, rows: tuple[Any, ...] | None) -> None:
        option_list = self.option_list
        loading = rows is None
        rows = rows or ()
        previous = self.highlighted_row
        index = option_list.highlighted
        sync_options(option_list, self._shown, rows, lambda row: row.prompt)
        option_list.set_class(len(rows) >= LONG, "-long")
        self._shown = rows
        self.rehighlight(previous, index)
        figures = "…" if loading else self.figures(rows)
        if figures != self._title:
            self._title = figures
            self.query_one(".section-title", Static).update(
                Content.assemble(f"{self.TITLE} ", (figures, "$text-muted"))
            )
        count = len(rows)
        empty = self.query_one(".empty", Static)
        if count == 0:
            empty.update("Loading…" if loading else self.EMPTY)
        empty.display = count == 0
        option_list.display = count > 0
