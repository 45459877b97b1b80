"""Dialogs on a short terminal: the rows they have go to their list and their keys.

A dialog sized for 24 rows or more (a margin above it, padding, a paragraph
about what it does, a blank line before its keys) left its list no row at
60x20: the fixed parts took the height, and the highlighted row, the keys or
the buttons were cut off at its bottom. Under 24 rows the dialog's screen gets
the ``-short`` class (Textual's vertical breakpoints), and each dialog's CSS
drops its margins and blank lines there, folds its paragraph to one line
(ending in "…"), and gives its list (or its scrolled body) what is left of the
screen's height: a list that changes as it is filtered fills the height (CSS can
not shrink an auto-height dialog's part), a fixed one is given at most
:func:`rows_left`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.widget import Widget

#: the rows under which a dialog is short
SHORT_BELOW = 24

#: a dialog screen's ``VERTICAL_BREAKPOINTS``: ``-short`` under :data:`SHORT_BELOW` rows
BREAKPOINTS: list[tuple[int, str]] = [(0, "-short"), (SHORT_BELOW, "-tall")]


def rows_left(dialog: Widget, body: Widget, height: int) -> int:
    """The rows ``body`` may take in ``dialog`` ``height`` rows tall: less the dialog's
    border and padding, every shown part's margins and the other parts' own rows."""
    shown = [part for part in dialog.children if part.display]
    return height - dialog.styles.gutter.height - sum(
        part.styles.margin.top + part.styles.margin.bottom
        + (0 if part is body else part.outer_size.height) for part in shown)
