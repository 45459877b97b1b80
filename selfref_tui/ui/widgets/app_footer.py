"""The app's footer: Textual's own, compact when the screen is narrow, cut by whole keys.

Textual pads every key in the footer; at 80 columns the padded keys ran 13
columns past the edge and "Switch key" and "Help" were cut off. Below
:data:`NARROW_BELOW` columns the footer takes Textual's public ``compact``
style (no padding around a key), which with the short descriptions in
``keymap.py`` fits every key it shows in 80 columns. Narrower still (60
columns) the row ran off the edge mid-word ("^o Conversati") and F1 was gone:
there the keys that do not fit are hidden whole, from the end, but the last one
(Help, which lists them all) stays. Public Textual API (the ``Footer`` widget,
its ``compact`` reactive and its children's ``display``) plus one private name,
``FooterLabel``, to keep a group's label with its keys; tests/ui/test_footer.py
catches a Textual that moves it.
"""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterLabel

#: below this many columns the screen is narrow (the app's -narrow breakpoint too)
NARROW_BELOW = 100


def _outer_width(widget: Widget) -> int:
    """Columns ``widget`` takes in the row, margins included, from its styles and
    content (not from the last layout: a footer under a dialog is laid out late)."""
    styles = widget.styles
    if widget.children:
        inner = sum(_outer_width(child) for child in widget.children if child.display)
    else:
        inner = widget.get_content_width(Size(0, 0), Size(0, 0))
    return inner + styles.gutter.width + styles.margin.left + styles.margin.right


class AppFooter(Footer):
    """Textual's footer, compact below :data:`NARROW_BELOW` columns, never cut mid-key."""

    def on_resize(self, event: events.Resize) -> None:
        self.compact = event.size.width < NARROW_BELOW
        self.call_after_refresh(self.fit)

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self.fit)

    def _entries(self) -> list[list[Widget]]:
        """The footer's entries in order: a key, or a group of keys with its label."""
        entries: list[list[Widget]] = []
        for child in self.children:
            if child.has_class("-command-palette"):
                continue
            if isinstance(child, FooterLabel) and entries:
                entries[-1].append(child)
            else:
                entries.append([child])
        return entries

    def fit(self) -> None:
        """Show every entry, then hide whole ones (not the last) until the row fits."""
        entries = self._entries()
        for entry in entries:
            for widget in entry:
                widget.display = True
        room = self.size.width
        for child in self.children:
            if child.has_class("-command-palette") and child.display:
                room -= _outer_width(child)
        widths = [sum(_outer_width(widget) for widget in entry) for entry in entries]
        used = sum(widths)
        for index in range(len(entries) - 2, -1, -1):
            if used <= room:
                break
            used -= widths[index]
            for widget in entries[index]:
                widget.display = False
