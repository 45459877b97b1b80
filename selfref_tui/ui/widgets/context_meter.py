"""How full the model's context is, and how fast the current answer streams.

The bar turns amber as it nears the auto-compact threshold and red past it, so
the person can see a compaction coming. The clock is injected so tests and
snapshots render the same figures every time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.content import Content
from textual.reactive import reactive, var
from textual.timer import Timer
from textual.widget import Widget

BAR_FULL = "━"
BAR_EMPTY = "━"

#: how often the speed line is redrawn while an answer streams: a fast answer changes the
#: count on every batch of text (~20 a second), and each redraw cost the event loop a few ms
#: that a key typed meanwhile waited for; four a second still reads as live
TICK_S = 0.25


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
    """Tokens used / window as a bar, plus live tokens/s and elapsed time.

    The app assigns the figures (``meter.tokens``, ``meter.window``,
    ``meter.estimated``, ``meter.streaming``, ``meter.stream_tokens``); the level
    (ok / near / over) is computed from them and shown as a class, so a theme can
    style it too.
    """

    DEFAULT_CSS = """
    ContextMeter {
        height: auto;
        padding: 0 1;
    }
    """

    #: tokens the next request sends
    tokens: reactive[int] = reactive(0)
    #: the model's context window; 0 while unknown ("counting…")
    window: reactive[int] = reactive(0)
    #: why nothing can be counted (the conversation did not open, the count failed): the
    #: meter says "unavailable" and its tooltip says why, instead of "counting…" for good.
    #: A figure shown again (:meth:`show_usage`) clears it.
    unavailable: reactive[str] = reactive("")
    #: the count is our own estimate (no server report calibrated it): shown as "~N"
    estimated: reactive[bool] = reactive(False)
    #: an answer is streaming: the speed line shows and the clock ticks (set True at each
    #: turn's start, even one whose end this meter missed: the clock starts again)
    streaming: reactive[bool] = reactive(False, layout=True, always_update=True)
    #: output tokens streamed so far in this answer (cumulative); not redrawn on each change
    #: during a stream: the clock's tick (every :data:`TICK_S`) shows it, and the stream's end
    #: redraws the final figure
    stream_tokens: reactive[int] = reactive(0, repaint=False)
    #: tokens / window
    ratio: var[float] = var(0.0)
    #: "ok", "near" (within 10 points of auto-compact) or "over"
    level: var[str] = var("ok")

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
        self._stream_start: float | None = None
        self._stream_end: float | None = None
        #: dialogs open that wait for the person (:meth:`hold`), since when, and the
        #: seconds the answer already waited for them: not the model's time
        self._holds = 0
        self._held_since: float | None = None
        self._waited = 0.0
        self._ticker: Timer | None = None
        #: seconds between redraws while streaming (tests slow it down to count redraws)
        self.tick_s = TICK_S
        #: the line under the bar while :attr:`unavailable`
        self._unavailable_short = ""
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
            self._ticker = self.set_interval(self.tick_s, self.refresh)

    # -- states ----------------------------------------------------------------------
    def show_usage(self, tokens: int, window: int, estimated: bool) -> None:
        """The figures of a count that finished: the meter's only way out of "counting…"
        or "unavailable" back to a figure."""
        self.tokens, self.window, self.estimated = tokens, window, estimated
        self.unavailable = ""

    def show_counting(self) -> None:
        """Another conversation opens: the last one's figures are not its figures."""
        self.tokens, self.window, self.estimated = 0, 0, False
        self.unavailable = ""

    def show_unavailable(self, reason: str, short: str = "conversation not open") -> None:
        """Nothing will be counted: ``short`` says so under the bar, ``reason`` (in the
        tooltip) says why in full."""
        self.tokens, self.window, self.estimated = 0, 0, False
        self._unavailable_short = short
        self.unavailable = reason or short

    def watch_unavailable(self, reason: str) -> None:
        from selfref_tui.safety import content

        # the reason quotes the store (a conversation's name, a path): plain text, not markup
        self.tooltip = content(reason) if reason else self.legend_tooltip

    # -- reactives -------------------------------------------------------------------
    def validate_tokens(self, tokens: int) -> int:
        return max(0, int(tokens))

    def validate_window(self, window: int) -> int:
        return max(0, int(window))

    def validate_stream_tokens(self, tokens: int) -> int:
        return max(0, int(tokens))

    def compute_ratio(self) -> float:
        return self.tokens / self.window if self.window else 0.0

    @property
    def compact_at(self) -> float:
        """Where the reminder really comes, as a share of the window: the ratio, or earlier
        on a small window, so the compaction call itself fits (context.compaction_point)."""
        from selfref_tui.context.compaction_point import threshold

        if not self.window:
            return self.compact_ratio
        return threshold(self.compact_ratio, self.window) / self.window

    def compute_level(self) -> str:
        ratio, at = self.ratio, self.compact_at
        if ratio >= at:
            return "over"
        if ratio >= at - 0.1:
            return "near"
        return "ok"

    def watch_level(self, old: str, new: str) -> None:
        # Textual calls a computed reactive's watcher on every read (``render`` reads it),
        # with old == new: removing and adding the same class restyled the widget each time.
        if old != new:
            self.remove_class(f"-{old}")
        self.add_class(f"-{new}")  # costs nothing when the class is there

    def hold(self) -> None:
        """A dialog of this turn waits for the person: the clock stops until :meth:`release`.

        The speed line says how fast the model answered; the seconds a question
        (an overwrite, a memory write, a summary to review) stood open are the
        person's, and made a reviewed compaction read "4 tok/s".
        """
        self._holds += 1
        if self._holds == 1:
            self._held_since = self._clock()

    def release(self) -> None:
        """The dialog :meth:`hold` stopped the clock for was answered (or closed)."""
        if not self._holds:
            return
        self._holds -= 1
        if not self._holds and self._held_since is not None:
            end = self._stream_end if self._stream_end is not None else self._clock()
            self._waited += max(0.0, end - self._held_since)
            self._held_since = None

    def watch_streaming(self, streaming: bool) -> None:
        if streaming:
            self._stream_start = self._clock()
            self._stream_end = None
            self._waited = 0.0
            self._held_since = self._stream_start if self._holds else None
            self.stream_tokens = 0
            if self._ticker is None and self.is_mounted:
                # Elapsed time must move even while the model is thinking silently.
                self._ticker = self.set_interval(self.tick_s, self.refresh)
        else:
            if self._stream_start is not None and self._stream_end is None:
                self._stream_end = self._clock()
                if self._held_since is not None:  # the turn ended with a dialog open
                    self._waited += max(0.0, self._stream_end - self._held_since)
                    self._held_since = None
            if self._ticker is not None:
                self._ticker.stop()
                self._ticker = None

    def watch_stream_tokens(self, tokens: int) -> None:
        if tokens and not self.streaming:
            # Text of a turn whose start this meter did not see (its key was shown
            # mid-turn): the stream is timed from here.
            self.streaming = True  # resets the count
            self.stream_tokens = tokens

    def forget_last_answer(self) -> None:
        """Another key is on screen: its last answer is not the one shown."""
        if not self.streaming:
            self._stream_start = self._stream_end = None
            self.stream_tokens = 0
            self.refresh(layout=True)

    # -- figures ---------------------------------------------------------------------
    @property
    def elapsed(self) -> float:
        """Seconds of the answer, less those a dialog waited for the person (:meth:`hold`)."""
        if self._stream_start is None:
            return 0.0
        end = self._stream_end if self._stream_end is not None else self._clock()
        waited = self._waited
        if self._held_since is not None:
            waited += max(0.0, end - self._held_since)
        return max(0.0, end - self._stream_start - waited)

    @property
    def tokens_per_second(self) -> float:
        elapsed = self.elapsed
        return self.stream_tokens / elapsed if elapsed > 0 else 0.0

    @property
    def usage_label(self) -> str:
        if self.unavailable:
            return "unavailable"
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
        colour = {"ok": "$text-primary", "near": "$text-warning", "over": "$text-error"}[self.level]
        percent = f"{self.ratio * 100:.0f}%" if self.window else ""
        header = Content.from_markup("[b $text-muted]CONTEXT")
        figures = Content.assemble((self.usage_label, "bold"), " ", (percent, "$text-muted"))
        gap = max(1, width - header.cell_length - figures.cell_length)
        filled = min(width, round(self.ratio * width))
        mark = min(width - 1, round(self.compact_at * width))
        bar_cells = []
        for i in range(width):
            if i < filled:
                bar_cells.append(Content.styled(BAR_FULL, colour))
            elif i == mark and not self.unavailable:
                bar_cells.append(Content.styled("┃", "$text-muted"))
            else:
                bar_cells.append(Content.styled(BAR_EMPTY, "$foreground 15%"))
        # The tick explained where it is seen, not only in the tooltip; with nothing to
        # count, where to read why instead (the whole reason is long: the tooltip has it).
        legend = (Content.styled(f"not counted: {self._unavailable_short}", "$text-muted")
                  if self.unavailable else Content.assemble(
                      ("┃", "$text-muted"),
                      (f" auto-compact at {self.compact_at * 100:.0f}%", "$text-muted")))
        lines = [
            Content.assemble(header, " " * gap, figures),
            Content("").join(bar_cells),
            legend,
        ]
        if self.streaming:
            lines.append(Content.assemble(("● ", "$text-primary"), self.speed_label))
        elif self._stream_end is not None:
            # Sidebar-narrow: speed and time matter more than the count, which must not push
            # the elapsed time off the edge.
            # A call that streamed nothing (a server down) has no speed to show.
            speed = (f"last answer · {self.tokens_per_second:.0f} tok/s"
                     if self.stream_tokens else "no answer")
            lines.append(Content.styled(f"{speed} · {format_seconds(self.elapsed)}", "$text-muted"))
        return Content("\n").join(lines)

    def get_content_height(self, container, viewport, width: int) -> int:  # type: ignore[override]
        return 4 if self._stream_start is not None else 3
