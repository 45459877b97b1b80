"""Exactly what the model will see on its next call, message by message.

The messages are the runtime's rendered provider messages (``Agent.preview_request``),
shown verbatim as plain text — no Markdown rendering, so nothing is hidden. Where
the tokens go comes first (system prompt, experiences, tool schemas, summary,
messages, images, adding up to the total) with what auto-compaction does next;
then the tool schemas the request carries, collapsed (they are long and the
same on every call, but they count against the window like the messages).

The messages are mounted a screenful or so at a time, more as the scroll nears
the end: a request of 2,000 messages as two widgets each took 5 s of CPU to
open (Textual styles and lays out every widget mounted), and a long body is
split into blocks of lines so a pasted megabyte is not wrapped whole to show
its first lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Collapsible, Static

from selfref_tui.safety import content, inert_line

if TYPE_CHECKING:
    from selfref_tui.context.breakdown import Breakdown

#: what the first batch mounts at most: widgets, and characters of text to wrap; each
#: later one twice the last, up to :data:`BATCH_GROWTH` times the first (scrolling on
#: through a long request, or pressing End again, reaches its end in fewer steps)
BATCH_WIDGETS = 40
BATCH_CHARS = 8_000
BATCH_GROWTH = 4
#: a body longer than this is shown as blocks of about this many characters
BLOCK_CHARS = 2_000

ROLE_STYLES = {
    "system": "$text-warning",
    "user": "$text-primary",
    "assistant": "$text-success",
    "tool": "$text-accent",
}


def message_text(message: Mapping[str, Any]) -> str:
    """The body as the model gets it: text parts joined, tool calls spelled out."""
    content = message.get("content")
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, Mapping):
                parts.append(f"[{part.get('type', 'part')}]")
            else:
                parts.append(str(part))
        text = "\n".join(parts)
    else:
        text = "" if content is None else str(content)
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        arguments = function.get("arguments", "")
        try:
            arguments = json.dumps(json.loads(arguments), ensure_ascii=False)
        except (TypeError, ValueError):
            pass
        text += ("\n" if text else "") + f"→ {function.get('name', '?')}({arguments})"
    return text


def blocks(text: str, size: int = BLOCK_CHARS) -> list[str]:
    """``text`` in blocks of whole lines of about ``size`` characters (a longer line
    alone is cut), so a long body is mounted, and wrapped, a part at a time."""
    if len(text) <= size:
        return [text]
    out: list[str] = []
    start = 0
    while len(text) - start > size:
        cut = text.rfind("\n", start + 1, start + size)
        end = cut if cut > start else start + size
        out.append(text[start:end])
        start = end + 1 if cut > start else end
    out.append(text[start:])
    return out


def tool_text(tool: Mapping[str, Any]) -> str:
    """One tool schema as the model gets it: name, description, parameters as JSON."""
    function = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
    name = str(function.get("name", "?"))
    description = str(function.get("description", ""))
    parameters = json.dumps(function.get("parameters", {}), ensure_ascii=False)
    return f"{name} — {description}\n{parameters}"


class ContextView(ModalScreen[None]):
    """Role-coloured, scrollable; Esc (or q) closes."""

    DEFAULT_CSS = """
    ContextView { align: center middle; background: $background 60%; }
    ContextView > #dialog {
        width: 90%;
        height: 90%;
        border: round $primary;
        border-title-color: $text-primary;
        border-subtitle-color: $text-muted;
        background: $surface;
    }
    ContextView #messages { padding: 0 1; scrollbar-size-vertical: 1; }
    ContextView .role { text-style: bold; margin-top: 1; }
    ContextView .body { padding-left: 2; color: $text; }
    ContextView .empty { color: $text-muted; text-style: italic; }
    ContextView #breakdown { color: $text; padding: 0 0 0 2; }
    ContextView #compaction { color: $text-muted; padding-left: 2; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="context.close"),
        Binding("q", "close", "Close", show=False, id="context.quit"),
    ]

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tokens: int,
        tools: Sequence[Mapping[str, Any]] = (),
        *,
        estimated: bool = False,
        left_out: int = 0,
        tools_total: int = 0,
        model: str = "",
        window: int = 0,
        breakdown: Breakdown | None = None,
        compaction: str = "",
    ) -> None:
        super().__init__()
        self.messages = [dict(m) for m in messages]
        self.tokens = tokens
        self.tools = [dict(t) for t in tools]
        self.estimated = estimated
        self.left_out = left_out
        #: every tool there is; more than ``len(tools)``: a small window's reduced set
        self.tools_total = tools_total
        #: who gets the call and how much fits (0: not known yet), as ``context show`` says
        self.model = model
        self.window = window
        #: the tokens by part (``context show`` prints the same lines), and what
        #: auto-compaction does next
        self.breakdown = breakdown
        self.compaction = compaction
        #: the widgets still to mount, made as they are reached
        self._pending = self._widgets()
        #: the next of them, taken to know whether any is left (None: none, or not taken)
        self._ahead: tuple[Static, int] | None = None
        #: the line under the mounted messages saying more follow (None: all mounted)
        self._more: Static | None = None
        #: how many messages' heads are mounted
        self._heads = 0
        #: the next batch's size, in first batches
        self._scale = 1
        self._mounting = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            count = len(self.messages)
            # The model's name comes from a config or a server: Content, never markup.
            dialog.border_title = content(
                f"Next call · {self.model}" if self.model else "Next call", line=True)
            about = "~" if self.estimated else ""
            window = f" of {self.window:,}" if self.window else ""
            tokens = f"{about}{self.tokens:,}{window} tokens · esc close"
            #: the subtitle, longest first: a narrow dialog shows the longest that fits
            #: (Textual cuts a long one at its end, and "esc close" went first)
            self.subtitles = (
                f"{count} message{'s' if count != 1 else ''} · {len(self.tools)} "
                f"tool{'s' if len(self.tools) != 1 else ''} · {tokens}",
                tokens,
                "esc close",
            )
            dialog.border_subtitle = self.subtitles[0]
            with VerticalScroll(id="messages"):
                if self.breakdown is not None:
                    yield Static(Content("where the tokens go"), classes="role")
                    yield Static(Content("\n".join(self.breakdown.lines())), id="breakdown")
                if self.compaction:
                    yield Static(Content(self.compaction), id="compaction")
                if self.left_out:
                    yield Static(
                        f"{self.left_out} oldest messages are left out of this request (they "
                        "stay stored): the conversation no longer fits the window.",
                        classes="empty",
                    )
                if self.tools_total > len(self.tools):
                    yield Static(
                        f"window too small for the full tool set: this request offers "
                        f"{len(self.tools)} of {self.tools_total} tools.",
                        classes="empty",
                    )
                if self.tools:
                    # A fixed title: tool names may come from other servers (untrusted).
                    with Collapsible(title=f"tools ({len(self.tools)})", collapsed=True):
                        for tool in self.tools:
                            yield Static(content(tool_text(tool)), classes="body")
                if not self.messages:
                    yield Static("Nothing yet: the next call starts empty.", classes="empty")
                yield from self._batch()
                if self._more is not None:
                    yield self._more

    def _widgets(self) -> Iterator[tuple[Static, int]]:
        """Each message's head and body blocks, with the characters each one wraps."""
        for index, message in enumerate(self.messages):
            role = inert_line(str(message.get("role", "?")), 40)
            text = message_text(message)
            head = Content.assemble(
                (role, ROLE_STYLES.get(role, "$text")),
                (f"  #{index}", "$text-muted"),
                (f" · {inert_line(message['name'])}" if message.get("name") else "",
                 "$text-muted"),
                (
                    f" · {inert_line(message['tool_call_id'])}"
                    if message.get("tool_call_id")
                    else "",
                    "$text-muted",
                ),
                (f" · {len(text):,} chars", "$text-muted"),
            )
            yield Static(head, classes=f"role role-{role}"), 0
            for block in blocks(text):
                yield Static(content(block), classes="body"), len(block)

    def _batch(self) -> list[Static]:
        """The next widgets to mount: a screenful or more, within one batch's budget."""
        out: list[Static] = []
        chars = 0
        pending = self._pending if self._ahead is None else chain([self._ahead], self._pending)
        for widget, size in pending:
            out.append(widget)
            chars += size
            if len(out) >= BATCH_WIDGETS * self._scale or chars >= BATCH_CHARS * self._scale:
                break
        self._scale = min(self._scale * 2, BATCH_GROWTH)
        # one taken ahead: a batch that ended on its budget with nothing after it left
        # "more below" under everything
        self._ahead = next(self._pending, None)
        if self._ahead is None:
            self._more = None
            return out
        self._more = self._more or Static(classes="empty more")
        self._heads += sum(1 for widget in out if widget.has_class("role"))
        left = len(self.messages) - self._heads
        self._more.update(f"{left:,} more message{'s' if left != 1 else ''} below: scroll "
                          "on to see them." if left else "more below: scroll on to see it.")
        return out

    def on_mount(self) -> None:
        scroller = self.query_one("#messages", VerticalScroll)
        scroller.focus()
        self.watch(scroller, "scroll_y", self._near_the_end, init=False)
        self.call_after_refresh(self._near_the_end)

    def _near_the_end(self, _: float | None = None) -> None:
        """Mount the next batch once the end of what is mounted is within a screen."""
        if self._more is None or self._mounting:
            return
        scroller = self.query_one("#messages", VerticalScroll)
        if scroller.max_scroll_y - scroller.scroll_y > scroller.size.height:
            return
        batch = self._batch()
        if not batch:
            return
        self._mounting = True

        async def mount() -> None:
            try:
                await scroller.mount_all(batch, before=self._more if self._more else None)
                if self._more is None:
                    await self.query(".more").remove()
            finally:
                self._mounting = False
            self.call_after_refresh(self._near_the_end)

        self.run_worker(mount(), group="more", exit_on_error=False)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_subtitle)

    def _fit_subtitle(self) -> None:
        dialog = self.query_one("#dialog")
        room = dialog.size.width - 4  # the corners and a space on each side
        dialog.border_subtitle = next(
            (text for text in self.subtitles if len(text) <= room), self.subtitles[-1])

    def action_close(self) -> None:
        self.dismiss(None)
