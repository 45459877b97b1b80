"""A dialog whose field filters a list below it: what the pickers share.

The model picker and the conversation switcher both open with the field
focused and the whole list shown, refilter on every keystroke, move the
highlight with the arrows while the field keeps the focus, and name each row
by an id (``PREFIX:NAME``). Those mechanics live here once; each screen says
what its rows are (:meth:`FilteredListScreen._refilter`) and what choosing
one does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from textual.screen import ModalScreen
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

T = TypeVar("T")


def filter_by_name(items: Sequence[T], query: str, name: Callable[[T], str]) -> list[T]:
    """Case-insensitive substring match on ``name(item)`` (``casefold.fold``, as find and
    search match); names starting with the query first."""
    from selfref_tui.context.casefold import fold

    needle = fold(query.strip())
    if not needle:
        return list(items)
    hits = [item for item in items if needle in fold(name(item))]
    return sorted(hits, key=lambda item: not fold(name(item)).startswith(needle))


class FilteredListScreen(ModalScreen[str | None]):
    """A filter :class:`Input` over an :class:`OptionList`; dismisses with a name, or None.

    A subclass composes a ``#dialog`` holding the field, the list and a ``#hint``
    line; its own CSS adds what differs (the list's height, the highlight).
    """

    DEFAULT_CSS = """
    FilteredListScreen { align: center top; background: $background 60%; }
    FilteredListScreen > #dialog {
        width: 70;
        height: auto;
        max-height: 80%;
        margin-top: 3;
        padding: 0 1 1 1;
        border: round $primary;
        border-title-color: $text-primary;
        background: $surface;
    }
    FilteredListScreen Input { margin-bottom: 1; }
    FilteredListScreen OptionList {
        height: auto; border: none; background: transparent; padding: 0;
    }
    FilteredListScreen OptionList:focus { border: none; }
    FilteredListScreen #hint { color: $text-muted; padding: 0 1; }
    """

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_blink = False
        field.focus()
        self._refilter("")

    @property
    def option_list(self) -> OptionList:
        return self.query_one(OptionList)

    @property
    def row_ids(self) -> list[str]:
        """The rows' ids, in the order they are listed."""
        return [option.id or "" for option in self.option_list.options]

    def _refilter(self, query: str) -> None:
        """List the rows that match ``query`` (:meth:`_show` them)."""
        raise NotImplementedError

    def _show(self, options: list[Option], select: str | None = None) -> None:
        """List ``options``, hidden when there are none; the highlight on the row
        whose id is ``select`` when it is listed, else on the first."""
        option_list = self.option_list
        option_list.set_options(options)
        option_list.display = bool(options)
        if options:
            rows = self.row_ids
            option_list.highlighted = rows.index(select) if select in rows else 0

    def action_move(self, delta: int) -> None:
        option_list = self.option_list
        if option_list.option_count:
            current = option_list.highlighted or 0
            option_list.highlighted = max(0, min(option_list.option_count - 1, current + delta))
