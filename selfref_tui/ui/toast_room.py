"""Toasts that stay clear of what the person works in: the input, and a dialog.

Textual docks its toast rack under the header with no bound on its height, so
at 80x24 several notices, or one long one, reached down over the input and the
footer. Textual offers no such bound, so this reads its rack, its toasts' ids
and its notifications' collection; a Textual that changes them leaves the
toasts as Textual draws them rather than failing.

A dialog (a modal screen: a tool's approval, a question, the model picker)
is never covered either: Textual draws every toast over whatever screen is on
top, so a notice raised behind a dialog (an MCP server still starting, a
window learnt) sat over its corner, and two or three reached its buttons. No
dialog raises a notice of its own (each says its errors inside it), so a
notice raised while one is open waits, and shows on the chat screen when the
dialog closes, with its whole time to be read from then. A notice held that
long may be stale by then ("waiting for the MCP server" once it is ready): a
notice of a topic drops the one of that topic still held (the newest wins),
and an empty one of a topic withdraws it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from time import time
from typing import TYPE_CHECKING, Any

from textual.app import ScreenStackError
from textual.css.query import NoMatches
from textual.notifications import Notification, Notify
from textual.screen import ModalScreen

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.widgets import Header, TextArea

#: seconds between looks at toasts not laid out yet (see ToastRoom._fit_toasts): a frame
FRAME_S = 1 / 60


@dataclass
class TopicNotice(Notification):
    """A notification that tells of one state (``topic``): a newer one supersedes it."""

    topic: str = ""


class ToastRoom:
    """A mixin of :class:`~selfref_tui.ui.app.SelfRefApp`: toasts in the room above the input."""

    #: a fit of the toasts is asked for the next frame (see _fit_toasts)
    _toasts_fitting = False
    #: notices raised while a dialog is open, shown when it closes (see _on_notify)
    _held: tuple[Notification, ...] = ()

    if TYPE_CHECKING:  # provided by SelfRefApp and Textual's App
        screen: Screen[Any]
        header: Header
        chat_input: TextArea
        _notifications: Any

        def post_message(self, message: Any) -> bool: ...
        def call_after_refresh(self, callback: Any, *args: Any) -> bool: ...
        def set_timer(self, delay: float, callback: Any) -> Any: ...

    def post_notice(self, message: str, *, title: str, severity: SeverityLevel,
                    timeout: float, topic: str) -> None:
        """Textual's ``notify`` (its three lines), the notice carrying its ``topic``: it
        goes through the app's queue as Textual's does, so a withdrawal posted after a
        notice is taken after it."""
        self.post_message(Notify(TopicNotice(message, title, severity, timeout, markup=False,
                                             topic=topic)))

    def _on_notify(self, event: Notify) -> None:
        """A notice raised while a dialog is open is kept, not drawn over the dialog.

        It is in the app's notifications at once (what was said is not lost, and
        Textual's handler, which draws it, is not run); it is shown when the chat
        screen is back (:meth:`_refresh_notifications`). A notice of a topic first
        drops the one of that topic still held; an empty one is never shown.
        """
        notice = event.notification
        topic = getattr(notice, "topic", "")
        if topic:
            self._drop_held(topic)
            if not notice.message:  # a withdrawal: the state it told of is over
                event.prevent_default()
                return
        if self._dialog_up():
            event.prevent_default()
            self._held = (*self._held, notice)
            self._notifications.add(notice)

    def _drop_held(self, topic: str) -> None:
        """Forget the held notices of ``topic``: they would tell of a state that is gone."""
        stale = [n for n in self._held if getattr(n, "topic", "") == topic]
        if not stale:
            return
        self._held = tuple(n for n in self._held if n not in stale)
        for notice in stale:
            if notice in self._notifications:
                del self._notifications[notice]

    def _refresh_notifications(self) -> None:
        """Textual's refresh of the toasts, but none on a dialog; once the dialog is gone,
        the notices held meanwhile are shown, each for its whole time from now."""
        if self._dialog_up():
            return  # the chat screen's toasts stay under the dialog, and end there
        held, self._held = self._held, ()
        for notification in held:
            notification.raised_at = time()
            self._notifications.add(notification)  # back if a later notice reaped it
        super()._refresh_notifications()  # type: ignore[misc]
        if held:
            self._fit_toasts_soon()

    def _dialog_up(self) -> bool:
        """Whether a dialog is on top; False with no screen at all (a notice that arrives
        as the app closes: reading ``screen`` then raised, and the quit with it)."""
        try:
            return isinstance(self.screen, ModalScreen)
        except ScreenStackError:
            return False

    def on_resize(self) -> None:
        if self._notifications:
            self._fit_toasts_soon()

    def _fit_toasts_soon(self) -> None:
        """:meth:`_fit_toasts` after the next frame (once: six notices at once, one fit)."""
        if not self._toasts_fitting:
            self._toasts_fitting = True
            self.call_after_refresh(self._fit_toasts)

    def _fit_toasts(self, tries: int = 600) -> None:
        """The toasts end above the input: the oldest make room for the newest.

        Docked under the header, several toasts, or a long one, reached down over
        the input (and what was typed) and the footer at 80x24. The rack's height
        is bounded by where the input starts now (after a notice, a resize, and a
        change of the input's text: it grows with it), and the oldest toasts that
        do not fit are dismissed (the rack shows its first toasts, cut at the
        bottom: the newest would be the one cut). A single toast taller than the
        room is cut at its end, its first lines in sight. Textual offers no bound
        on its rack: this reads its toasts' ids and its notifications' collection.
        """
        self._toasts_fitting = False
        try:
            from textual.widgets._toast import ToastRack
        except ImportError:  # Textual moved its rack: toasts go unfitted, nothing breaks
            return
        if self.screen is not self.chat_input.screen:
            return  # a dialog on top: its own rack, over the dialog
        try:
            rack = self.screen.query_one(ToastRack)
        except NoMatches:
            return
        top = self.header.outer_size.height + rack.styles.margin.top
        room = max(3, self.chat_input.region.y - top)
        if rack.styles.max_height is None or rack.styles.max_height.value != room:
            rack.styles.max_height = room
        shown = [(n, rack.query(f"#--textual-toast-{n.identity} Toast"))
                 for n in self._notifications]
        if any(not toast or not toast.first().region.height for _n, toast in shown):
            if tries:  # a toast not mounted or laid out yet: a frame later (a few frames
                # may go by first: a refresh does not wait for the layout)
                self._toasts_fitting = True
                self.set_timer(FRAME_S, partial(self._fit_toasts, tries - 1))
            return
        regions = [(n, toast.first().region) for n, toast in shown]
        over = regions[-1][1].bottom - (top + room) if regions else 0
        dropped = False
        for (notification, region), (_next, below) in pairwise(regions):
            if over <= 0:
                break
            over -= below.y - region.y
            del self._notifications[notification]
            dropped = True
        if dropped:
            self._refresh_notifications()
