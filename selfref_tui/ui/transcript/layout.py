"""The transcript's rows: which rows there are, their drawn lines, and where they sit.

Mixed into :class:`~selfref_tui.ui.widgets.transcript.Transcript`, apart from
what the widget shows and when, because this is where its cost lives: an item
is cut into rows (a message, one block of an answer, a tool card…) kept from
one layout to the next; only the rows on screen are drawn, each once per width
and state; rows far from the viewport have estimated heights, corrected when
they come into view, while the first row on screen keeps its place. Rows that
left the screen keep at most :data:`KEEP_LINES` drawn lines.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Collection
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from textual.geometry import Size

from selfref_tui.ui.transcript.answer import AnswerItem, Block, RefInfo
from selfref_tui.ui.transcript.model import Item, RewoundItem
from selfref_tui.ui.transcript.paint import Painter
from selfref_tui.ui.transcript.palette import Palette
from selfref_tui.ui.transcript.rows import Row, estimate, row_key
from selfref_tui.ui.transcript.textual_adapter import set_virtual_size

if TYPE_CHECKING:
    from textual.app import App
    from textual.geometry import Region

    from selfref_tui.ui.transcript.reducer import TranscriptModel

#: drawn lines kept for rows that left the screen (a dozen screens), for scrolling back;
#: beyond it the rows drawn longest ago give theirs up and are drawn again if they return.
#: A line is a ``Strip`` with seven caches of its own and the strips derived from it (about
#: 45 objects): keeping every line a long answer streamed past (42,000 for 5 MB on one
#: line) made the heap, and the cyclic collector's pass over it after the turn, several
#: times larger.
KEEP_LINES = 500


class RowLayout:
    """Rows of the transcript's items, drawn lazily, laid out around an anchor."""

    if TYPE_CHECKING:  # what the widget provides
        model: TranscriptModel
        app: App[Any]
        scrollable_content_region: Region
        scroll_y: float
        max_scroll_y: int
        older_count: int
        _hint: Any
        _hint_shown: bool
        _pending: bool
        _stuck: bool
        _frame_cost: float

        def scroll_to(self, *args: Any, **kwargs: Any) -> Any: ...
        def refresh(self, *args: Any, **kwargs: Any) -> Any: ...

    def _init_layout(self) -> None:
        """No rows yet (the widget's ``__init__`` calls this)."""
        self._rows: list[Row] = []
        self._starts: list[int] = [0]
        self._item_rows: dict[Item, tuple[tuple, list[Row]]] = {}
        self._block_rows: dict[Block | RefInfo, Row] = {}
        self._section_ends: dict[RewoundItem, Row] = {}
        #: rows holding drawn lines, the least recently drawn first, with how many
        self._drawn: dict[Row, int] = {}
        self._kept = 0
        self._width_seen = 0
        self._palette: Palette | None = None
        self._palette_key: Any = None
        #: how many theme changes this widget has seen (part of every drawn row's key)
        self._theme_seen = 0
        self._painter: Painter | None = None

    def _rows_of(self, item: Item) -> list[Row]:
        if isinstance(item, AnswerItem):
            shape: tuple = (
                len(item.blocks),
                bool(item.reasoning_words or item._reasoning),
                bool(item.marker or item.pinned),
                tuple(map(id, item.open_refs)),
            )
        else:
            shape = ()
        cached = self._item_rows.get(item)
        if cached is not None and cached[0] == shape:
            return cached[1]
        rows: list[Row]
        if isinstance(item, AnswerItem):
            rows = []
            if shape[1]:
                rows.append(
                    cached[1][0]
                    if cached and cached[1][0].part == "reasoning"
                    else Row("reasoning", item)
                )
            block_rows = self._block_rows
            for block in item.blocks:
                row = block_rows.get(block)
                if row is None:
                    row = block_rows[block] = Row("block", item, block)
                rows.append(row)
            for depth, ref in reversed(list(enumerate(item.open_refs))):
                # A ref still streaming is closed below what has arrived, for now.
                row = block_rows.get(ref)  # type: ignore[call-overload]
                if row is None:
                    edge = Block("ref_bottom", frames=tuple(item.open_refs[:depth]), ref=ref)
                    row = block_rows[ref] = Row("block", item, edge)  # type: ignore[index]
                rows.append(row)
            if shape[2]:
                rows.append(Row("marker", item))
        else:
            rows = [Row(item.kind, item)]
        if rows:
            rows[0].margin = 1
            for row in rows[1:]:
                row.margin = 0
        self._item_rows[item] = (shape, rows)
        return rows

    def _build_rows(self) -> list[Row]:
        rows: list[Row] = []
        if self.model.older:
            rows.append(self._banner_row)
        if self._hint_shown:
            rows.append(self._hint_row)
        opened: RewoundItem | None = None  # an open rewound section: a line marks its end
        for item in self.model.items:
            if opened is not None and item.section is not opened:
                rows.append(self._section_end(opened))
                opened = None
            if item.hidden:  # a collapsed rewound section shows its one line
                continue
            rows.extend(self._rows_of(item))
            if item.section is not None:
                opened = item.section
        if opened is not None:
            rows.append(self._section_end(opened))
        return rows

    def _section_end(self, section: RewoundItem) -> Row:
        row = self._section_ends.get(section)
        if row is None:
            row = self._section_ends[section] = Row("rewound_end", section)
            row.margin = 1
        return row

    @property
    def _banner_row(self) -> Row:
        row = self.__dict__.get("_banner")
        if row is None:
            row = self.__dict__["_banner"] = Row("banner")
        return row

    @property
    def _hint_row(self) -> Row:
        row = self.__dict__.get("_hint_r")
        if row is None:
            row = self.__dict__["_hint_r"] = Row("hint")
        return row

    def _width(self) -> int:
        return self.scrollable_content_region.width

    def _painter_for(self, width: int) -> Painter:
        """The painter for ``width`` in the current theme (rows drawn in another are stale)."""
        key = (self._theme_seen, width)
        if self._painter is None or self._palette_key != key:
            if self._palette is None or self._palette_key is None or self._palette_key[0] != key[0]:
                app = self.app
                self._palette = Palette(app.theme_variables, bool(app.current_theme.dark))
            self._palette_key = key
            self._painter = Painter(self, self._palette, width)
        return self._painter

    def _draw(self, row: Row, width: int) -> bool:
        """Draw ``row`` if its lines are stale; True when its height changed."""
        painter = self._painter_for(width)
        key = (row_key(row, width), self._palette_key)
        if row.part == "banner":
            key = (key, self.older_count)
        elif row.part == "hint":  # boxed or not by the view's height too
            key = (key, id(self._hint), self.scrollable_content_region.height)
        if row.key == key:
            # Drawn for this width already (the width changed and came back): the
            # lines are right, the height was estimated again meanwhile.
            self._kept_drawn(row)
            row.exact = True
            if len(row.lines) != row.height:
                row.height = len(row.lines)
                return True
            return False
        row.lines = painter.draw(row)
        row.key = key
        self._kept_drawn(row)
        row.exact = True
        row.guess = None
        if len(row.lines) != row.height:
            row.height = len(row.lines)
            return True
        return False

    def _kept_drawn(self, row: Row) -> None:
        """``row`` was just drawn or used: the last to give its lines up."""
        drawn = self._drawn
        self._kept += len(row.lines) - drawn.pop(row, 0)
        drawn[row] = len(row.lines)

    def _release_far_rows(self, on_screen: Collection[Row] = ()) -> None:
        """Past :data:`KEEP_LINES`, the rows drawn longest ago let their lines go.

        Their height stays (it was exact); :meth:`_draw` draws them again when
        they are needed. Rows ``on_screen`` are never let go, even when they alone
        pass the bound (a block of 2,000 one-character lines, a narrow terminal):
        else such a row would be dropped at every relayout and drawn again at the
        next paint, every frame of a stream.
        """
        drawn = self._drawn
        if self._kept <= KEEP_LINES:
            return
        for row in list(drawn):  # the least recently drawn first
            if self._kept <= KEEP_LINES:
                break
            if row in on_screen:
                continue
            self._kept -= drawn.pop(row)
            row.lines = ()
            row.key = None

    def _relayout(self, *, keep: Item | None = None) -> None:
        """Rows, heights and scroll position after a change (or a resize, or a scroll)."""
        started = time.perf_counter()
        try:
            self._layout_rows(keep)
        finally:
            self._frame_cost = time.perf_counter() - started

    def _layout_rows(self, keep: Item | None) -> None:
        self._pending = False
        width = self._width()
        height = self.scrollable_content_region.height
        at_end = self._stuck or self.scroll_y >= self.max_scroll_y
        # The hint alone, taller than the view, is read from its first line (what is
        # sent next is followed to the end again: sending scrolls to the bottom).
        hint_only = self._hint_shown and not self.model.items and not self.model.older
        if hint_only:
            at_end = False
        # The first row on screen, to keep in place when heights above it change.
        anchor: tuple[Row, int] | None = None
        if not at_end and self._rows:
            anchor = self._row_at(int(self.scroll_y))
        if keep is not None:
            keep_rows = self._item_rows.get(keep)
            anchor = (
                (keep_rows[1][0], int(self.scroll_y) - self._row_start(keep_rows[1][0]))
                if keep_rows
                else anchor
            )
        if width != self._width_seen:
            for row in self._rows:  # drawn for another width: estimate again
                row.exact = False
            self._width_seen = width
        rows = self._build_rows()
        if self.model.current is not None:
            # The streaming tail grows where it may not be drawn: estimate it again.
            for row in self._item_rows.get(self.model.current, ((), []))[1][-2:]:
                if row.key is not None and row.key[0][0] == width:
                    row.exact = row.exact and row.block is not None and not row.block.open
        for row in rows:
            if not row.exact:
                # Estimated once per width and text: a far row costs nothing per frame.
                guess = (width, row.block.version if row.block is not None else -1)
                if row.guess != guess:
                    row.height = estimate(row, width) if width else 1
                    row.guess = guess
        self._rows = rows
        self._starts = list(accumulate((row.height for row in rows), initial=0))
        on_screen: set[Row] = set()
        if width > 0 and height > 0:
            for _ in range(4):  # draw what is on screen; heights settle in a pass or two
                total = self._starts[-1]
                if at_end:
                    top = max(0, total - height)
                elif anchor is not None:
                    top = self._row_start(anchor[0]) + anchor[1]
                else:
                    top = int(self.scroll_y)
                changed = False
                on_screen = set()  # (rows hash by identity)
                index = max(0, bisect_right(self._starts, top) - 1)
                while index < len(rows) and self._starts[index] < top + height:
                    changed |= self._draw(rows[index], width)
                    on_screen.add(rows[index])
                    index += 1
                if not changed:
                    break
                self._starts = list(accumulate((row.height for row in rows), initial=0))
        self._release_far_rows(on_screen)
        total = self._starts[-1]
        set_virtual_size(self, Size(width, total))
        if at_end:
            self.scroll_to(y=max(0, total - height), animate=False, immediate=True, force=True)
            self._stuck = True
        elif anchor is not None:
            self.scroll_to(
                y=self._row_start(anchor[0]) + anchor[1], animate=False, immediate=True, force=True
            )
        self.refresh()

    def _row_at(self, y: int) -> tuple[Row, int]:
        index = max(0, min(len(self._rows) - 1, bisect_right(self._starts, y) - 1))
        return self._rows[index], y - self._starts[index]

    def _row_start(self, row: Row) -> int:
        try:
            return self._starts[self._rows.index(row)]
        except ValueError:
            return 0
