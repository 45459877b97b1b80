"""The transcript's lines on screen: the Line API's ``render_line``, and selection.

Mixed into :class:`~selfref_tui.ui.widgets.transcript.Transcript`. A line on
screen is a drawn row's line (:mod:`selfref_tui.ui.transcript.layout`) with the
find marks and the mouse selection laid over it. Finished text can be
selected as in Textual's ``Log``: each line carries its offsets, and the copied
text leaves out bars, frames, padding and code continuation marks.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from textual.selection import Selection
from textual.strip import Strip

from selfref_tui.ui.transcript.layout import RowLayout

if TYPE_CHECKING:
    import re

    from rich.style import Style
    from textual.geometry import Offset
    from textual.screen import Screen

    from selfref_tui.ui.transcript.rows import Row


class ShownLines(RowLayout):
    """The lines a person sees and selects."""

    if TYPE_CHECKING:  # what the widget provides
        scroll_offset: Offset
        rich_style: Style
        screen: Screen[Any]
        text_selection: Selection | None
        _found: re.Pattern[str] | None

        def _changed(self) -> None: ...
        def _mark_found(self, strip: Strip, row: Row, offset: int) -> Strip: ...

    @property
    def _top_pad(self) -> int:
        """A short conversation sits at the bottom, next to the input, as chat does."""
        return max(0, self.scrollable_content_region.height - self._starts[-1])

    def render_line(self, y: int) -> Strip:
        line_y = self.scroll_offset.y + y - self._top_pad
        width = self._width()
        rows = self._rows
        if not rows or line_y >= self._starts[-1] or width <= 0 or line_y < 0:
            return Strip.blank(width, self.rich_style)
        index = bisect_right(self._starts, line_y) - 1
        row = rows[index]
        if self._draw(row, width):
            self._changed()  # its height was a guess: lay out again next frame
        offset = line_y - self._starts[index]
        if offset >= len(row.lines):
            return Strip.blank(width, self.rich_style)
        line = row.lines[offset]
        strip = line.strip
        if self._found is not None:
            strip = self._mark_found(strip, row, offset)
        selection = self.text_selection
        if selection is not None:
            span = selection.get_span(line_y)
            if span is not None:
                strip = self._selected(strip, span)
        return strip.apply_offsets(0, line_y)

    def _selected(self, strip: Strip, span: tuple[int, int]) -> Strip:
        text = strip.text
        start, end = span
        a = cell_len(text[:start])
        b = strip.cell_length if end == -1 else cell_len(text[:end])
        if b <= a:
            return strip
        style = self.screen.get_component_rich_style("screen--selection")
        before, chosen, after = strip.divide([a, b, strip.cell_length])
        return Strip.join([before, chosen.apply_style(style), after])

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text, without bars, frames, padding or code continuation marks."""
        total = self._starts[-1] if self._rows else 0
        if not total:
            return None
        width = self._width()
        first = selection.start.y if selection.start is not None else 0
        last = selection.end.y if selection.end is not None else total - 1
        rows = self._rows
        lo_index = max(0, bisect_right(self._starts, first) - 1)
        hi_index = max(0, bisect_right(self._starts, last) - 1)
        if any([self._draw(row, width) for row in rows[lo_index : hi_index + 1]]):
            self._starts = list(accumulate((row.height for row in rows), initial=0))
        out: list[str] = []
        for index in range(lo_index, min(hi_index, len(rows) - 1) + 1):
            row, start = rows[index], self._starts[index]
            for offset, line in enumerate(row.lines):
                span = selection.get_span(start + offset)
                if span is None:
                    continue
                full = line.strip.text
                end = line.left + line.size if line.size >= 0 else len(full) - line.right
                lo = max(span[0], line.left)
                hi = end if span[1] == -1 else min(span[1], end)
                piece = full[lo:hi] if hi > lo else ""
                if line.size < 0:
                    piece = piece.rstrip()
                if line.cont and out:
                    out[-1] += piece
                else:
                    out.append(piece)
        return "\n".join(out), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()
