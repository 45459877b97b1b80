"""How full the model's context is, and how fast the current answer streams.

The bar turns amber as it nears the auto-compact threshold and red past it, so
the person can see a compaction coming. The clock is injected so tests and
snapshots render the same figures every time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget

BAR_FULL = "━"
BAR_EMPTY = "━"


def format_tokens(count: int) -> str:
    """Short human figures: 950, 12.3k, 128k, 1.2M."""
    count = max(0, int(count))
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        value = count / 1000
        return f"{value:.1f}k".replace(".0k", "k") if value < 100 else f"{round(value)}k"
    value = count / 1_000_000
    return f"{value:.1f}M".replace(".0M", "M")


def format_seconds(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m {secs:02d}s"


class ContextMeter(Widget):
    """Tokens used / window as a bar, plus live tokens/s and elapsed time."""

    DEFAULT_CSS = """
    ContextMeter {
        height: auto;
        padding: 0 1;
    }
    """

    def __init__(
        self,
        *,
        compact_ratio: float = 0.8,
        clock: Callable[[], float] = time.monotonic,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.compact_ratio = compact_ratio
        self._clock = clock
        self.tokens = 0
        self.window = 0
        #: the count is our own estimate (no server report calibrated it): shown as "~N"
        self.estimated = False
        self.streaming = False
        self.stream_tokens = 0
        self._stream_start: float | None = None
        self._stream_end: float | None = None
        self._ticker: Timer | None = None
        self.tooltip = self.legend_tooltip

    @property
    def legend_tooltip(self) -> str:
        """What the bar's tick means (the legend line says it short)."""
        return (
            f"Tokens the next request sends, out of the model's window. At the tick "
            f"({self.compact_ratio * 100:.0f}%) the agent is asked to compact the "
            "conversation into a summary; /compact asks at any time."
        )

    def on_mount(self) -> None:
        if self.streaming and self._ticker is None:
            self._ticker = self.set_interval(0.5, self.refresh)

    # -- feeding -------------------------------------------------------------------
    def set_usage(self, tokens: int, window: int, estimated: bool = False) -> None:
        self.tokens = max(0, int(tokens))
        self.window = max(0, int(window))
        self.estimated = estimated
        self.refresh(layout=True)

    def stream_started(self) -> None:
        self.streaming = True
        self.stream_tokens = 0
        self._stream_start = self._clock()
        self._stream_end = None
        if self._ticker is None and self.is_mounted:
            # Elapsed time must move even while the model is thinking silently.
            self._ticker = self.set_interval(0.5, self.refresh)
        self.refresh(layout=True)

    def stream_progress(self, tokens: int) -> None:
        """``tokens``: output tokens streamed so far in this answer (cumulative)."""
        if not self.streaming:
            self.stream_started()
        self.stream_tokens = max(0, int(tokens))
        self.refresh()

    def stream_ended(self) -> None:
        if self.streaming:
            self._stream_end = self._clock()
        self.streaming = False
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        self.refresh(layout=True)

    def forget_last_answer(self) -> None:
        """Another key is on screen: its last answer is not the one shown."""
        if not self.streaming:
            self._stream_start = self._stream_end = None
            self.stream_tokens = 0
            self.refresh(layout=True)

    # -- figures ---------------------------------------------------------------------
    @property
    def ratio(self) -> float:
        return self.tokens / self.window if self.window else 0.0

    @property
    def level(self) -> str:
        """ "ok", "near" (within 10 points of auto-compact) or "over"."""
        if self.ratio >= self.compact_ratio:
            return "over"
        if self.ratio >= self.compact_ratio - 0.1:
            return "near"
        return "ok"

    @property
    def elapsed(self) -> float:
        if self._stream_start is None:
            return 0.0
        end = self._stream_end if self._stream_end is not None else self._clock()
        return max(0.0, end - self._stream_start)

    @property
    def tokens_per_second(self) -> float:
        elapsed = self.elapsed
        return self.stream_tokens / elapsed if elapsed > 0 else 0.0

    @property
    def usage_label(self) -> str:
        if not self.window:
            return "counting…"
        about = "~" if self.estimated else ""
        return f"{about}{format_tokens(self.tokens)} / {format_tokens(self.window)}"

    @property
    def speed_label(self) -> str:
        return (
            f"{format_tokens(self.stream_tokens)} tok · {self.tokens_per_second:.0f} tok/s"
            f" · {format_seconds(self.elapsed)}"
        )

    # -- rendering ---------------------------------------------------------------------
    def render(self) -> Content:
        width = max(10, self.content_region.width or self.size.width or 30)
        colour = {"ok": "$primary", "near": "$warning", "over": "$error"}[self.level]
        percent = f"{self.ratio * 100:.0f}%" if self.window else ""
        header = Content.from_markup("[b $text-muted]CONTEXT")
        figures = Content.assemble((self.usage_label, "bold"), " ", (percent, "dim"))
        gap = max(1, width - header.cell_length - figures.cell_length)
        filled = min(width, round(self.ratio * width))
        mark = min(width - 1, round(self.compact_ratio * width))
        bar_cells = []
        for i in range(width):
            if i < filled:
                bar_cells.append(Content.styled(BAR_FULL, colour))
            elif i == mark:
                bar_cells.append(Content.styled("┃", "$text-muted"))
            else:
                bar_cells.append(Content.styled(BAR_EMPTY, "$foreground 15%"))
        lines = [
            Content.assemble(header, " " * gap, figures),
            Content("").join(bar_cells),
            # The tick explained where it is seen, not only in the tooltip.
            Content.assemble(
                ("┃", "$text-muted"),
                (f" auto-compact at {self.compact_ratio * 100:.0f}%", "dim"),
            ),
        ]
        if self.streaming:
            lines.append(Content.assemble(("● ", "$primary"), self.speed_label))
        elif self._stream_end is not None:
            # Sidebar-narrow: speed and time matter more than the count, which must not push
            # the elapsed time off the edge.
            lines.append(
                Content.styled(
                    f"last answer · {self.tokens_per_second:.0f} tok/s"
                    f" · {format_seconds(self.elapsed)}",
                    "dim",
                )
            )
        return Content("\n").join(lines)

    def get_content_height(self, container, viewport, width: int) -> int:  # type: ignore[override]
        return 4 if self._stream_start is not None else 3
