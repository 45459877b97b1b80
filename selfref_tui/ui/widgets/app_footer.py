"""The app's footer: Textual's own, compact when the screen is narrow.

Textual pads every key in the footer; at 80 columns the padded keys ran 13
columns past the edge and "Switch key" and "Help" were cut off. Below
:data:`NARROW_BELOW` columns the footer takes Textual's public ``compact``
style (no padding around a key), which with the short descriptions in
``keymap.py`` fits every key it shows in 80 columns. Only public Textual API:
the ``Footer`` widget and its ``compact`` reactive.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Footer

#: below this many columns the screen is narrow (the app's -narrow breakpoint too)
NARROW_BELOW = 100


class AppFooter(Footer):
    """Textual's footer, compact below :data:`NARROW_BELOW` columns."""

    def on_resize(self, event: events.Resize) -> None:
        self.compact = event.size.width < NARROW_BELOW
