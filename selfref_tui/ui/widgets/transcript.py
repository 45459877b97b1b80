"""The scrolling conversation: one Line-API widget whose cost follows the screen.

Runtime events and stored history go into a :class:`TranscriptModel` (pure
data, see :mod:`selfref_tui.ui.transcript`); this widget cuts its items into
rows (a message, one block of an answer, a tool card…) and draws only the rows
on screen, each once per width and state (:mod:`selfref_tui.ui.transcript.paint`).
Rows far from the viewport have estimated heights, corrected when they come
into view (the first row on screen keeps its place meanwhile). Streaming
redraws the last block of the last answer only, at most every
:data:`FRAME_S`. So an answer with 10,000 refs, or 1 MB on one line, costs
what the screen shows, and the tree the layout walks is this one widget.

It sticks to the bottom while the person is there: new text keeps it at the
end until they scroll up; scrolling back to the end (or End on an empty
input) re-attaches it. Long histories show their tail; older messages wait
behind a banner and come in on demand.

Finished text can be selected with the mouse (each line carries its
offsets, like Textual's ``Log``); the copied text leaves out bars, frames and
code continuation marks.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from selfref_tui.ui.lazy_import import LazyModule
from selfref_tui.ui.transcript.model import (
    AnswerItem,
    Block,
    DividerItem,
    ErrorItem,
    Fence,
    Item,
    RefInfo,
    RewoundItem,
    ToolItem,
    UserItem,
)
from selfref_tui.ui.transcript.paint import Line, Painter, Palette, Row, estimate, row_key
from selfref_tui.ui.transcript.reducer import TAIL_ITEMS, Target, TranscriptModel
from selfref_tui.ui.transcript.textual_adapter import set_virtual_size

if TYPE_CHECKING:
    from selfref_tui.agent import events as ev
    from selfref_tui.ui.transcript import find as fnd
    from selfref_tui.ui.transcript.find import Hit
else:  # the first frame has no events to show, nor anything found
    ev = LazyModule("selfref_tui.agent.events")
    fnd = LazyModule("selfref_tui.ui.transcript.find")

__all__ = ["TAIL_ITEMS", "Transcript"]

#: the shortest gap between two redraws of a streaming answer (~20 a second)
FRAME_S = 1 / 20
#: a redraw that took longer waits this many times its cost before the next one, so drawing
#: takes at most about a third of the loop on a slow or busy machine (keys and the stream
#: get the rest)
FRAME_SHARE = 3
#: the shortest gap while the person types (a key within :data:`TYPING_S`): half as many
#: redraws (each a relayout and a repaint of the whole view, as the stream scrolls it), so a
#: key's way through the loop to its echo on screen meets fewer of them
FRAME_TYPING_S = 1 / 10
TYPING_S = 1.0


def frame_gap(frame_cost: float, since_key: float | None) -> float:
    """Seconds from a change to the redraw that shows it.

    Args:
        frame_cost: what the last redraw took, in seconds.
        since_key: seconds since the person last typed (None: not yet).
    """
    typing = since_key is not None and since_key < TYPING_S
    return max(FRAME_TYPING_S if typing else FRAME_S, FRAME_SHARE * frame_cost)


#: drawn lines kept for rows that left the screen (a dozen screens), for scrolling back;
#: beyond it the rows drawn longest ago give theirs up and are drawn again if they return.
#: A line is a ``Strip`` with seven caches of its own and the strips derived from it (about
#: 45 objects): keeping every line a long answer streamed past (42,000 for 5 MB on one
#: line) made the heap, and the cyclic collector's pass over it after the turn, several
#: times larger.
KEEP_LINES = 500


@cache
def _shown() -> tuple[type, ...]:
    """The events a transcript shows; the rest are for the sidebar, header and forks."""
    return (
        ev.TextDelta,
        ev.ReasoningDelta,
        ev.TurnStarted,
        ev.LLMCallEnded,
        ev.ToolCallStarted,
        ev.ToolCallArgumentsDelta,
        ev.ToolCallEnded,
        ev.ToolCallError,
        ev.QueuedMessageDelivered,
        ev.MessageFailed,
        ev.MessageRetried,
        ev.Aborted,
        ev.ErrorEvent,
        ev.CompactionApplied,
        ev.TurnEnded,
        ev.MessageStored,
    )


class Transcript(ScrollView, can_focus=False):
    DEFAULT_CSS = """
    Transcript {
        height: 1fr; padding: 0 1 1 1; scrollbar-size-vertical: 1; overflow-x: hidden;
    }
    """
    ALLOW_SELECT = True

    @dataclass
    class LoadOlder(Message):
        """Show the next batch of older history."""

    @dataclass
    class RefHighlighted(Message):
        ref_id: str
        block: RefInfo

    def __init__(
        self, *, id: str | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(id=id)
        #: what "the person typed a moment ago" is timed with (tests pass a fake one)
        self.clock = clock
        self.model = TranscriptModel()
        self._hint: str | Content = ""
        self._hint_wanted = False
        self._hint_loaded = False
        self._highlighted: Target | None = None
        self._rows: list[Row] = []
        self._starts: list[int] = [0]
        self._item_rows: dict[Item, tuple[tuple, list[Row]]] = {}
        self._block_rows: dict[Block | RefInfo, Row] = {}
        self._section_ends: dict[RewoundItem, Row] = {}
        #: rows holding drawn lines, the least recently drawn first, with how many
        self._drawn: dict[Row, int] = {}
        self._kept = 0
        self._structure = -1
        self._width_seen = 0
        self._palette: Palette | None = None
        self._palette_key: Any = None
        #: how many theme changes this widget has seen (part of every drawn row's key)
        self._theme_seen = 0
        self._painter: Painter | None = None
        self._pending = False
        self._stuck = True  # at the bottom: new text keeps it there
        self._frame_cost = 0.0
        #: when the person last typed (:attr:`clock`), for :func:`frame_gap`
        self._key_at: float | None = None
        #: kept for helpers that report on the old event pump: events are applied at once
        self._queue: deque[Any] = deque()
        self._pump = None
        #: find: what is highlighted on screen, every occurrence, and the one gone to
        self._found: re.Pattern[str] | None = None
        self._hits: list[Hit] = []
        self._hit = -1
        #: where the current occurrence is drawn: (row, which occurrence in the row)
        self._hit_at: tuple[Row, int] | None = None
        #: each drawn row's occurrences, line by line (found again when its lines change)
        self._marks: dict[Row, tuple[Sequence[Line], list[list[tuple[int, int, int]]]]] = {}

    # ---------------------------------------------------------------- state

    @property
    def current(self) -> AnswerItem | None:
        return self.model.current

    @property
    def older_count(self) -> int:
        return len(self.model.older)

    @property
    def items(self) -> list[Item]:
        return self.model.items

    def items_of(self, kind: str) -> list[Any]:
        """Shown items of one kind: "user", "answer", "tool", "error" or "divider"."""
        return self.model.of_kind(kind)

    def ref_blocks(self) -> list[RefInfo]:
        return self.model.ref_blocks()

    def queued_messages(self) -> list[UserItem]:
        return self.model.queued_messages()

    @property
    def highlighted(self) -> Target | None:
        return self._highlighted

    def set_empty_hint(self, hint: str | Content) -> None:
        """What to show while the conversation is empty (hidden by its first message; "": none)."""
        self._hint = hint
        self._hint_wanted = bool(hint)
        self._changed()

    @property
    def empty_hint(self) -> str | None:
        """The hint's text while it is shown, else None."""
        if not self._hint_shown:
            return None
        return str(self._hint)

    @property
    def _hint_shown(self) -> bool:
        return self._hint_wanted and self._hint_loaded and not self.model.items

    # --------------------------------------------------------------- events

    def post(self, event: ev.AgentEvent) -> None:
        """Show a runtime event; never waits (the model takes it at once, drawing follows).

        Applying an event to the model is cheap (a text delta costs its
        length); drawing waits for the next frame, so keys never queue
        behind rendering however fast the stream is.
        """
        if not isinstance(event, _shown()):
            return
        try:
            if not self.model.apply(event):
                return  # nothing on screen changed
        except Exception as exc:  # a display bug must not stop the stream
            self.log.error(f"showing {event!r} failed: {exc!r}")
        self._changed()

    def person_typed(self) -> None:
        """A key went into the input: a stream is redrawn less often for a moment."""
        self._key_at = self.clock()

    @property
    def next_frame_s(self) -> float:
        """How long a change waits for its redraw now."""
        since = None if self._key_at is None else self.clock() - self._key_at
        return frame_gap(self._frame_cost, since)

    async def handle(self, event: ev.AgentEvent) -> None:
        """Show one runtime event (tests call this; the app posts)."""
        self.post(event)

    @property
    def settled(self) -> bool:
        """Every posted event is drawn (tests and benchmarks wait for this)."""
        return not self._pending

    async def settle(self) -> None:
        """Draw what is pending now instead of at the next frame."""
        if self._pending:
            self._relayout()

    # -------------------------------------------------------------- history

    async def reset(self) -> None:
        """Empty the transcript (key switch)."""
        self.model.reset()
        self._item_rows.clear()
        self._block_rows.clear()
        self._section_ends.clear()
        self._drawn.clear()
        self._kept = 0
        self._highlighted = None
        self._hint_loaded = False
        self._stuck = True
        self.find_clear()
        self._relayout()

    async def load_history(self, history: Sequence[dict], *, tail: int = TAIL_ITEMS,
                           numbers: Sequence[int] = ()) -> None:
        """Show the last ``tail`` stored messages; keep the rest for :meth:`load_older`.

        ``numbers``: each message's stored number (the store's ``history_numbers()``).
        """
        self.model.load_history(history, tail=tail, numbers=numbers)
        self._hint_loaded = True
        self._stuck = True
        self._relayout()

    def set_pinned(self, numbers: frozenset[int]) -> None:
        """Show which messages are pinned (those built later, from history, too)."""
        for item in self.model.set_pinned(numbers):
            item.touch()
        self._changed()

    async def load_older(self, count: int = TAIL_ITEMS) -> int:
        """Put the next ``count`` older messages above, keeping what is on screen in place."""
        first = self.model.items[0] if self.model.items else None
        shown = self.model.load_older(count)
        if shown:
            self._relayout(keep=first)
        return shown

    async def add_user(self, text: str, *, queued: bool = False,
                       images: Sequence[tuple[str, str]] = ()) -> UserItem:
        message = self.model.add_user(text, queued=queued, images=images)
        self._changed()
        return message

    async def add_error(self, message: str, kind: str = "internal") -> ErrorItem:
        error = self.model.add_error(message, kind)
        self._changed()
        return error

    def deliver(self, text: str) -> UserItem | None:
        """A queued message reached the model: un-mark it and move it to where it now sits."""
        message = self.model.deliver(text)
        self._changed()
        return message

    async def finish_answer(self, *, interrupted: bool = False, reason: str = "") -> None:
        self.model.finish_answer(interrupted=interrupted, reason=reason)
        self._changed()

    def redraw(self) -> None:
        """Lay out and draw again now (after an item was changed in place)."""
        self._relayout()

    def shown_text(self, item: Item) -> str:
        """The lines ``item`` is drawn as, at the current width (what a person reads)."""
        width = self._width()
        lines: list[str] = []
        for row in self._rows_of(item):
            self._draw(row, width)
            lines += [line.strip.text.rstrip() for line in row.lines]
        return "\n".join(lines)

    def toggle_section(self, section: RewoundItem, expanded: bool | None = None) -> None:
        """Open (or close) a rewound section: its messages are drawn, marked, or hidden."""
        section.expanded = not section.expanded if expanded is None else expanded
        if section.expanded:
            self.model.open_section(section)
        section.touch()
        shown = self._highlighted
        if not section.expanded and isinstance(shown, Item) and shown.section is section:
            self.highlight(section)  # the highlight never stays on what is hidden
        self._relayout(keep=section)

    def highlighted_item(self) -> Item | None:
        """The highlighted message (a ref or code block inside one: that message), or None."""
        target = self._highlighted
        if isinstance(target, Item):
            return target
        if target is None:
            return None
        for item in self.model.items:
            if isinstance(item, AnswerItem) and (
                    target in item.refs or any(b.fence is target for b in item.blocks)):
                return item
        return None

    def set_expanded(self, expanded: bool = True) -> None:
        """Open (or close) every tool call, reasoning and compaction summary."""
        for item in self.model.items:
            if isinstance(item, (ToolItem, DividerItem, ErrorItem)):
                item.expanded = expanded
            elif isinstance(item, AnswerItem):
                item.reasoning_expanded = expanded
            item.touch()
        self._relayout()

    def visible_text(self) -> list[str]:
        """The lines on screen as plain text (what a person sees; tests read it)."""
        return [self.render_line(y).text for y in range(self.scrollable_content_region.height)]

    # ----------------------------------------------------------------- rows

    def _changed(self) -> None:
        """Something to draw: once per frame, however many events came."""
        if not self._pending:
            self._pending = True
            self.set_timer(self.next_frame_s, self._relayout)

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

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        """Every row was drawn in the old theme's colours: draw what is on screen again.

        The signal comes once the stylesheet has the new theme's variables; a row
        drawn between the change and the signal is stale too, and is redrawn.
        """
        self._theme_seen += 1
        self._relayout()

    def _draw(self, row: Row, width: int) -> bool:
        """Draw ``row`` if its lines are stale; True when its height changed."""
        painter = self._painter_for(width)
        key = (row_key(row, width), self._palette_key)
        if row.part == "banner":
            key = (key, self.older_count)
        elif row.part == "hint":
            key = (key, id(self._hint))
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

    # ---------------------------------------------------------------- lines

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
        other = Style(bgcolor=palette.mix(palette.warning, 0.4))
        # an ANSI theme's background is the terminal's own ("ansi_default" has no hex):
        # the current one is drawn reversed, in the terminal's own colours
        chosen = Style(reverse=True, bold=True) if palette.ansi else Style(
            bgcolor=palette.accent.rich_color, color=palette.bg.rich_color, bold=True)
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

    # ----------------------------------------------------------- scrolling

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._stuck = new_value >= self.max_scroll_y

    def scroll_bottom(self) -> None:
        self._stuck = True
        self._relayout()

    def _scroll_to_row(self, row: Row) -> None:
        start = self._row_start(row) + row.margin
        end = start + row.height - row.margin
        top, height = int(self.scroll_y), self.scrollable_content_region.height
        if start < top:
            self.scroll_to(y=start, animate=False, immediate=True, force=True)
        elif end > top + height:
            self.scroll_to(y=min(start, end - height), animate=False, immediate=True, force=True)
        self._stuck = self.scroll_y >= self.max_scroll_y

    # ------------------------------------------------------------- clicks

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not self._rows:
            return
        y = offset.y + int(self.scroll_y) - self._top_pad
        if y < 0:
            return
        row, line = self._row_at(y)
        if line < row.margin:
            return
        if row.part == "banner":
            event.stop()
            self.post_message(self.LoadOlder())
        elif row.part == "rewound":
            event.stop()
            self.toggle_section(row.item)  # type: ignore[arg-type]
        elif row.part in ("tool", "divider") and line == row.margin + (row.part == "divider"):
            event.stop()
            item = row.item
            assert isinstance(item, (ToolItem, DividerItem))
            item.expanded = not item.expanded
            item.touch()
            self._relayout()
        elif row.part == "error" and isinstance(row.item, ErrorItem) and row.item.has_detail:
            event.stop()
            row.item.expanded = not row.item.expanded
            row.item.touch()
            self._relayout()
        elif row.part == "reasoning" and line == row.margin:
            event.stop()
            answer = row.item
            assert isinstance(answer, AnswerItem)
            answer.reasoning_expanded = not answer.reasoning_expanded
            answer.touch()
            self._relayout()

    def on_transcript_load_older(self, message: LoadOlder) -> None:
        message.stop()
        self.run_worker(self.load_older(), exclusive=True, group="load-older")

    # ------------------------------------------------------------ highlight

    def targets(self) -> list[Target]:
        return self.model.targets()

    def move_highlight(self, step: int) -> Target | None:
        """ctrl+up / ctrl+down: the previous/next message, ref or code block; from the newest."""
        targets = self.targets()
        if not targets:
            return None
        current = self._highlighted
        if current is not None and any(t is current for t in targets):
            index = next(i for i, t in enumerate(targets) if t is current)
            index = max(0, min(len(targets) - 1, index + step))
        else:
            index = len(targets) - 1
        return self.highlight(targets[index])

    def highlight(self, target: Target) -> Target:
        if self._highlighted is not None and self._highlighted is not target:
            self._highlighted.highlighted = False
        self._highlighted = target
        target.highlighted = True
        self._relayout()
        row = self._row_of(target)
        if row is not None:
            self._scroll_to_row(row)
        if isinstance(target, RefInfo):
            self.post_message(self.RefHighlighted(target.ref_id, target))
        self.refresh()
        return target

    def _row_of(self, target: Target) -> Row | None:
        for row in self._rows:
            if row.item is target:
                return row
            block = row.block
            if block is None:
                continue
            if isinstance(target, RefInfo) and block.kind == "ref_top" and block.ref is target:
                return row
            if isinstance(target, Fence) and block.fence is target:
                return row
        return None

    # ----------------------------------------------------------------- find

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

    def highlight_ref_id(self, ref_id: str) -> RefInfo | None:
        """The current (last, not superseded) block with ``ref_id``."""
        blocks = [b for b in self.ref_blocks() if b.ref_id == ref_id]
        if not blocks:
            return None
        current = [b for b in blocks if not b.superseded]
        chosen = (current or blocks)[-1]
        self.highlight(chosen)
        return chosen

    def target_ref(self) -> RefInfo | None:
        """What export acts on: the highlighted ref, else the newest closed one."""
        if isinstance(self._highlighted, RefInfo):
            return self._highlighted
        blocks = [b for b in self.ref_blocks() if b.closed]
        return blocks[-1] if blocks else None

    def target(self) -> Target | None:
        """What copy acts on: whatever is highlighted, else the newest closed ref."""
        return self._highlighted or self.target_ref()


def _position(hits: Sequence[Hit], hit: Hit) -> int | None:
    """Where ``hit`` is among ``hits`` found again (the same item and occurrence)."""
    for index, other in enumerate(hits):
        if (other.item is hit.item and other.older == hit.older
                and other.occurrence == hit.occurrence):
            return index
    return None
