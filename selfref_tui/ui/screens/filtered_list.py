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

from textual import events
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from selfref_tui.ui.screens.short import BREAKPOINTS
from selfref_tui.ui.widgets.option_rows import LONG

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


class FilterField(Input):
    """The pickers' field: Enter chooses as it arrives; keys after the choice go on.

    A terminal delivers a fast burst ("enter, then the next message") at once,
    and the app hands every key to this field before the field acts on the
    first. Enter as Textual's binding would act only once the keys after it
    had been typed into the filter: they changed what was chosen, and their own
    Enter closed the picker a second time. So Enter chooses here, in the
    order the keys came, and a key reaching a picker already closed goes to
    the screen below it, where the person meant it.
    """

    async def _on_key(self, event: events.Key) -> None:
        screen = self.screen
        if not isinstance(screen, FilteredListScreen):
            return
        stack = self.app.screen_stack
        if not stack or stack[-1] is not screen:
            event.prevent_default()
            event.stop()
            if stack:  # (none while the app closes: nothing is left to type into)
                self.app.post_message(events.Key(event.key, event.character))
        elif event.key == "enter":
            event.prevent_default()
            event.stop()
            screen.submit_now(self.value)


class FilteredListScreen(ModalScreen[str | None]):
    """A filter :class:`Input` over an :class:`OptionList`; dismisses with a name, or None.

    A subclass composes a ``#dialog`` holding the field (a :class:`FilterField`),
    the list and a ``#hint`` line; its own CSS adds what differs (the list's
    height, the highlight), and :meth:`submit` says what Enter does.
    """

    #: the query the rows were last listed for (the subclass's ``_refilter`` sets it)
    listed_for: str | None = None

    DEFAULT_CSS = """
    FilteredListScreen { align: center top; background: $background 60%; }
    FilteredListScreen > #dialog {
        width: 70;
        max-width: 100%;
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
    /* Past LONG rows: the room the dialog gives, without measuring every row. */
    FilteredListScreen OptionList.-long { height: 100vh; }
    FilteredListScreen OptionList:focus { border: none; }
    FilteredListScreen #hint { color: $text-muted; padding: 0 1; }
    /* under 24 rows (short.py): the whole height, the list taking what the field and the
       keys leave (a margin, blank lines and 28vh left it 5 rows and the keys cut off) */
    FilteredListScreen.-short > #dialog { margin-top: 0; height: 100%; max-height: 100%;
                                          padding: 0 1; }
    FilteredListScreen.-short #dialog > Input { margin-bottom: 0; }
    FilteredListScreen.-short #dialog > OptionList { height: 1fr; max-height: 100%; }
    FilteredListScreen.-short #dialog > #hint { margin-top: 0; }
    """

    VERTICAL_BREAKPOINTS = BREAKPOINTS

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

    def submit(self, value: str) -> None:
        """Enter in the field holding ``value``: choose (dismiss), or say why not."""
        raise NotImplementedError

    def submit_now(self, value: str) -> None:
        """Enter as it arrives: the rows first listed for ``value`` if its own
        refiltering is still on its way (typed in the same burst), then :meth:`submit`."""
        if self.listed_for != value and self.catches_up():
            self._refilter(value)
        self.submit(value)

    def catches_up(self) -> bool:
        """Whether Enter lists the rows for the field's value first (a subclass whose
        field holds something else at times says no then)."""
        return True

    def _show(self, options: list[Option], select: str | None = None) -> None:
        """List ``options``, hidden when there are none; the highlight on the row
        whose id is ``select`` when it is listed, else on the first."""
        option_list = self.option_list
        option_list.set_options(options)
        option_list.set_class(len(options) >= LONG, "-long")
        option_list.display = bool(options)
        if options:
            rows = self.row_ids
            option_list.highlighted = rows.index(select) if select in rows else 0

    def action_move(self, delta: int) -> None:
        option_list = self.option_list
        if option_list.option_count:
            current = option_list.highlighted or 0
            option_list.highlighted = max(0, min(option_list.option_count - 1, current + delta))
