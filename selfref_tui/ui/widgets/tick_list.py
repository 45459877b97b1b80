"""A list of choices whose box shows its state in a character, not only a colour.

Textual's SelectionList draws the same ``X`` in a ticked and an unticked box and
tells them apart by colour alone: on a monochrome terminal, with ``NO_COLOR``, in
some themes, or to a person who does not see the difference, every file of the
restore dialog looked ticked. Here a ticked box holds ``✓`` and an unticked one
is empty.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import SelectionList
from textual.widgets.option_list import OptionDoesNotExist

T = TypeVar("T")

TICKED = "✓"
UNTICKED = " "


class TickList(SelectionList[T], Generic[T]):
    """A SelectionList drawing ``✓`` in ticked boxes and nothing in the others."""

    def render_line(self, y: int) -> Strip:
        line = super().render_line(y)
        try:
            selection = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return line  # no box on this line
        segments = list(line)
        if len(segments) < 2:
            return line
        box = segments[1]
        mark = TICKED if selection.value in self.selected else UNTICKED
        segments[1] = Segment(mark, box.style, box.control)
        return Strip(segments, line.cell_length)


__all__ = ["TICKED", "UNTICKED", "TickList"]
