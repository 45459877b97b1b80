"""Where the keyboard's focus goes, mixed into the app.

The app owns Tab's ring (input → experiences → refs → fork table → input),
moves focus back to the input whenever a panel that holds it is hidden, and
sends a printable key no widget used to the input: typing must never vanish
into a hidden list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, TextArea

if TYPE_CHECKING:
    from textual.css.query import DOMQuery

    from selfref_tui.ui.widgets.chat_input import ChatInput
    from selfref_tui.ui.widgets.fork_panel import ForkPanel
    from selfref_tui.ui.widgets.sidebar import Sidebar


class FocusRing:
    """Tab's ring, focus kept on what is shown, and stray keys into the input."""

    if TYPE_CHECKING:  # what the app provides
        chat_input: ChatInput
        sidebar: Sidebar
        fork_panel: ForkPanel
        focused: Widget | None
        screen: Screen[Any]
        screen_stack: list[Screen[Any]]

        def query(self, selector: str) -> DOMQuery[Widget]: ...

    def _keep_focus_visible(self) -> None:
        """Focus never rests on a hidden or removed widget: it goes back to the input.

        Keys typed into a hidden list are lost without a trace (a ``/remember``
        typed after ctrl+b vanished), so whatever hides a panel calls this.
        """
        focused = self.focused
        if focused is None or not _shown(focused):
            self.chat_input.focus()

    def _tab_stops(self) -> list[Widget]:
        """Tab's ring: the input, then the sidebar's lists and the fork table, when shown.

        The transcript and its tool cards are reached by their own keys (ctrl+↑/↓
        for refs, Page Up/Down), not by walking every card with Tab.
        """
        stops: list[Widget] = [self.chat_input]
        if self.sidebar.display and self.sidebar.parts_mounted.is_set():
            stops += [
                self.sidebar.experience_list.option_list,
                self.sidebar.ref_list.option_list,
            ]
        found = self.query("#forks")
        if found and found.first().display:
            stops.append(self.fork_panel.table)
        return [w for w in stops if _shown(w)]

    def _cycle_focus(self, step: int) -> None:
        if self.screen is not self.screen_stack[0]:
            # A dialog: its own fields, in Textual's order.
            if step > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        stops = self._tab_stops()
        focused = self.focused
        at = next((i for i, w in enumerate(stops) if w is focused), None)
        if at is None:  # focus sat somewhere else (a clicked tool card): start over
            target = stops[0] if step > 0 else stops[-1]
        else:
            target = stops[(at + step) % len(stops)]
        target.focus()

    def action_focus_next(self) -> None:
        self._cycle_focus(+1)

    def action_focus_previous(self) -> None:
        self._cycle_focus(-1)

    def on_key(self, event: events.Key) -> None:
        """A printable key that reached the app unhandled belongs in the input.

        It got here because the focused widget (a list, the fork table, a tool
        card, or nothing at all) had no use for it; typing must never vanish.
        """
        if self.screen is not self.screen_stack[0] or not event.is_printable:
            return
        if not event.character or event.key in self.screen.active_bindings:
            return  # a binding of the focused widget or the app took it
        if isinstance(self.focused, (TextArea, Input)):
            return
        event.stop()
        chat_input = self.chat_input
        chat_input.focus()
        chat_input.insert(event.character)


def _shown(widget: Widget) -> bool:
    """Attached and displayed, with every container above it displayed too."""
    if not widget.is_attached:
        return False
    node: Any = widget
    while node is not None and not isinstance(node, Screen):
        if not node.display:
            return False
        node = node.parent
    return True
