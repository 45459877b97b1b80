"""Rows of the transcript drawn as lines (``Strip`` s), once per width and state.

The view cuts its items into rows (:mod:`selfref_tui.ui.transcript.rows`); this
module draws one row at a given width: here the rows of user messages, errors,
tool calls, images, compaction dividers, rewound sections, the banner and the
empty hint, with the helpers they share (bars, padding, fading). An answer's
rows are :mod:`selfref_tui.ui.transcript.paint_answer`, mixed in; colours come
from :mod:`selfref_tui.ui.transcript.palette`.

Every string drawn here comes from the model, a server or the disk: plain text
is built as ``Content`` with :func:`selfref_tui.safety.content`, never parsed
as markup.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.content import Content
from textual.strip import Strip

from selfref_tui.safety import content, inert, inert_line, redact
from selfref_tui.ui.theme_colors import fade
from selfref_tui.ui.transcript.image import ImageItem, decode_in_thread, picture
from selfref_tui.ui.transcript.model import (
    PINNED_LINE,
    DividerItem,
    ErrorItem,
    RewoundItem,
    ToolItem,
    UserItem,
    pretty_arguments,
)
from selfref_tui.ui.transcript.paint_answer import AnswerPainter
from selfref_tui.ui.transcript.palette import Palette
from selfref_tui.ui.transcript.rows import Line, Row, pad

if TYPE_CHECKING:
    from textual.widget import Widget

#: the most of a tool's arguments or result shown (the rest is counted)
MAX_SHOWN = 4_000

_ERROR_TITLES = {
    "auth": "API key rejected",
    "model": "Model not available",
    "rate_limit": "Rate limited",
    "server": "Server error",
    "connection": "Provider unreachable",
    "timeout": "Timed out",
    "protocol": "Bad response",
    "bad_request": "Request rejected",
    "context_overflow": "Too long for the model",
    "store": "Memory store",
    "internal": "Error",
}


def _color(color: RichColor | None, default: Color) -> Color:
    """A segment's colour as Textual's (``default`` where it has none of its own)."""
    if color is None or color.is_default:
        return default
    return Color.from_rich_color(color)


class Painter(AnswerPainter):
    """Draws rows for one widget at one width."""

    def __init__(self, widget: Widget, palette: Palette, width: int) -> None:
        self.widget = widget
        self.console = widget.app.console
        self.p = palette
        self.width = max(10, width)

    # --------------------------------------------------------------- helpers

    def _rich_lines(self, renderable: Any, width: int, style: Style | None = None) -> list[Strip]:
        options = self.console.options.update(width=width, height=None, highlight=False)
        lines = self.console.render_lines(renderable, options, style=style, pad=True)
        return [Strip(line, width) for line in lines]

    def _text(self, text: str, width: int, style: str = "") -> list[Strip]:
        """Plain untrusted text, wrapped; never parsed as markup."""
        if not style:
            return self._plain(inert(text), width)
        return self._content(content(text, style), width)

    def _plain(self, shown: str, width: int) -> list[Strip]:
        """Inert text in the widget's colour: a line that fits is one strip as it is.

        Wrapping with ``Content`` costs about 0.1 ms a line: a pasted log of
        3,000 lines took 0.3 s to draw, again when the scrollbar came and took a
        column. A line of printable characters no wider than ``width`` is drawn
        as ``Content`` would draw it (its text, then padding) without wrapping;
        the others, with their neighbours, go through ``Content``.
        """
        style = self._plain_style
        strips: list[Strip] = []
        for line, cells, wrapped in self._plain_runs(shown, width):
            if wrapped is not None:
                strips += wrapped
                continue
            segments = [Segment(line, style)] if line else []
            if cells < width:
                segments.append(Segment(" " * (width - cells), style))
            strips.append(Strip(segments, width))
        return strips

    def _plain_runs(self, shown: str, width: int
                    ) -> Iterator[tuple[str, int, list[Strip] | None]]:
        """``shown``'s lines in order: ``(line, cells, None)`` for a line of printable
        characters no wider than ``width`` (drawn as it is), ``("", 0, strips)`` for
        a run of the others wrapped by ``Content``."""
        wrapped: list[str] = []
        for line in shown.split("\n"):
            cells = cell_len(line) if line.isprintable() else width + 1
            if cells > width:
                wrapped.append(line)
                continue
            if wrapped:
                yield "", 0, self._content(Content("\n".join(wrapped)), width)
                wrapped = []
            yield line, cells, None
        if wrapped:
            yield "", 0, self._content(Content("\n".join(wrapped)), width)

    @cached_property
    def _plain_style(self) -> Style:
        """The rich style ``_content`` gives plain text: the widget's foreground (a painter
        lives for one theme and width)."""
        from textual.style import Style as VisualStyle

        return VisualStyle(foreground=self.widget.visual_style.foreground).rich_style

    def _indented(self, text: str, width: int) -> list[Strip]:
        """Plain untrusted text, wrapped under each line's own indentation.

        A tool's JSON arguments (and many results) are indented to show their
        structure; wrapped as one text, a long value went on at the card's left
        edge, as if it were a key of the outermost object. A line that fits, or
        has no indentation, is drawn with its neighbours in one piece.
        """
        strips: list[Strip] = []
        plain: list[str] = []
        for line in inert(text).split("\n"):
            indent = min(len(line) - len(line.lstrip(" ")), width // 2)
            if not indent or cell_len(line) <= width:
                plain.append(line)
                continue
            if plain:
                strips += self._text("\n".join(plain), width)
                plain = []
            pad = Segment(" " * indent)
            strips += [Strip([pad, *strip], width)
                       for strip in self._text(line[indent:], width - indent)]
        if plain or not strips:
            strips += self._text("\n".join(plain), width)
        return strips

    def _content(self, shown: Any, width: int) -> list[Strip]:
        from textual.style import Style as VisualStyle
        from textual.visual import Visual

        # No background of its own: the row's (or the widget's) shows through.
        base = VisualStyle(foreground=self.widget.visual_style.foreground)
        return Visual.to_strips(
            self.widget, shown, width, None, base, pad=True, apply_selection=False
        )

    def _blank(self) -> Line:
        return Line(Strip([pad(self.width)], self.width))

    def _bar_lines(
        self,
        body: list[Strip],
        bar: Style,
        bg: Style | None,
        *,
        indent: int = 0,
        pad_left: int = 1,
        pad_right: int = 1,
        glyph: str = "▌",
    ) -> list[Line]:
        """A left bar and padding around ``body`` strips (user messages, errors, tools),
        all on ``bg``: one new strip a line (a pasted message may have thousands)."""
        out = []
        inner = self.width - indent - 1 - pad_left - pad_right
        for strip in body:
            if strip.cell_length != inner:
                strip = strip.crop_extend(0, inner, bg)
            segs = [pad(indent), Segment(glyph, bar + bg if bg else bar), pad(pad_left, bg)]
            segs += Segment.apply_style(strip, bg) if bg else strip
            segs.append(pad(pad_right, bg))
            out.append(Line(Strip(segs, self.width), left=indent + 1 + pad_left, right=pad_right))
        return out

    # ------------------------------------------------------------------ rows

    def draw(self, row: Row) -> list[Line]:
        lines = [self._blank() for _ in range(row.margin)]
        lines += getattr(self, f"_draw_{row.part}")(row)
        item = row.item
        base = self.widget.rich_style
        if item is not None and item.archived:
            return [Line(self._faded(x.strip if x.styled else x.strip.apply_style(base)),
                         x.left, x.right, x.cont, x.size) for x in lines]
        return [x if x.styled else Line(x.strip.apply_style(base), x.left, x.right, x.cont,
                                        x.size)
                for x in lines]

    def _faded(self, strip: Strip) -> Strip:
        """``strip`` set back (archived, superseded) and still readable (theme_colors.fade)."""
        p = self.p
        if p.ansi:
            return strip.apply_style(Style(dim=True))  # the terminal's own colours: its dim
        segments = []
        for text, style, control in strip:
            if control or not text.strip():
                segments.append(Segment(text, style, control))
                continue
            style = style or Style()
            fg = _color(style.color, p.fg)
            bg = _color(style.bgcolor, p.bg)
            segments.append(Segment(text, style + Style(color=fade(fg, bg).rich_color)))
        return Strip(segments, strip.cell_length)

    def _draw_user(self, row: Row) -> list[Line]:
        item = row.item
        assert isinstance(item, UserItem)
        p = self.p
        if item.queued:
            bg, bar = p.tint(p.warning, 0.08), p.style(p.warning, 0.6)
        elif item.failed:
            bg, bar = p.tint(p.error, 0.08), p.style(p.error, 0.6)
        else:
            bg, bar = p.tint(p.primary, 0.12), p.style(p.primary)
        if item.highlighted:
            bg, bar = p.tint(p.primary, 0.3), p.style(p.accent, bold=True)
        inner = self.width - 3
        glyph = "┃" if item.highlighted else "▌"
        lines = self._bar_text(item.text, inner, bar, bg, glyph)
        body: list[Strip] = []
        if item.queued:
            body += self._text("queued — delivered at the next step", inner, "italic $text-warning")
        if item.failed:
            # The reason may quote a server: plain text, inert, never markup.
            why = "" if item.failed_said_below else f": {item.failed}"
            body += self._text(f"failed — not sent again; /retry (F5) sends it{why}",
                               inner, "italic $text-error")
        if item.pinned:
            body += self._text(PINNED_LINE, inner, "italic $text-accent")
        return lines + self._bar_lines(body, bar, bg, glyph=glyph)

    def _bar_text(self, text: str, inner: int, bar: Style, bg: Style | None, glyph: str
                  ) -> list[Line]:
        """``_bar_lines(self._text(text, inner), …)`` with the widget's style applied,
        a line that fits made once: a pasted message of 36,000 lines made three strips
        a line (its text, in the bar, in the widget's style), each with seven caches of
        its own, 0.5 GB and seconds for 2 MB."""
        base = self.widget.rich_style
        # (no background under ANSI colours: the terminal's own)
        glyph_segment = Segment(glyph, base + (bar + bg if bg else bar))
        left = Segment(" ", base + bg if bg else base)
        right = left
        text_style = base + (bg + self._plain_style if bg else self._plain_style)
        head = Segment("", base)
        width = self.width
        out: list[Line] = []
        for line, cells, wrapped in self._plain_runs(inert(text), inner):
            if wrapped is not None:
                out += [Line(x.strip.apply_style(base), x.left, x.right, x.cont, x.size,
                             styled=True)
                        for x in self._bar_lines(wrapped, bar, bg, glyph=glyph)]
                continue
            segments = [head, glyph_segment, left]
            if line:
                segments.append(Segment(line, text_style))
            if cells < inner:
                segments.append(Segment(" " * (inner - cells), text_style))
            segments.append(right)
            out.append(Line(Strip(segments, width), left=2, right=1, styled=True))
        return out

    def _draw_error(self, row: Row) -> list[Line]:
        item = row.item
        assert isinstance(item, ErrorItem)
        p = self.p
        bg = p.tint(p.error, 0.1 if not item.highlighted else 0.3)
        title = _ERROR_TITLES.get(item.error_kind, "Error")
        # Server and store text: inert, never markup, no bearer token or URL userinfo.
        shown = Content.assemble((f"✖ {title}", "bold $text-error"), "  ",
                                 content(redact(item.message)))
        body = self._content(shown, self.width - 3)
        if item.has_detail:
            # The server's own words in full (a click toggles them): the one-line
            # message may have shortened the very part that says what is wrong.
            arrow = "▼ " if item.expanded else "▶ "
            body += self._text(arrow + "the server's full text", self.width - 3, "italic")
            if item.expanded:
                body += self._text(_clip(redact(item.detail)), self.width - 3)
        bar = p.style(p.accent, bold=True) if item.highlighted else p.style(p.error)
        return self._bar_lines(body, bar, bg,
                               glyph="┃" if item.highlighted else "▌")

    def _draw_tool(self, row: Row) -> list[Line]:
        item = row.item
        assert isinstance(item, ToolItem)
        p = self.p
        # Highlighted: the bar every highlighted item has (ctrl+up stops here too).
        bg, bar = p.card(item.highlighted, {"error": (p.error, 1.0),
                                            "cancelled": (p.warning, 1.0)}.get(item.status))
        inner = self.width - 2 - 3
        arrow = "▼ " if item.expanded else "▶ "
        body = self._text(arrow + inert_line(item.title), inner, "bold" if item.highlighted else "")
        if item.expanded:
            body += self._text("arguments", inner, f"bold {self.p.muted_text}")
            arguments = item.arguments
            if item.status == "running" and len(arguments) > MAX_SHOWN:
                body += self._text(_tail(arguments), inner)  # the newest part as it streams
            else:
                body += self._indented(_clip(pretty_arguments(arguments)), inner)
            body += self._text("result", inner, f"bold {self.p.muted_text}")
            body += self._indented(_clip(item.result or ""), inner)
        return self._bar_lines(body, bar, bg, indent=2,
                               glyph="┃" if item.highlighted else "▌")

    def _draw_image(self, row: Row) -> list[Line]:
        """The block: a title line, then the picture or why it cannot be shown."""
        item = row.item
        assert isinstance(item, ImageItem)
        waiting = item.decode_waits
        if waiting:
            decode_in_thread(item, self.widget)
        else:
            item.decode()  # the title names the pixel size
        p = self.p
        bg, bar = p.card(item.highlighted)
        inner = self.width - 2 - 3
        body = self._content(content(item.title, "bold" if item.highlighted else ""), inner)
        if waiting:
            body += self._text("decoding…", inner, "italic")
        elif item.error:
            body += self._text(f"image could not be shown ({item.error})", inner,
                               "italic $text-warning")
        else:
            body += picture(item, inner, p.bg.rgb)
        return self._bar_lines(body, bar, bg, indent=2)

    def _draw_divider(self, row: Row) -> list[Line]:
        item = row.item
        assert isinstance(item, DividerItem)
        p = self.p
        rule = Line(Strip([Segment("┄" * self.width, p.style(p.accent, 0.5))], self.width))
        arrow = "▼ " if item.expanded else "▶ "
        body = self._text(arrow + item.title, self.width - 2, "$text-accent")
        if item.expanded:
            body += self._text(item.copy_text, self.width - 4)
        lines = [
            Line(
                Strip([pad(1), *s.crop_extend(0, self.width - 2, None), pad(1)], self.width),
                left=1,
                right=1,
            )
            for s in body
        ]
        return [rule, *lines, rule]

    def _draw_rewound(self, row: Row) -> list[Line]:
        """A rewound section's line: marked, plain; a click (or the actions) opens it."""
        item = row.item
        assert isinstance(item, RewoundItem)
        p = self.p
        arrow = "▼ " if item.expanded else "▶ "
        bg = Style(bgcolor=p.mix(p.warning, 0.3 if item.highlighted else 0.08))
        title = item.title_within(self.width - 3 - len(arrow))
        body = self._text(arrow + title, self.width - 3, "italic $text-warning")
        bar = p.style(p.accent, bold=True) if item.highlighted else p.style(p.warning, 0.7)
        return self._bar_lines(body, bar, bg,
                               glyph="┃" if item.highlighted else "▌")

    def _draw_rewound_end(self, row: Row) -> list[Line]:
        item = row.item
        assert isinstance(item, RewoundItem)
        p = self.p
        bg = Style(bgcolor=p.mix(p.warning, 0.08))
        body = self._text(item.end_title, self.width - 3, "italic $text-warning")
        return self._bar_lines(body, p.style(p.warning, 0.7), bg)

    def _draw_banner(self, row: Row) -> list[Line]:
        count = getattr(self.widget, "older_count", 0)
        text = f"↑ {count} earlier messages — click or press Enter to show more"
        style = self.p.style(self.p.muted, italic=True)
        strip = Strip([Segment(text, style)]).text_align(self.width, "center")
        return [Line(strip)]

    def _hint_body(self, inner: int) -> list[Strip]:
        hint = getattr(self.widget, "_hint", "")
        if isinstance(hint, str):
            return self._text(hint, inner, self.p.muted_text)
        return self._content(hint, inner)

    def _draw_hint(self, row: Row) -> list[Line]:
        p = self.p
        border = p.style(p.fg, 0.15)
        inner = self.width - 4 - 2 - 4
        body = self._hint_body(inner) if inner >= HINT_BOX_INNER else []
        view = self.widget.scrollable_content_region.height
        if not body or len(body) + 5 > view:
            # A narrow or short screen: the box's ten columns and four rows go before
            # any word does (at 40x12 the boxed hint was three screens tall).
            inner = self.width - 2
            lines = [Line(Strip([pad(1), *strip.crop_extend(0, inner, None), pad(1)],
                                self.width), left=1, right=1)
                     for strip in self._hint_body(inner)]
            return [self._blank(), *lines]
        blank = Strip([pad(inner)], inner)
        body = [blank, *body, blank]
        top = Strip([pad(2), Segment("╭" + "─" * (inner + 4) + "╮", border), pad(2)], self.width)
        bottom = Strip(
            [pad(2), Segment("╰" + "─" * (inner + 4) + "╯", border), pad(2)], self.width
        )
        lines = [Line(top)]
        for strip in body:
            segs = [pad(2), Segment("│", border), pad(2), *strip.crop_extend(0, inner, None)]
            segs += [pad(2), Segment("│", border), pad(2)]
            lines.append(Line(Strip(segs, self.width), left=5, right=5))
        lines.append(Line(bottom))
        return [self._blank(), *lines]


#: the narrowest text the hint is boxed around (the box takes ten more columns)
HINT_BOX_INNER = 40


def _tail(text: str) -> str:
    """The last ``MAX_SHOWN`` characters of a long text still streaming (the rest counted)."""
    return f"… {len(text) - MAX_SHOWN} characters before\n" + text[-MAX_SHOWN:]


def _clip(text: str) -> str:
    if len(text) <= MAX_SHOWN:
        return text
    return text[:MAX_SHOWN] + f"\n… {len(text) - MAX_SHOWN} more characters"
