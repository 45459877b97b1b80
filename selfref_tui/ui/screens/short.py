"""Dialogs on a short terminal: the rows they have go to their list and their keys.

A dialog sized for 24 rows or more (a margin above it, padding, a paragraph
about what it does, a blank line before its keys) left its list no row at
60x20: the fixed parts took the height, and the highlighted row, the keys or
the buttons were cut off at its bottom. Under 24 rows the dialog's screen gets
the ``-short`` class (Textual's vertical breakpoints), and each dialog's CSS
drops its margins and blank lines there, folds its paragraph to one line
(ending in "…"), and fills the screen's height, its list taking what is left.
"""

from __future__ import annotations

#: the rows under which a dialog is short
SHORT_BELOW = 24

#: a dialog screen's ``VERTICAL_BREAKPOINTS``: ``-short`` under :data:`SHORT_BELOW` rows
BREAKPOINTS: list[tuple[int, str]] = [(0, "-short"), (SHORT_BELOW, "-tall")]
