"""The scrolling conversation: live events and stored history become the same widgets.

The transcript owns the per-turn state a stream needs (the answer being
written, tool cards by call id, queued messages) so the app only routes
events here by key. It is anchored to the bottom (``anchor()``): new text
keeps it there until the person scrolls up, and scrolling back to the end
(or End on an empty input) re-attaches it.

Long histories mount their tail first; older messages wait behind a banner
and mount on demand, so opening a key with 100,000 messages costs the same
first frame as opening an empty one.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

from textual import events
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from selfref_tui.ui.lazy_import import LazyModule
from selfref_tui.ui.stream_stop import cancelled_since
from selfref_tui.ui.widgets.compaction_divider import CompactionDivider
from selfref_tui.ui.widgets.error_block import ErrorBlock
from selfref_tui.ui.widgets.settled_markdown import SettledMarkdown, capture
from selfref_tui.ui.widgets.tool_card import ToolCard
from selfref_tui.ui.widgets.user_message import UserMessage

if TYPE_CHECKING:
    from selfref_tui.agent import events as ev
    from selfref_tui.ui.widgets import assistant_message as answers
    from selfref_tui.ui.widgets import ref_block as pieces
    from selfref_tui.ui.widgets.assistant_message import AssistantMessage
    from selfref_tui.ui.widgets.ref_block import RefBlock, StreamingMarkdown
else:  # the first frame has no answers to show: Markdown and the ref parser wait
    ev = LazyModule("selfref_tui.agent.events")
    answers = LazyModule("selfref_tui.ui.widgets.assistant_message")
    pieces = LazyModule("selfref_tui.ui.widgets.ref_block")

TAIL_ITEMS = 50

#: how often finished pieces that scrolled out of view are settled (see SettledMarkdown)
SETTLE_EVERY_S = 0.25
#: the most one sweep spends capturing (a capture takes ~7 ms, up to ~40): keys wait meanwhile
SETTLE_BUDGET_S = 0.015


def _scrolls_sideways(piece: Widget) -> bool:
    """A code block wider than the piece, which the person scrolls sideways to read."""
    return any(fence.max_scroll_x > 0 for fence in piece.query("MarkdownFence"))


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
        ev.Aborted,
        ev.ErrorEvent,
        ev.CompactionApplied,
        ev.TurnEnded,
    )


class _EmptyHint(Static):
    """What a new conversation can do, until its first message arrives."""

    DEFAULT_CSS = """
    _EmptyHint {
        margin: 1 2; padding: 1 2; height: auto;
        color: $text-muted; border: round $foreground 15%;
    }
    """


class _OlderBanner(Static, can_focus=True):
    """ "N earlier messages" — click or Enter mounts the next batch."""

    DEFAULT_CSS = """
    _OlderBanner {
        height: 1; color: $text-muted; text-style: italic; content-align: center middle;
    }
    _OlderBanner:focus, _OlderBanner:hover { color: $accent; }
    """

    def set_count(self, count: int) -> None:
        self.update(f"↑ {count} earlier messages — click or press Enter to show more")
        self.display = count > 0

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(Transcript.LoadOlder())

    def key_enter(self, event: events.Key) -> None:
        event.stop()
        self.post_message(Transcript.LoadOlder())


class Transcript(VerticalScroll):
    DEFAULT_CSS = """
    Transcript { height: 1fr; padding: 0 1 1 1; scrollbar-size-vertical: 1; }
    Transcript .archived { opacity: 60%; }
    """

    @dataclass
    class LoadOlder(Message):
        """Mount the next batch of older history."""

    @dataclass
    class RefHighlighted(Message):
        ref_id: str
        block: RefBlock

    def __init__(self, *, id: str | None = None, settle_every: float | None = SETTLE_EVERY_S):
        """``settle_every``: seconds between sweeps of :meth:`settle_out_of_view` (None: never)."""
        super().__init__(id=id)
        self._settle_every = settle_every
        self._current: AssistantMessage | None = None
        self._cards: dict[str, ToolCard] = {}
        self._older: list[dict] = []
        self._highlighted: RefBlock | None = None
        self._banner = _OlderBanner("")
        self._hint = _EmptyHint("")
        self._hint.display = False
        self._hint_wanted = False
        self._queue: deque[ev.AgentEvent] = deque()
        self._pump: asyncio.Task[None] | None = None
        #: finished pieces, in order, not settled yet
        self._unsettled: list[StreamingMarkdown] = []

    def compose(self):  # type: ignore[override]
        yield self._banner
        yield self._hint

    def set_empty_hint(self, hint: str | Content) -> None:
        """What to show while the conversation is empty (hidden by its first message; "": none)."""
        self._hint.update(hint)
        self._hint_wanted = bool(hint)

    @property
    def empty_hint(self) -> str | None:
        """The hint's text while it is shown, else None."""
        if not self._hint.display:
            return None
        return str(self._hint.visual)

    def _is_chrome(self, widget: Widget) -> bool:
        return widget is self._banner or widget is self._hint

    async def _mount_message(self, widget: Widget) -> None:
        self._hint.display = False
        await self.mount(widget)

    def on_mount(self) -> None:
        self._banner.set_count(0)
        self.anchor()
        if self._settle_every:
            self.set_interval(self._settle_every, self.settle_out_of_view)

    def on_streaming_markdown_finished(self, message: StreamingMarkdown.Finished) -> None:
        message.stop()
        self._unsettled.append(message.piece)

    def settle_out_of_view(self) -> int:
        """Swap finished pieces that are out of view for their lines; how many.

        Whether a piece is on screen comes from the screen's compositor (its
        visible map, already built for the last frame): ``Widget.region`` of
        an off-screen widget would build the full map, a walk of every
        widget, which is the very cost this avoids.
        """
        if not self._unsettled:
            return 0
        try:
            visible = self.screen._compositor.visible_widgets
        except Exception:  # a Textual without it: pieces stay live
            self._unsettled.clear()
            return 0
        settled = 0
        keep: list[StreamingMarkdown] = []
        deadline = time.perf_counter() + SETTLE_BUDGET_S
        for index, piece in enumerate(self._unsettled):
            if time.perf_counter() > deadline:
                keep.extend(self._unsettled[index:])  # the next sweep goes on
                break
            if not piece.is_attached or piece.streaming:
                continue
            if piece in visible or not piece.outer_size.height:
                keep.append(piece)  # on screen, or not laid out yet
                continue
            if _scrolls_sideways(piece):
                continue  # captured lines would cut its long code lines: it stays live
            strips = capture(piece)
            parent = piece.parent
            if strips is None or not isinstance(parent, Widget):
                continue  # cannot capture it: it stays live
            parent.mount(
                SettledMarkdown(piece.text, strips, piece.outer_size.width, live=piece.live),
                after=piece,
            )
            piece.remove()
            settled += 1
        self._unsettled = keep
        return settled

    # ---------------------------------------------------------------- state

    @property
    def current(self) -> AssistantMessage | None:
        return self._current

    @property
    def older_count(self) -> int:
        return len(self._older)

    @property
    def highlighted(self) -> RefBlock | None:
        if self._highlighted is not None and not self._highlighted.is_attached:
            self._highlighted = None
        return self._highlighted

    def ref_blocks(self) -> list[RefBlock]:
        return list(self.query(pieces.RefBlock))

    def queued_messages(self) -> list[UserMessage]:
        return [m for m in self.query(UserMessage) if m.queued]

    # -------------------------------------------------------------- history

    async def reset(self) -> None:
        """Empty the transcript (key switch)."""
        self._queue.clear()  # the old key's events: its transcript is going
        await self.settle()
        self._current = None
        self._cards.clear()
        self._older = []
        self._highlighted = None
        await self.remove_children([c for c in self.children if not self._is_chrome(c)])
        self._banner.set_count(0)
        self._hint.display = False

    async def load_history(self, history: Sequence[dict], *, tail: int = TAIL_ITEMS) -> None:
        """Mount the last ``tail`` items now; keep the rest for :meth:`load_older`."""
        items = [m for m in history if m.get("role") != "system"]
        cut = max(0, len(items) - tail)
        # Never split an assistant message from its tool results.
        while 0 < cut < len(items) and items[cut].get("role") == "tool":
            cut -= 1
        self._older = list(items[:cut])
        await self._render_items(items[cut:])
        # Only on an empty conversation: not above an error shown while opening it.
        self._hint.display = self._hint_wanted and not any(
            not self._is_chrome(child) for child in self.children
        )
        self._banner.set_count(len(self._older))
        self._mark_superseded()
        self.scroll_end(animate=False, immediate=True)

    async def load_older(self, count: int = TAIL_ITEMS) -> int:
        if not self._older:
            return 0
        cut = max(0, len(self._older) - count)
        while 0 < cut < len(self._older) and self._older[cut].get("role") == "tool":
            cut -= 1
        batch, self._older = self._older[cut:], self._older[:cut]
        anchor = next((c for c in self.children if not self._is_chrome(c)), None)
        await self._render_items(batch, before=anchor)
        self._banner.set_count(len(self._older))
        self._mark_superseded()
        return len(batch)

    async def _render_items(self, items: Sequence[dict], *, before: Widget | None = None) -> None:
        widgets: list[Widget] = []
        pending: list[tuple[dict, AssistantMessage]] = []
        for item in items:
            role = item.get("role")
            archived = "archived" if item.get("archived") else None
            if role == "compaction":
                summary = item.get("summary") or {}
                widgets.append(CompactionDivider(summary, int(item.get("messages_before") or 0)))
            elif role == "user":
                if item.get("compaction") is not None:
                    continue  # the summary itself: shown by its divider
                if item.get("runtime_note"):
                    continue  # the runtime's own prompt to the model (hidden live too)
                content = item.get("content")
                if isinstance(content, list):
                    content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
                shown = UserMessage(str(content or ""), classes=archived)
                shown.started = True  # history: no turn will report it again
                widgets.append(shown)
            elif role == "assistant":
                message = answers.AssistantMessage(live=False, classes=archived)
                widgets.append(message)
                pending.append((item, message))
                for call in item.get("tool_calls") or []:
                    fn = call.get("function") or {}
                    card = ToolCard(
                        str(call.get("id", "")),
                        str(fn.get("name", "tool")),
                        arguments=str(fn.get("arguments", "")),
                        classes=archived,
                    )
                    self._cards[card.call_id] = card
                    widgets.append(card)
            elif role == "tool":
                call_id = str(item.get("tool_call_id", ""))
                card = self._cards.get(call_id)
                if card is None:
                    card = ToolCard(call_id, str(item.get("name") or "tool"), classes=archived)
                    self._cards[call_id] = card
                    widgets.append(card)
                content = str(item.get("content") or "")
                if item.get("cancelled"):
                    card.cancel(str(item.get("abort_reason") or content))
                else:
                    card.finish(content, float(item.get("duration_s") or 0.0))
                    card.duration_s = item.get("duration_s")
                    card.title = card._label_text()
        if widgets:
            await self.mount_all(widgets, before=before)
        for item, message in pending:
            await message.render_stored(item)
        self._cards = {k: c for k, c in self._cards.items() if c.status == "running"}

    def _mark_superseded(self) -> None:
        latest: dict[str, RefBlock] = {}
        blocks = [b for b in self.ref_blocks() if b.closed]
        for block in blocks:
            latest[block.ref_id] = block
        for block in blocks:
            block.set_superseded(latest[block.ref_id] is not block)

    # ----------------------------------------------------------------- live

    async def add_user(self, text: str, *, queued: bool = False) -> UserMessage:
        message = UserMessage(text, queued=queued)
        await self._mount_message(message)
        return message

    async def add_error(self, message: str, kind: str = "internal") -> ErrorBlock:
        block = ErrorBlock(message, kind)
        await self._mount_message(block)
        return block

    def deliver(self, text: str) -> UserMessage | None:
        """A queued message reached the model: un-mark it and move it to where it now sits."""
        for message in self.queued_messages():
            if message.text == text:
                message.delivered()
                message.started = True
                last = self.children[-1] if self.children else None
                if last is not None and last is not message:
                    self.move_child(message, after=last)
                return message
        return None

    async def _answer(self) -> AssistantMessage:
        if self._current is None or self._current.finished:
            self._current = answers.AssistantMessage()
            await self._mount_message(self._current)
        return self._current

    async def finish_answer(self, *, interrupted: bool = False, reason: str = "") -> None:
        current, self._current = self._current, None
        if current is not None:
            closed = await current.finish(interrupted=interrupted, reason=reason)
            if closed:
                self._mark_superseded()

    def post(self, event: ev.AgentEvent) -> None:
        """Queue a runtime event to be shown, in order, without waiting for it.

        The app calls this from its message handler: awaiting the widget
        work there (mounting blocks, parsing Markdown) made key presses wait
        behind rendering for seconds on a long answer. A task of the
        transcript's own shows the queue in order; text deltas that queue up
        meanwhile are joined into one write.
        """
        if not isinstance(event, _shown()):
            return
        queue = self._queue
        last = queue[-1] if queue else None
        if isinstance(event, ev.TextDelta) and isinstance(last, ev.TextDelta):
            queue[-1] = replace(last, text=last.text + event.text)
        else:
            queue.append(event)
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._run_queue())

    async def _run_queue(self) -> None:
        task = asyncio.current_task()
        while self._queue:
            event = self._queue.popleft()
            before = task.cancelling() if task is not None else 0
            try:
                await self.handle(event)
            except Exception as exc:  # a display bug must not stop the stream
                self.log.error(f"showing {event!r} failed: {exc!r}")
            except asyncio.CancelledError:
                # A child task's cancellation leaking out of a widget call
                # (see stream_stop) must cost one event, not every event after it.
                if cancelled_since(task, before):
                    raise
                self.log.error(f"showing {event!r} was cancelled")

    @property
    def settled(self) -> bool:
        """Every posted event is on screen (tests and benchmarks wait for this)."""
        return not self._queue and (self._pump is None or self._pump.done())

    async def settle(self) -> None:
        """Wait until every posted event has been shown."""
        while not self.settled:
            if self._pump is not None and not self._pump.done():
                await asyncio.shield(self._pump)
            elif self._queue:
                await self._run_queue()

    async def handle(self, event: ev.AgentEvent) -> None:
        """Show one runtime event for this transcript's key (now; see :meth:`post`)."""
        if isinstance(event, ev.TextDelta):
            answer = await self._answer()
            if await answer.feed(event.text):
                self._mark_superseded()
        elif isinstance(event, ev.ReasoningDelta):
            await (await self._answer()).feed_reasoning(event.text)
        elif isinstance(event, ev.TurnStarted):
            text = event.user_text
            if text and self.deliver(text) is None and not self._awaiting_start(text):
                await self.add_user(text)
        elif isinstance(event, ev.LLMCallEnded):
            await self.finish_answer(interrupted=event.finish_reason == "aborted")
        elif isinstance(event, ev.ToolCallStarted):
            await self.finish_answer()
            card = ToolCard(event.call_id, event.name)
            self._cards[event.call_id] = card
            await self._mount_message(card)
        elif isinstance(event, ev.ToolCallArgumentsDelta):
            card = self._cards.get(event.call_id)
            if card is not None:
                card.append_arguments(event.delta)
        elif isinstance(event, (ev.ToolCallEnded, ev.ToolCallError)):
            card = self._cards.pop(event.call_id, None)
            if card is None:
                card = ToolCard(event.call_id, event.name)
                await self._mount_message(card)
            if isinstance(event, ev.ToolCallEnded):
                card.finish(event.result, event.duration_s, arguments=event.arguments)
            else:
                card.fail(event.error, event.duration_s, arguments=event.arguments)
        elif isinstance(event, ev.QueuedMessageDelivered):
            if self.deliver(event.text) is None:
                await self.add_user(event.text)
        elif isinstance(event, ev.Aborted):
            await self.finish_answer(interrupted=True, reason=event.reason)
            last = self._last_answer()
            if last is not None and (last.interrupted or event.stage == "stream"):
                last.mark_interrupted(event.reason)
            for card in list(self._cards.values()):
                card.cancel(event.reason)
            self._cards.clear()
        elif isinstance(event, ev.ErrorEvent):
            current = self._current
            await self.finish_answer(
                interrupted=current is not None and bool(current.text), reason="stream failed"
            )
            await self.add_error(event.message, event.kind)
        elif isinstance(event, ev.CompactionApplied):
            await self.finish_answer()
            for child in self.children:
                if not self._is_chrome(child):
                    child.add_class("archived")
                    pieces.thaw_within(child)  # settled lines were captured without the dimming
            await self._mount_message(CompactionDivider(event.summary, event.messages_before))
        elif isinstance(event, ev.TurnEnded):
            await self.finish_answer(interrupted=event.outcome == "aborted")
            for card in list(self._cards.values()):
                card.cancel("turn ended")
            self._cards.clear()

    def _awaiting_start(self, text: str) -> bool:
        """The app already showed this message when it was sent (claimed once, oldest first).

        Not just the last one: a message sent right after it may already be
        below it, queued, when the turn reports starting.
        """
        for child in self.query_children(UserMessage):
            if not child.queued and not child.started and child.text == text:
                child.started = True
                return True
        return False

    def _last_answer(self) -> AssistantMessage | None:
        for child in reversed(self.children):
            if isinstance(child, answers.AssistantMessage):
                return child
        return None

    # ----------------------------------------------------------------- refs

    def move_highlight(self, step: int) -> RefBlock | None:
        """ctrl+up / ctrl+down: the previous/next ref; starts from the newest."""
        blocks = self.ref_blocks()
        if not blocks:
            return None
        current = self.highlighted
        if current in blocks:
            index = max(0, min(len(blocks) - 1, blocks.index(current) + step))
        else:
            index = len(blocks) - 1
        return self.highlight(blocks[index])

    def highlight(self, block: RefBlock) -> RefBlock:
        if self._highlighted is not None and self._highlighted is not block:
            self._highlighted.set_highlighted(False)
        self._highlighted = block
        block.set_highlighted(True)
        self.scroll_to_widget(block, animate=False, top=False)
        self.post_message(self.RefHighlighted(block.ref_id, block))
        return block

    def highlight_ref_id(self, ref_id: str) -> RefBlock | None:
        """The current (last, not superseded) block with ``ref_id``."""
        blocks = [b for b in self.ref_blocks() if b.ref_id == ref_id]
        if not blocks:
            return None
        current = [b for b in blocks if not b.has_class("-superseded")]
        return self.highlight((current or blocks)[-1])

    def target_ref(self) -> RefBlock | None:
        """What export/copy act on: the highlighted ref, else the newest one."""
        if self.highlighted is not None:
            return self.highlighted
        blocks = [b for b in self.ref_blocks() if b.closed]
        return blocks[-1] if blocks else None

    def scroll_bottom(self) -> None:
        self.anchor()

    def on_transcript_load_older(self, message: LoadOlder) -> None:
        message.stop()
        self.run_worker(self.load_older(), exclusive=True, group="load-older")
