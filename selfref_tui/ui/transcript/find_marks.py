"""Find in the transcript: every occurrence marked on screen, and going to one.

Mixed into :class:`~selfref_tui.ui.widgets.transcript.Transcript`. What
occurs where is found without a screen (:mod:`selfref_tui.ui.transcript.find`,
over everything the transcript holds, shown or not); this part shows it: it
opens what hides an occurrence (a collapsed part, a rewound section, the older
messages behind the banner), scrolls to it, and marks every occurrence on the
drawn lines, the current one most. The marks of a row are found once per drawn
lines, not once per frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import Segment
from textual.strip import Strip

from selfref_tui.ui.lazy_import import LazyModule
from selfref_tui.ui.transcript.layout import RowLayout
from selfref_tui.ui.transcript.model import Item, RewoundItem
from selfref_tui.ui.transcript.rows import Line, Row

if TYPE_CHECKING:
    from selfref_tui.ui.transcript import find as fnd
    from selfref_tui.ui.transcript.find import Hit
    from selfref_tui.ui.transcript.reducer import Target
else:  # the first frame has nothing found
    fnd = LazyModule("selfref_tui.ui.transcript.find")


class FindMarks(RowLayout):
    """Find, mark and go to the occurrences of a text."""

    if TYPE_CHECKING:  # what the widget provides
        def highlight(self, target: Target) -> Target: ...
        async def load_older(self, count: int = ...) -> int: ...
        def toggle_section(self, section: RewoundItem, expanded: bool | None = None) -> None: ...

    def _init_find(self) -> None:
        """Nothing found yet (the widget's ``__init__`` calls this)."""
        #: what is highlighted on screen, every occurrence, and the one gone to
        self._found: fnd.Phrase | None = None
        self._hits: list[Hit] = []
        self._hit = -1
        #: where the current occurrence is drawn: (row, which occurrence in the row)
        self._hit_at: tuple[Row, int] | None = None
        #: each drawn row's occurrences, line by line (found again when its lines change)
        self._marks: dict[Row, tuple[Sequence[Line], list[list[tuple[int, int, int]]]]] = {}

    @property
    def find_state(self) -> tuple[int, int]:
        """(the current occurrence's number from 1, how many): (0, 0) when none."""
        return (self._hit + 1 if self._hits else 0), len(self._hits)

    async def find(self, query: str, step: int = 0) -> tuple[int, int]:
        """Mark every occurrence of ``query`` and go to one: a new query goes to the
        newest, ``step`` +1 / -1 to the next / previous (wrapping around).

        Everything is searched, shown or not (transcript/find.py): an occurrence in
        a collapsed part opens it, one behind the banner loads the older messages
        down to it. Returns :attr:`find_state`.
        """
        found = fnd.pattern(query)
        if found is None:
            self.find_clear()
            return 0, 0
        same = self._found is not None and self._found.pattern == found.pattern
        current = self._hits[self._hit] if same and 0 <= self._hit < len(self._hits) else None
        if not same:
            self._marks = {}
        self._found = found
        hits = fnd.find_hits(self.model.items, self.model.older, found)
        self._hits, self._hit_at = hits, None
        if not hits:
            self._hit = -1
            self.refresh()
            return 0, 0
        at = _position(hits, current) if current is not None else None
        if at is None:
            self._hit = len(hits) - 1 if step >= 0 else 0
        else:
            self._hit = (at + step) % len(hits)
        await self._show_hit()
        return self.find_state

    def find_clear(self) -> None:
        """No find text marked any more."""
        self._found, self._hits, self._hit, self._hit_at = None, [], -1, None
        self._marks = {}
        self.refresh()

    async def _show_hit(self) -> None:
        hit = self._hits[self._hit]
        if hit.item is None:  # behind the banner: load the older messages down to it
            await self.load_older(len(self.model.older) - hit.older)
            hit = self._found_again()
            if hit is None or hit.item is None:
                return
        if hit.sealed:  # in a rewound section never opened: its messages built, then shown
            assert isinstance(hit.item, RewoundItem)
            self.toggle_section(hit.item, True)
            hit = self._found_again()
            if hit is None or hit.item is None:
                return
        item = hit.item
        if item.section is not None and not item.section.expanded:
            self.toggle_section(item.section, True)
        if hit.hidden:
            fnd.open_for(item)
        self.highlight(item)
        self._hit_at = self._locate(item, hit.occurrence)
        if self._hit_at is not None:
            self._relayout()  # drawing the item's rows may have corrected their heights
            row, number = self._hit_at
            offset = next((n for n, marks in enumerate(self._row_marks(row))
                           if any(m[2] == number for m in marks)), 0)
            y = self._row_start(row) + offset
            height = self.scrollable_content_region.height
            top, bottom = int(self.scroll_y), int(self.scroll_y) + height
            if not top <= y < bottom:
                self.scroll_to(y=max(0, y - height // 2), animate=False, immediate=True,
                               force=True)
            self._stuck = self.scroll_y >= self.max_scroll_y
        self.refresh()

    def _found_again(self) -> Hit | None:
        """After messages were built (older ones loaded, a section opened): the hits
        found again, the current one staying at its number (the built items hold the
        occurrences their messages held, in the same order)."""
        assert self._found is not None
        number = self._hit
        self._hits = fnd.find_hits(self.model.items, self.model.older, self._found)
        if not self._hits:
            self._hit = -1
            return None
        self._hit = min(number, len(self._hits) - 1)
        return self._hits[self._hit]

    def _locate(self, item: Item, occurrence: int) -> tuple[Row, int] | None:
        """The row holding ``item``'s n-th occurrence and which one it is there (None
        when drawing changed the words, say Markdown syntax inside the match: the item
        is still shown)."""
        width = self._width()
        n = 0
        for row in self._rows_of(item):
            self._draw(row, width)
            count = len({m[2] for marks in self._row_marks(row) for m in marks})
            if occurrence < n + count:
                return row, occurrence - n
            n += count
        return None

    def _mark_found(self, strip: Strip, row: Row, offset: int) -> Strip:
        """``strip`` with every occurrence of the find text marked, the current one most
        (an occurrence wrapped over two lines is marked on both)."""
        marks = self._row_marks(row)[offset]
        palette = self._palette
        if not marks or palette is None:
            return strip
        left = row.lines[offset].left
        text = strip.text
        current = self._hit_at
        here = current[1] if current is not None and current[0] is row else None
        # an ANSI theme's background is the terminal's own ("ansi_default" has no hex):
        # the current one is drawn reversed, in the terminal's own colours
        other, chosen = palette.find_marks
        cuts: list[int] = []
        for start, end, _number in marks:
            cuts += [cell_len(text[:left + start]), cell_len(text[:left + end])]
        pieces = strip.divide([*cuts, strip.cell_length])
        marked = [
            # over the row's own colours (a code block's background would hide a base style)
            piece if n % 2 == 0 else Strip(
                Segment.apply_style(piece, post_style=chosen if marks[n // 2][2] == here
                                    else other), piece.cell_length)
            for n, piece in enumerate(pieces)
        ]
        return Strip.join(marked)

    def _row_marks(self, row: Row) -> list[list[tuple[int, int, int]]]:
        """The find text's occurrences on ``row``'s drawn lines (see ``line_marks``)."""
        assert self._found is not None
        kept = self._marks.get(row)
        if kept is not None and kept[0] is row.lines:
            return kept[1]
        marks = fnd.line_marks([(line.text, line.cont) for line in row.lines], self._found)
        self._marks[row] = (row.lines, marks)
        return marks


def _position(hits: Sequence[Hit], hit: Hit) -> int | None:
    """Where ``hit`` is among ``hits`` found again (the same item and occurrence)."""
    for index, other in enumerate(hits):
        if (other.item is hit.item and other.older == hit.older
                and other.occurrence == hit.occurrence):
            return index
    return None
