"""The scrolling conversation: one Line-API widget whose cost follows the screen.

Runtime events and stored history go into a :class:`TranscriptModel` (pure
data, see :mod:`selfref_tui.ui.transcript`); the widget cuts its items into
rows and draws only the rows on screen (:mod:`selfref_tui.ui.transcript.layout`,
each row painted by :mod:`selfref_tui.ui.transcript.paint`). Streaming
redraws the last block of the last answer only, at most every
:data:`FRAME_S`. So an answer with 10,000 refs, or 1 MB on one line, costs
what the screen shows, and the tree the layout walks is this one widget.

It sticks to the bottom while the person is there: new text keeps it at the
end until they scroll up; scrolling back to the end (or End on an empty
input) re-attaches it. Long histories show their tail; older messages wait
behind a banner and come in on demand.

This module holds what the transcript shows and when: the events it takes,
the pace of its redraws, history, clicks, scrolling and the highlight. The
lines on screen and the selection are :mod:`selfref_tui.ui.transcript.lines`,
find's marks :mod:`selfref_tui.ui.transcript.find_marks`, both mixed in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from textual import events
from textual.content import Content
from textual.message import Message
from textual.scroll_view import ScrollView

from selfref_tui.ui.lazy_import import LazyModule
from selfref_tui.ui.transcript.answer import AnswerItem, Fence, RefInfo
from selfref_tui.ui.transcript.find_marks import FindMarks
from selfref_tui.ui.transcript.lines import ShownLines
from selfref_tui.ui.transcript.model import (
    DividerItem,
    ErrorItem,
    Item,
    RewoundItem,
    ToolItem,
    UserItem,
)
from selfref_tui.ui.transcript.reducer import Target, TranscriptModel
from selfref_tui.ui.transcript.rows import Row
from selfref_tui.ui.transcript.stored_history import TAIL_ITEMS

if TYPE_CHECKING:
    from selfref_tui.agent import events as ev
else:  # the first frame has no events to show
    ev = LazyModule("selfref_tui.agent.events")

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


class Transcript(ShownLines, FindMarks, ScrollView, can_focus=False):
    # No right padding: every row keeps a blank column at its right end (the painter's),
    # so a ref box or an answer ends under the input box's right border, not 2 short.
    DEFAULT_CSS = """
    Transcript {
        height: 1fr; padding: 0 0 1 1; scrollbar-size-vertical: 1; overflow-x: hidden;
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
        self._init_layout()
        self._pending = False
        self._stuck = True  # at the bottom: new text keeps it there
        self._frame_cost = 0.0
        #: when the person last typed (:attr:`clock`), for :func:`frame_gap`
        self._key_at: float | None = None
        self._init_find()

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

    def unqueue(self, count: int) -> list[UserItem]:
        """The last ``count`` queued messages leave the transcript (never sent)."""
        gone = self.model.unqueue(count)
        if gone:
            self._changed()
        return gone

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

    # ---------------------------------------------------------------- theme

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        """Every row was drawn in the old theme's colours: draw what is on screen again.

        The signal comes once the stylesheet has the new theme's variables; a row
        drawn between the change and the signal is stale too, and is redrawn.
        """
        self._theme_seen += 1
        self._relayout()

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
