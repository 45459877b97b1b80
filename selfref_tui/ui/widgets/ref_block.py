"""Streaming Markdown flows and the highlighted ``ref:ID`` blocks inside them.

An answer is not one Markdown document: ``<ref>`` blocks cut it into pieces,
and each piece streams into its own :class:`StreamingMarkdown` through
``Markdown.get_stream`` (which batches appends and re-parses only the last
block) instead of re-rendering the whole answer per chunk. A ref is itself a
flow, so a nested ref is a block inside a block and fenced code inside a ref
is syntax-highlighted like anywhere else.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream

from selfref_tui import safety
from selfref_tui.ui.stream_stop import stop_stream
from selfref_tui.ui.widgets.settled_markdown import SettledMarkdown

#: the shortest gap between two writes into a piece's ``MarkdownStream`` (~10 a second)
APPEND_PERIOD_S = 0.1


class StreamingMarkdown(Markdown):
    """Markdown fed in fragments; one full render when the stream stops."""

    DEFAULT_CSS = """
    StreamingMarkdown { margin: 0; padding: 0; background: transparent; }
    """

    @dataclass
    class Finished(Message):
        """A piece will not change again: the transcript may settle it when out of view."""

        piece: StreamingMarkdown

    def __init__(
        self,
        markdown: str = "",
        *,
        live: bool = True,
        finished: bool = False,
        classes: str | None = None,
    ) -> None:
        """``finished``: ``markdown`` is the whole text, rendered when mounted."""
        # What Markdown parses is shown text only (inert); ``text`` keeps the exact answer.
        super().__init__(safety.inert(markdown), classes=classes)
        self._chunks: list[str] = [markdown] if markdown else []
        self._stream: MarkdownStream | None = None
        self._feeder: asyncio.Task[None] | None = None
        self._pending: list[str] = []
        #: False for stored text: collect it all and render once at finish()
        self.live = live
        self._finished = finished

    def on_mount(self) -> None:
        if self._finished:
            self.post_message(self.Finished(self))

    @property
    def text(self) -> str:
        return "".join(self._chunks)

    @property
    def streaming(self) -> bool:
        return not self._finished

    def write(self, fragment: str) -> None:
        """Queue a fragment; it is shown within :data:`APPEND_PERIOD_S`, never awaited.

        ``MarkdownStream`` appends whatever queued while its previous append
        ran, so on a fast stream it appends as often as the loop lets it, and
        every append re-parses the last block and lays out the screen again.
        A feeder hands it what arrived at most every :data:`APPEND_PERIOD_S`,
        which leaves the loop to keys and the network in between.
        """
        if not fragment or self._finished:
            return
        self._chunks.append(fragment)
        if not self.live:
            return
        self._pending.append(fragment)
        if self._feeder is None:
            self._feeder = asyncio.create_task(self._feed())

    async def _feed(self) -> None:
        while self._pending:
            await self._write_pending()
            await asyncio.sleep(APPEND_PERIOD_S)
        self._feeder = None

    async def _write_pending(self) -> None:
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        text = "".join(self._pending)
        self._pending.clear()
        await self._stream.write(safety.inert(text))

    async def finish(self, *, full_render: bool = True) -> None:
        """Stop the stream; with ``full_render``, parse the whole text once more.

        The end of an answer renders its last pieces in full (a fence left
        open, a list cut mid-item: the final parse wins). A piece cut off
        mid-answer by an opening ``<ref>`` skips that: its stream has parsed
        every line it will ever hold, and mounting all its blocks a second
        time was a third of the cost of a long answer.
        """
        if self._finished:
            return
        self._finished = True
        if self._feeder is not None:
            self._feeder.cancel()
            self._feeder = None
        if self._pending:
            await self._write_pending()
        if self._stream is not None:
            stream, self._stream = self._stream, None
            if not await stop_stream(stream):
                full_render = True  # the stream's last appends never ran
        if full_render or not self.live:
            await self.update(safety.inert(self.text))
        self.post_message(self.Finished(self))


def thaw_within(widget: Widget) -> None:
    """Settled lines carry the styles they were captured under: a style change thaws them."""
    for settled in list(widget.query(SettledMarkdown)):
        settled.thaw()


class Flow(Vertical):
    """A run of Markdown pieces and ref blocks, written in order as text arrives."""

    DEFAULT_CSS = """
    Flow { height: auto; }
    """

    def __init__(self, *, live: bool = True, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.live = live
        self._held_space = ""

    @property
    def _tail(self) -> StreamingMarkdown | None:
        last = self.children[-1] if self.children else None
        if isinstance(last, StreamingMarkdown) and last.streaming:
            return last
        return None

    async def write_text(self, text: str) -> None:
        tail = self._tail
        if tail is None:
            if not text.strip():
                # Whitespace between blocks would only make an empty paragraph.
                self._held_space += text
                return
            text, self._held_space = self._held_space + text, ""
            tail = StreamingMarkdown(live=self.live)
            await self.mount(tail)
        tail.write(text)

    async def open_ref(self, ref_id: str) -> RefBlock:
        tail = self._tail
        if tail is not None:
            await tail.finish(full_render=False)
        self._held_space = ""
        block = RefBlock(ref_id, live=self.live)
        await self.mount(block)
        return block

    async def finish(self, *, full_render: bool = True) -> None:
        for child in list(self.children):
            if isinstance(child, (StreamingMarkdown, Flow)):
                await child.finish(full_render=full_render)


class RefBlock(Flow):
    """A ``<ref id=…>`` block: bordered, titled ``ref:ID``, selectable for export."""

    DEFAULT_CSS = """
    RefBlock {
        height: auto;
        border: round $accent 60%;
        border-title-color: $accent;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        padding: 0 1;
        margin: 1 0 0 0;
        background: $accent 6%;
    }
    RefBlock.-open { border: round $warning 70%; border-title-color: $warning; }
    RefBlock.-unfinished { border: dashed $warning 70%; border-title-color: $warning; }
    RefBlock.-superseded {
        opacity: 60%;
        border: round $foreground 20%;
        border-title-color: $text-muted;
    }
    RefBlock MarkdownFence { margin: 0; }
    RefBlock.-highlighted { border: heavy $primary; background: $primary 10%; }
    """

    def __init__(self, ref_id: str, *, live: bool = True, content: str | None = None) -> None:
        super().__init__(live=live, classes="-open" if content is None else None)
        self.ref_id = ref_id
        #: the ref's content once closed (the text tools and export use)
        self.content: str | None = content
        self.border_title = safety.content(f"ref:{ref_id}", line=True)  # a str title is markup

    def on_mount(self) -> None:
        self._update_subtitle()

    @property
    def closed(self) -> bool:
        return self.content is not None

    @property
    def text_so_far(self) -> str:
        """What has arrived, for copying a ref that is still streaming."""
        if self.content is not None:
            return self.content
        parts: list[str] = []
        for child in self.children:
            if isinstance(child, (StreamingMarkdown, SettledMarkdown)):
                parts.append(child.text)
            elif isinstance(child, RefBlock):
                parts.append(child.text_so_far)
        return "".join(parts)

    def close(self, content: str) -> None:
        self.content = content
        self.remove_class("-open")
        self._update_subtitle()

    def mark_unfinished(self) -> None:
        """The answer ended (or was stopped) before ``</ref>``: not stored as a ref."""
        self.remove_class("-open")
        self.add_class("-unfinished")
        self._update_subtitle()

    def set_superseded(self, superseded: bool = True) -> None:
        if superseded != self.has_class("-superseded"):
            self.set_class(superseded, "-superseded")
            thaw_within(self)
        self._update_subtitle()

    def set_highlighted(self, highlighted: bool) -> None:
        if highlighted != self.has_class("-highlighted"):
            self.set_class(highlighted, "-highlighted")
            thaw_within(self)

    def _update_subtitle(self) -> None:
        if self.has_class("-unfinished"):
            label = "unfinished"
        elif self.content is None:
            label = "streaming…" if self.live else ""  # history: closed in a moment
        else:
            lines = self.content.count("\n") + 1 if self.content else 0
            label = f"{lines} ln · {len(self.content)} ch"
            if self.has_class("-superseded"):
                label += " · superseded"
        self.border_subtitle = Content(label)
