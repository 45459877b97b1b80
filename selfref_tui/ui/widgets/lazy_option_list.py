"""An ``OptionList`` that measures only the rows it shows.

Textual's ``OptionList`` wraps every option's prompt to find its height, for
each width it is laid out at, before it draws a line: the sidebar's 1,000
experiences and 2,000 refs made that 3,000 wraps at each open of a conversation
and each resize (most of the open's 4.5 s of CPU), and the switcher's 500
conversations 500 more. Here a row's height is estimated from its text's
length (one division per line of it) until the row comes near the screen; the
rows on screen and around the highlighted one are wrapped for real. Off-screen
rows can be a line off, which moves only the scrollbar a little: what is drawn
is always wrapped exactly.

Everything else is ``OptionList``'s own (keys, mouse, highlight, messages,
component classes, CSS): only its table of lines is made lazy. A list of at
most :data:`EAGER` rows is measured whole, as ``OptionList`` measures it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from rich.cells import cell_len
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widgets import OptionList
from textual.widgets._option_list import OptionListContent
from textual.widgets.option_list import Option

#: rows up to which every row is measured exactly (cheap, and an auto height is exact)
EAGER = 200


def estimated_height(option: Option, width: int) -> int:
    """``option``'s lines at ``width`` columns, counted from its text's length: each line
    of it takes its cells over the width (wrapping at words can take a line more)."""
    prompt = option.prompt
    plain = getattr(prompt, "plain", None)
    text = plain if isinstance(plain, str) else str(prompt)
    width = max(1, width)
    height = option._divider
    for line in text.split("\n"):
        cells = len(line) if line.isascii() else cell_len(line)
        height += max(1, -(-cells // width))
    return height


class _Rows:
    """Each option's height at one width (estimated or exact) and the line it starts on."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.width = -1
        self.heights: list[int] = []
        #: whether ``heights[i]`` was measured (else estimated)
        self.exact: list[bool] = []
        #: ``starts[i]``: the first line of option ``i``; ``starts[-1]``: the lines in all
        self.starts: list[int] = [0]
        self.stale = False

    def restart(self) -> None:
        self.starts = [0, *accumulate(self.heights)]
        self.stale = False

    def index_at(self, line: int) -> int:
        """The option on ``line`` (clamped to the first and last)."""
        return min(max(bisect_right(self.starts, line) - 1, 0), len(self.heights) - 1)


class _LineView(Sequence[tuple[int, int]]):
    """``OptionList._lines`` as it reads it: line -> (option index, line within it)."""

    def __init__(self, rows: _Rows) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return self._rows.starts[-1]

    def __getitem__(self, line: int) -> tuple[int, int]:  # type: ignore[override]
        rows = self._rows
        if not 0 <= line < rows.starts[-1]:
            raise IndexError(line)
        index = rows.index_at(line)
        return index, line - rows.starts[index]


class _StartView:
    """``OptionList._index_to_line`` as it reads it: option index -> its first line."""

    def __init__(self, rows: _Rows) -> None:
        self._rows = rows

    def __getitem__(self, index: int) -> int:
        if not 0 <= index < len(self._rows.heights):
            raise KeyError(index)
        return self._rows.starts[index]


class LazyOptionList(OptionList):
    """An ``OptionList`` whose rows are wrapped when they come on screen, not all at once."""

    def __init__(self, *content: OptionListContent, **kwargs: Any) -> None:
        super().__init__(*content, **kwargs)
        self._line_cache = _Rows()  # type: ignore[assignment]

    # -- the table of lines ------------------------------------------------------------

    @property
    def _rows(self) -> _Rows:
        return self._line_cache  # type: ignore[return-value]

    @property
    def measured_rows(self) -> int:
        """How many rows were wrapped for real at the current width (the rest estimated)."""
        return sum(self._rows.exact)

    @property
    def _lines(self) -> Sequence[tuple[int, int]]:
        self._update_lines()
        return _LineView(self._rows)

    @property
    def _heights(self) -> list[int]:  # type: ignore[override]
        self._update_lines()
        return self._rows.heights

    @property
    def _index_to_line(self) -> _StartView:  # type: ignore[override]
        self._update_lines()
        return _StartView(self._rows)

    def _inner_width(self) -> int:
        """The columns a prompt wraps at (the content's, less the gutter and padding)."""
        padding = self.get_component_styles("option-list--option").padding
        return self._rows.width - padding.width

    def _exact_height(self, option: Option, width: int) -> int:
        return self._get_visual(option).get_height(self.styles, width) + option._divider

    def _update_lines(self) -> None:
        """Heights for the options added since (estimates past :data:`EAGER` rows) and the
        virtual size they make; everything again at a new width."""
        if not self.scrollable_content_region:
            return
        rows = self._rows
        width = self.scrollable_content_region.width - self._get_left_gutter_width()
        if width != rows.width:
            rows.clear()
            rows.width = width
        options = self._options
        known = len(rows.heights)
        if known < len(options):
            inner = self._inner_width()
            exact = len(options) <= EAGER
            measure = self._exact_height if exact else estimated_height
            rows.heights.extend(measure(option, inner) for option in options[known:])
            rows.exact.extend([exact] * (len(options) - known))
            rows.stale = True
        if rows.stale:
            rows.restart()
        last_divider = bool(options) and options[-1]._divider
        virtual_size = Size(width, rows.starts[-1] - (1 if last_divider else 0))
        if virtual_size != self.virtual_size:
            self.virtual_size = virtual_size
            self._scroll_update(virtual_size)

    def _measure(self, indexes: range) -> bool:
        """Wrap the options at ``indexes`` not measured yet; True when a height changed."""
        rows, options = self._rows, self._options
        inner = self._inner_width()
        changed = False
        for index in indexes:
            if not rows.exact[index]:
                height = self._exact_height(options[index], inner)
                rows.exact[index] = True
                if height != rows.heights[index]:
                    rows.heights[index] = height
                    changed = True
        if changed:
            rows.stale = True
            self._update_lines()
        return changed

    def _measure_screen(self) -> None:
        """Measure the options on the lines in view, until what is in view is measured
        (a row found taller pushes others out of view, a shorter one brings more in)."""
        rows = self._rows
        height = self.scrollable_content_region.height
        while rows.heights:
            top = self.scroll_offset.y
            first, last = rows.index_at(top), rows.index_at(top + max(height, 1) - 1)
            if not self._measure(range(first, last + 1)):
                return

    def _measure_around(self, index: int) -> None:
        """Measure ``index`` and a screen of options above and below it: where scrolling
        to it puts it is then where it is drawn."""
        rows = self._rows
        height = max(self.scrollable_content_region.height, 1)
        above = below = 0
        first = last = index
        while first > 0 and above < height:
            first -= 1
            above += rows.heights[first]
        while last < len(rows.heights) - 1 and below < height:
            last += 1
            below += rows.heights[last]
        self._measure(range(first, last + 1))

    # -- where OptionList reads the table ----------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        self._update_lines()
        self._measure_screen()
        return super().render_lines(crop)

    def scroll_to_highlight(self, top: bool = False) -> None:
        highlighted = self.highlighted
        if highlighted is not None and self.is_mounted:
            self._update_lines()
            if 0 <= highlighted < len(self._rows.heights):
                self._measure_around(highlighted)
        super().scroll_to_highlight(top)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """A height of "auto" adds up estimates past :data:`EAGER` rows (a long list is
        given a fixed height anyway: ``option_rows.LONG``)."""
        if len(self._options) <= EAGER:
            return super().get_content_height(container, viewport, width)
        padding = self.get_component_styles("option-list--option").padding
        return sum(estimated_height(option, width - padding.width) for option in self._options)
