"""An answer from the model, streamed or re-rendered from the store.

Text deltas go through :class:`StreamingRefParser` so a ``<ref>`` block gets
its own titled block the moment its opening tag is complete; everything else
streams into Markdown. Stored answers are fed through the same parser in one
piece, so history looks exactly like a live answer did.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from selfref_tui.refs.parser import Segment, StreamingRefParser
from selfref_tui.safety import content
from selfref_tui.ui.widgets.reasoning_view import ReasoningView
from selfref_tui.ui.widgets.ref_block import Flow, RefBlock


class AssistantMessage(Vertical):
    DEFAULT_CSS = """
    AssistantMessage {
        height: auto;
        padding: 0 1 0 2;
        margin: 1 0 0 0;
        border-left: outer $secondary 40%;
    }
    AssistantMessage > .marker { display: none; color: $warning; text-style: italic; }
    AssistantMessage.-interrupted > .marker { display: block; }
    AssistantMessage.-interrupted { border-left: outer $warning 60%; }
    AssistantMessage > .waiting { color: $text-muted; text-style: italic; }
    """

    def __init__(self, *, live: bool = True, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._parser = StreamingRefParser()
        self._body = Flow(live=live, classes="body")
        self._stack: list[Flow] = [self._body]
        self._reasoning: ReasoningView | None = None
        self._text: list[str] = []
        self.finished = False
        self.interrupted = False

    def compose(self) -> ComposeResult:
        yield self._body
        yield Static("", classes="marker")

    @property
    def text(self) -> str:
        """The raw answer text received so far (tags included)."""
        return "".join(self._text)

    @property
    def ref_blocks(self) -> list[RefBlock]:
        return list(self.query(RefBlock))

    async def feed(self, text: str) -> list[RefBlock]:
        """Show a text delta; returns the refs this delta closed."""
        self._text.append(text)
        return await self._apply(self._parser.feed(text))

    async def feed_reasoning(self, text: str) -> None:
        if self._reasoning is None:
            self._reasoning = ReasoningView()
            await self.mount(self._reasoning, before=self._body)
        self._reasoning.append(text)

    async def finish(self, *, interrupted: bool = False, reason: str = "") -> list[RefBlock]:
        """End of the stream: flush, mark unclosed refs, render every piece in full."""
        if self.finished:
            if interrupted:
                self.mark_interrupted(reason)
            return []
        self.finished = True
        closed = await self._apply(self._parser.finish())
        for block in self._stack[1:]:
            if isinstance(block, RefBlock):
                block.mark_unfinished()
        self._stack = [self._body]
        await self._body.finish()
        if interrupted:
            self.mark_interrupted(reason)
        return closed

    def mark_interrupted(self, reason: str = "") -> None:
        self.interrupted = True
        self.add_class("-interrupted")
        label = "■ interrupted" + (f" — {reason}" if reason else "")
        self.query_one(".marker", Static).update(content(label))  # the reason may be a server's

    async def _apply(self, segments: list[Segment]) -> list[RefBlock]:
        closed: list[RefBlock] = []
        for seg in segments:
            if seg.kind == "text":
                await self._body.write_text(seg.text)
            elif seg.kind == "ref_text":
                await self._stack[-1].write_text(seg.text)
            elif seg.kind == "ref_open":
                block = await self._stack[-1].open_ref(seg.ref_id or "")
                self._stack.append(block)
            elif seg.kind == "ref_close" and len(self._stack) > 1:
                block = self._stack.pop()
                if isinstance(block, RefBlock):
                    await block.finish(full_render=not self._body.live)
                    content = next(
                        (r.content for r in reversed(self._parser.refs) if r.id == block.ref_id), ""
                    )
                    block.close(content)
                    closed.append(block)
        return closed

    async def render_stored(self, message: dict) -> None:
        """Fill a mounted (``live=False``) message from its stored dict, rendered once."""
        reasoning = message.get("reasoning_details") or message.get("reasoning_content")
        if isinstance(reasoning, list):
            reasoning = "\n".join(
                str(r.get("text", "")) if isinstance(r, dict) else str(r) for r in reasoning
            )
        if reasoning:
            await self.feed_reasoning(str(reasoning))
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if content:
            await self.feed(str(content))
        await self.finish(
            interrupted=bool(message.get("truncated")),
            reason=str(message.get("abort_reason") or ""),
        )
