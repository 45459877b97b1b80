"""Rows of the transcript drawn as lines (``Strip`` s), once per width and state.

The view cuts its items into :class:`Row` s (a user message, one block of an
answer, a tool card's title…); this module draws one row at a given width. A
row's lines are cached by the view under :func:`row_key`, so a finished block
is drawn once per width, highlight or dimming change.

Every string drawn here comes from the model, a server or the disk: Markdown
and code go through :func:`selfref_tui.safety.inert` before Rich sees them
(Rich Markdown does not parse console markup, and links are shown as text,
never as terminal hyperlinks), and plain text is built as ``Content`` with
:func:`selfref_tui.safety.content`, never parsed as markup.

Long code lines wrap, with ``↪`` at the start of each continuation line; the
mark is decoration (outside the selectable text), so a copy is the code as it
was written.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style
from rich.theme import Theme
from textual.color import Color
from textual.content import Content
from textual.strip import Strip
from textual.style import Style as VisualStyle

from selfref_tui.safety import content, inert, inert_line, redact
from selfref_tui.ui.theme_colors import fade
from selfref_tui.ui.transcript.image import ImageItem, decode_in_thread, picture
from selfref_tui.ui.transcript.image import estimate as estimate_image
from selfref_tui.ui.transcript.model import (
    PINNED_LINE,
    AnswerItem,
    Block,
    DividerItem,
    ErrorItem,
    Item,
    RefInfo,
    RewoundItem,
    ToolItem,
    UserItem,
    pretty_arguments,
    summary_text,
)

if TYPE_CHECKING:
    from textual.widget import Widget

#: the most of a tool's arguments or result shown (the rest is counted)
MAX_SHOWN = 4_000
CONTINUATION = "↪"
#: how much of the text colour tints the background of code
CODE_TINT = 0.07

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


@dataclass(eq=False)
class Row:
    """A piece of the transcript drawn and cached on its own."""

    #: "user" | "error" | "block" | "reasoning" | "marker" | "tool" | "divider"
    #: | "image" | "banner" | "hint"
    part: str
    item: Item | None = None
    block: Block | None = None
    #: fully blank lines above (the item's margin)
    margin: int = 0
    height: int = 1
    exact: bool = False
    #: (width, text version) the estimated height was made for
    guess: Any = None
    key: Any = None
    #: drawn lines (none until drawn: a shared empty tuple, not one list per row, since
    #: an answer with 10,000 refs has 40,000 rows and the collector walks every list)
    lines: Sequence[Line] = ()


@dataclass(frozen=True, slots=True)
class Line:
    """One drawn line: the strip, and the columns of decoration around its text."""

    strip: Strip
    left: int = 0
    right: int = 0
    #: continues the line above (a wrapped code line): joined without a newline on copy
    cont: bool = False
    #: characters of text after ``left`` when known exactly (code); -1: up to the padding
    size: int = -1

    @property
    def text(self) -> str:
        """The selectable text of the line (no decoration, no trailing padding)."""
        plain = self.strip.text
        if self.size >= 0:
            return plain[self.left : self.left + self.size]
        return plain[self.left : len(plain) - self.right if self.right else None].rstrip()


def row_key(row: Row, width: int) -> tuple:
    """What a row's lines depend on: its lines are drawn again when this changes."""
    item = row.item
    state: tuple = ()
    block = row.block
    if item is not None and block is None:
        state = (item.version, item.archived, item.highlighted)
    elif isinstance(item, AnswerItem) and block is not None:
        # Not the answer's version: a finished block is not redrawn while the answer streams.
        frames = tuple(
            (r.version, r.highlighted, r.superseded, r.unfinished, r.closed) for r in block.frames
        )
        ref = block.ref
        own = (ref.version, ref.highlighted, ref.superseded, ref.unfinished) if ref else ()
        fence = block.fence.highlighted if block.fence is not None else None
        bar = (item.archived, item.highlighted, item.interrupted or bool(item.marker))
        state = (block.version, frames, own, fence, bar)
    return (width, row.margin, state)


def estimate(row: Row, width: int) -> int:
    """A row's height before it is drawn (close enough to scroll by; corrected when drawn)."""
    inner = max(8, width - 6)
    block = row.block
    if block is not None:
        if block.kind in ("ref_top", "ref_bottom"):
            return row.margin + block.gap + 1
        inner -= 4 * len(block.frames)
        lines = block.text.removesuffix("\n").split("\n")
        count = sum(1 + len(line) // max(1, inner - 2) for line in lines)
        return row.margin + block.gap + max(1, count)
    item = row.item
    if isinstance(item, ImageItem):
        return row.margin + estimate_image(item, width)
    if isinstance(item, UserItem):
        lines = sum(1 + len(x) // inner for x in item.text.split("\n"))
        return row.margin + lines + item.queued + item.pinned + (
            1 + len(item.failed) // inner if item.failed else 0)
    return row.margin + 1


class Palette:
    """The theme's colours as Rich styles: every colour the transcript draws comes from here.

    Built from the app's theme variables, so a theme change (and a light theme)
    is followed everywhere: bars, tints, frames, muted text, Markdown's own
    elements (inline code, links, headings, quotes) and code blocks. A theme of
    ANSI colours (``ansi-dark``, ``ansi-light``) leaves the terminal its own
    colours: its tints are no background at all, its colours the ANSI names.
    """

    def __init__(self, variables: Mapping[str, str], dark: bool) -> None:
        def color(name: str, default: str) -> Color:
            try:
                return Color.parse(variables.get(name, default))
            except Exception:
                return Color.parse(default)

        self.dark = dark
        self.bg = color("background", "#1e1e1e")
        self.fg = color("foreground", "#e0e0e0")
        #: the terminal's own colours: no blending, no tinted backgrounds
        self.ansi = self.bg.ansi is not None or self.fg.ansi is not None
        self.primary = color("primary", "#0178d4")
        self.secondary = color("secondary", "#004578")
        self.accent = color("accent", "#ffa62b")
        self.warning = color("warning", "#ffa62b")
        self.error = color("error", "#ba3c5b")
        self.success = color("success", "#4ebf71")
        #: what Textual's ``$text-muted`` is: the text colour for this background, at 60 %
        self.muted = self.fg if self.ansi else self.bg + self.bg.get_contrast_text(0.6)
        #: the muted colour in a Content style: ``$text-muted`` itself is "auto 60%", which
        #: needs the background under the text, and rows lay their tint only after
        self.muted_text = self.muted.hex
        #: text in each colour, readable on this background (``$text-primary``…, which
        #: the app raises to a contrast floor: ui/theme_colors.py)
        self.text_primary = color("text-primary", "#57a5e2")
        self.text_accent = color("text-accent", "#ffc473")
        self.text_warning = color("text-warning", "#ffc473")
        #: code blocks and inline code sit on a tint of the text colour
        self.code_bg = self.tint(self.fg, CODE_TINT)

    def mix(self, color: Color, alpha: float) -> RichColor:
        """``color`` over the background at ``alpha`` (an ANSI colour as it is)."""
        if self.ansi:
            return color.rich_color
        return self.bg.blend(color, alpha).rich_color

    def style(self, color: Color | None = None, alpha: float = 1.0, **kw: Any) -> Style:
        """Text (or a bar) in ``color`` at ``alpha``."""
        if self.ansi and color is not None and alpha < 0.5:
            return Style(dim=True, **kw)  # a faint mark: the terminal dims its own colour
        return Style(color=self.mix(color, alpha) if color is not None else None, **kw)

    def tint(self, color: Color, alpha: float) -> Style | None:
        """A background of ``color`` at ``alpha`` (none under ANSI colours)."""
        if self.ansi:
            return None
        return Style(bgcolor=self.bg.blend(color, alpha).rich_color)

    def card(self, highlighted: bool, bar: tuple[Color, float] | None = None
             ) -> tuple[Style | None, Style]:
        """The background and bar of a tool call or image card."""
        if highlighted:
            return self.tint(self.primary, 0.12), self.style(self.accent, bold=True)
        return self.tint(self.fg, 0.04), self.style(*(bar or (self.fg, 0.2)))

    @cached_property
    def markdown_theme(self) -> Theme:
        """Rich Markdown's own styles in this theme's colours (its defaults are fixed ANSI:
        inline code was cyan on black on every theme, light ones too)."""
        bg = self.code_bg.bgcolor if self.code_bg is not None else None
        primary, accent = self.text_primary.rich_color, self.text_accent.rich_color
        muted = self.muted.rich_color
        return Theme({
            "markdown.code": Style(color=accent, bgcolor=bg, bold=True),
            "markdown.code_block": Style(bgcolor=bg),
            "markdown.block_quote": Style(color=muted, italic=True),
            "markdown.list": Style(color=primary),
            "markdown.item.bullet": Style(color=accent, bold=True),
            "markdown.item.number": Style(color=accent),
            "markdown.hr": Style(color=muted),
            "markdown.h1": Style(color=primary, bold=True, underline=True),
            "markdown.h1.border": Style(color=primary),
            "markdown.h2": Style(color=primary, bold=True, underline=True),
            "markdown.h3": Style(color=primary, bold=True),
            "markdown.h4": Style(color=primary, italic=True),
            "markdown.h5": Style(italic=True),
            "markdown.h6": Style(color=muted, italic=True),
            "markdown.h7": Style(color=muted, italic=True),
            "markdown.link": Style(color=primary, underline=True),
            "markdown.link_url": Style(color=primary, underline=True),
            "markdown.table.border": Style(color=muted),
            "markdown.table.header": Style(color=primary, bold=True),
            "markdown.kbd": Style(color=accent, bold=True),
        }, inherit=True)


def _color(color: RichColor | None, default: Color) -> Color:
    """A segment's colour as Textual's (``default`` where it has none of its own)."""
    if color is None or color.is_default:
        return default
    return Color.from_rich_color(color)


def _pad(width: int, style: Style | None = None) -> Segment:
    return Segment(" " * max(0, width), style)


class Painter:
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

        return self._content(content(text, style), width)

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
        return Line(Strip([_pad(self.width)], self.width))

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
        """A left bar and padding around ``body`` strips (user messages, errors, tools)."""
        out = []
        inner = self.width - indent - 1 - pad_left - pad_right
        for strip in body:
            segs = [_pad(indent), Segment(glyph, bar + bg if bg else bar), _pad(pad_left, bg)]
            segs += list(strip.crop_extend(0, inner, bg))
            segs.append(_pad(pad_right, bg))
            out.append(Line(Strip(segs, self.width), left=indent + 1 + pad_left, right=pad_right))
        return out

    def _with_bg(self, strips: list[Strip], bg: Style | None) -> list[Strip]:
        if bg is None:
            return strips
        return [strip.apply_style(bg) for strip in strips]

    # ------------------------------------------------------------------ rows

    def draw(self, row: Row) -> list[Line]:
        lines = [self._blank() for _ in range(row.margin)]
        lines += getattr(self, f"_draw_{row.part}")(row)
        item = row.item
        base = self.widget.rich_style
        archived = item is not None and item.archived
        return [Line(self._faded(x.strip.apply_style(base)) if archived
                     else x.strip.apply_style(base), x.left, x.right, x.cont, x.size)
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
        body = self._text(item.text, inner)
        if item.queued:
            body += self._text("queued — delivered at the next step", inner, "italic $text-warning")
        if item.failed:
            # The reason may quote a server: plain text, inert, never markup.
            why = "" if item.failed_said_below else f": {item.failed}"
            body += self._text(f"failed — not sent again; /retry (F5) sends it{why}",
                               inner, "italic $text-error")
        if item.pinned:
            body += self._text(PINNED_LINE, inner, "italic $text-accent")
        return self._bar_lines(
            self._with_bg(body, bg), bar, bg, glyph="┃" if item.highlighted else "▌"
        )

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
        return self._bar_lines(self._with_bg(body, bg), bar, bg,
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
        return self._bar_lines(self._with_bg(body, bg), bar, bg, indent=2,
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
        return self._bar_lines(self._with_bg(body, bg), bar, bg, indent=2)

    def _draw_divider(self, row: Row) -> list[Line]:
        item = row.item
        assert isinstance(item, DividerItem)
        p = self.p
        rule = Line(Strip([Segment("┄" * self.width, p.style(p.accent, 0.5))], self.width))
        arrow = "▼ " if item.expanded else "▶ "
        body = self._text(arrow + item.title, self.width - 2, "$text-accent")
        if item.expanded:
            body += self._text(summary_text(item.summary), self.width - 4)
        lines = [
            Line(
                Strip([_pad(1), *s.crop_extend(0, self.width - 2, None), _pad(1)], self.width),
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
        body = self._text(arrow + item.title, self.width - 3, "italic $text-warning")
        bar = p.style(p.accent, bold=True) if item.highlighted else p.style(p.warning, 0.7)
        return self._bar_lines(self._with_bg(body, bg), bar, bg,
                               glyph="┃" if item.highlighted else "▌")

    def _draw_rewound_end(self, row: Row) -> list[Line]:
        item = row.item
        assert isinstance(item, RewoundItem)
        p = self.p
        bg = Style(bgcolor=p.mix(p.warning, 0.08))
        body = self._text(item.end_title, self.width - 3, "italic $text-warning")
        return self._bar_lines(self._with_bg(body, bg), p.style(p.warning, 0.7), bg)

    def _draw_banner(self, row: Row) -> list[Line]:
        count = getattr(self.widget, "older_count", 0)
        text = f"↑ {count} earlier messages — click or press Enter to show more"
        style = self.p.style(self.p.muted, italic=True)
        strip = Strip([Segment(text, style)]).text_align(self.width, "center")
        return [Line(strip)]

    def _draw_hint(self, row: Row) -> list[Line]:
        hint = getattr(self.widget, "_hint", "")
        p = self.p
        border = p.style(p.fg, 0.15)
        inner = self.width - 4 - 2 - 4
        if isinstance(hint, str):
            body = self._text(hint, inner, self.p.muted_text)
        else:
            body = self._content(hint, inner)
        blank = Strip([_pad(inner)], inner)
        body = [blank, *body, blank]
        top = Strip([_pad(2), Segment("╭" + "─" * (inner + 4) + "╮", border), _pad(2)], self.width)
        bottom = Strip(
            [_pad(2), Segment("╰" + "─" * (inner + 4) + "╯", border), _pad(2)], self.width
        )
        lines = [Line(top)]
        for strip in body:
            segs = [_pad(2), Segment("│", border), _pad(2), *strip.crop_extend(0, inner, None)]
            segs += [_pad(2), Segment("│", border), _pad(2)]
            lines.append(Line(Strip(segs, self.width), left=5, right=5))
        lines.append(Line(bottom))
        return [self._blank(), *lines]

    # ---------------------------------------------------------------- answers

    def _answer_bar(self, answer: AnswerItem) -> tuple[Style, str]:
        p = self.p
        if answer.highlighted:
            return p.style(p.accent, bold=True), "┃"
        if answer.interrupted or answer.marker:
            return p.style(p.warning, 0.6), "▌"
        return p.style(p.secondary, 0.4 if p.dark else 0.6), "▌"

    def _answer_lines(
        self,
        answer: AnswerItem,
        body: list[Strip],
        frames: tuple[RefInfo, ...],
        *,
        cont: list[bool] | None = None,
        sizes: list[int] | None = None,
    ) -> list[Line]:
        """The answer's bar and padding, and the frames of enclosing refs, around ``body``."""
        bar, glyph = self._answer_bar(answer)
        inner = self.width - 4 - 4 * len(frames)
        out = []
        left_frames = []
        right_frames = []
        for ref in frames:
            style, box = self._frame(ref)
            bg = self._ref_bg(ref)
            left_frames.append((Segment(box[3] + " ", style + bg if bg else style), bg))
            right_frames.insert(0, (Segment(" " + box[3], style + bg if bg else style), bg))
        inner_bg = self._ref_bg(frames[-1]) if frames else None
        faded = any(ref.superseded for ref in frames)
        for index, strip in enumerate(body):
            segs = [Segment(glyph, bar), _pad(2)]
            segs += [seg for seg, _ in left_frames]
            if inner_bg is not None:
                strip = strip.apply_style(inner_bg)
            if faded:
                strip = self._faded(strip)
            segs += list(strip.crop_extend(0, inner, inner_bg))
            segs += [seg for seg, _ in right_frames]
            segs.append(_pad(1))
            is_cont = bool(cont and cont[index])
            size = sizes[index] if sizes else -1
            out.append(
                Line(
                    Strip(segs, self.width),
                    # a code line's first cell is its edge (or its continuation mark)
                    left=3 + 2 * len(frames) + (1 if size >= 0 else 0),
                    right=1 + 2 * len(frames),
                    cont=is_cont,
                    size=size,
                )
            )
        return out

    def _frame(self, ref: RefInfo) -> tuple[Style, str]:
        """The frame's style and box characters (tl, h, tr, v, bl, br)."""
        p = self.p
        if ref.highlighted:
            return p.style(p.primary, bold=True), "┏━┓┃┗┛"
        if ref.unfinished:
            return p.style(p.warning, 0.7), "╭┄╮┆╰╯"
        if ref.superseded:
            return p.style(p.fg, 0.2), "╭─╮│╰╯"
        if not ref.closed and ref.live:
            return p.style(p.warning, 0.7), "╭─╮│╰╯"
        return p.style(p.accent, 0.6), "╭─╮│╰╯"

    def _ref_bg(self, ref: RefInfo) -> Style | None:
        p = self.p
        if ref.highlighted:
            return p.tint(p.primary, 0.1)
        if ref.superseded:
            return None
        return p.tint(p.accent, 0.06)

    def _draw_block(self, row: Row) -> list[Line]:
        answer = row.item
        block = row.block
        assert isinstance(answer, AnswerItem) and block is not None
        inner = self.width - 4 - 4 * len(block.frames)
        gap = [Strip([_pad(inner)], inner) for _ in range(block.gap)]
        cont: list[bool] = [False] * len(gap)
        sizes: list[int] | None = None
        if block.kind in ("ref_top", "ref_bottom"):
            assert block.ref is not None
            body = [*gap, self._ref_edge(block.ref, inner, top=block.kind == "ref_top")]
            cont.append(False)
        elif block.kind == "code":
            code, marks, lengths = self._code(block, inner)
            body = gap + code
            cont += marks
            sizes = [-1] * len(gap) + lengths
        else:
            body = gap + _trim(self._markdown(block.text, inner))
            cont += [False] * (len(body) - len(cont))
        return self._answer_lines(answer, body, block.frames, cont=cont, sizes=sizes)

    def _ref_edge(self, ref: RefInfo, width: int, *, top: bool) -> Strip:
        style, box = self._frame(ref)
        bg = self._ref_bg(ref)
        full = style + bg if bg else style
        label = ref.title if top else ref.subtitle
        p = self.p
        # The frame may be faint (a superseded ref's); its title and size are text.
        if not top or ref.superseded:
            title_color = p.muted
        elif ref.highlighted:
            title_color = p.text_primary
        elif ref.unfinished or (not ref.closed and ref.live):
            title_color = p.text_warning
        else:
            title_color = p.text_accent
        title_style = full + Style(bold=top, color=p.mix(title_color, 1.0))
        left, right = (box[0], box[2]) if top else (box[4], box[5])
        label = inert_line(label, max(0, width - 6))
        fill = max(0, width - 5 - len(label))
        if label:
            if top:
                segs = [
                    Segment(left + box[1] + " ", full),
                    Segment(label, title_style),
                    Segment(" " + box[1] * fill + right, full),
                ]
            else:
                segs = [
                    Segment(left + box[1] * fill + " ", full),
                    Segment(label, title_style),
                    Segment(" " + box[1] + right, full),
                ]
        else:
            segs = [Segment(left + box[1] * (width - 2) + right, full)]
        return Strip(segs).crop_extend(0, width, bg)

    def _markdown(self, text: str, width: int) -> list[Strip]:
        with self.console.use_theme(self.p.markdown_theme):
            return self._rich_lines(markdown(inert(text)), width)

    def _code(self, block: Block, width: int) -> tuple[list[Strip], list[bool], list[int]]:
        """Highlighted code, wrapped with a continuation mark; copy text stays the code.

        The token colours are Textual's highlight theme, which names the theme's
        variables (``$text-accent``…), on a tint of the text colour: readable on
        every theme, light or dark, and following a change of theme.
        """
        p = self.p
        fence = block.fence
        lang = fence.lang if fence is not None else ""
        code = inert(block.text).expandtabs(4)
        bg = p.code_bg
        base = VisualStyle(foreground=p.fg,
                           background=None if bg is None else p.bg.blend(p.fg, CODE_TINT))
        highlighted = _highlight(code, lang, p) if code else Content("")
        mark = p.style(p.primary if fence and fence.highlighted else p.muted)
        mark_bg = mark + bg if bg else mark
        edge = Segment("▌" if fence and fence.highlighted else " ", mark_bg)
        text_width = max(4, width - 2)
        strips: list[Strip] = []
        marks: list[bool] = []
        lengths: list[int] = []
        lines = highlighted.split("\n", allow_blank=True)
        while len(lines) > 1 and not lines[-1].plain:
            lines.pop()
        for line in lines or [Content("")]:
            size = len(line.plain)
            pieces = (line.divide(range(text_width, size, text_width))
                      if size > text_width else [line])
            for index, piece in enumerate(pieces):
                segs = [Segment(text, style.rich_style) for text, style in
                        piece.render(base, end="", parse_style=VisualStyle.parse)]
                first = Segment(CONTINUATION, mark_bg) if index else edge
                strip = Strip([first, *segs]).crop_extend(0, width - 1, bg)
                strips.append(Strip([*strip, Segment(" ", bg)], width))
                marks.append(bool(index))
                lengths.append(len(piece.plain))
        return strips, marks, lengths

    def _draw_reasoning(self, row: Row) -> list[Line]:
        answer = row.item
        assert isinstance(answer, AnswerItem)
        inner = self.width - 4
        arrow = "▼ " if answer.reasoning_expanded else "▶ "
        body = self._text(arrow + answer.reasoning_title, inner, self.p.muted_text)
        if answer.reasoning_expanded:
            body += self._text(answer.reasoning, inner - 2, f"italic {self.p.muted_text}")
        return self._answer_lines(answer, body, ())

    def _draw_marker(self, row: Row) -> list[Line]:
        """Under an answer: how it ended (interrupted, cut off) and whether it is pinned."""
        answer = row.item
        assert isinstance(answer, AnswerItem)
        inner = self.width - 4
        body = [Strip([_pad(inner)], inner)]
        if answer.marker:
            body += self._text(answer.marker, inner, "italic $text-warning")
        if answer.pinned:
            body += self._text(PINNED_LINE, inner, "italic $text-accent")
        return self._answer_lines(answer, body, ())


def markdown(text: str) -> Any:
    """Rich ``Markdown`` of ``text`` (links as text), parsed by one shared parser.

    ``Markdown(text)`` builds a new ``MarkdownIt`` parser every time: two
    thirds of drawing a short block (1.9 of 2.9 ms), paid for every block of
    a streaming answer and again for its open block every frame. The parser
    is stateless between parses, so one serves every block; the rest of the
    object is a copy of one made the ordinary way.
    ``tests/ui/test_transcript_paint_markdown.py`` checks that the lines are
    the ones ``Markdown(text, hyperlinks=False)`` draws.
    """
    template, parser = _markdown_parts()
    shown = copy.copy(template)
    shown.markup = text
    shown.parsed = parser.parse(text)
    return shown


@lru_cache(maxsize=1)
def _markdown_parts() -> tuple[Any, Any]:
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown

    # the parser Markdown.__init__ makes (rich 13–15)
    return Markdown("", hyperlinks=False), MarkdownIt().enable("strikethrough").enable("table")


def _trim(strips: list[Strip]) -> list[Strip]:
    """Rich puts blank lines around some elements (lists); the row's gap spaces blocks."""
    start, end = 0, len(strips)
    while start < end and not strips[start].text.strip():
        start += 1
    while end > start and not strips[end - 1].text.strip():
        end -= 1
    return strips[start:end] or strips[:1]


def _highlight(code: str, lang: str, palette: Palette) -> Content:
    """``code`` as Content whose token styles name the theme's variables.

    Textual's own highlighting (what its Markdown widget uses), less the
    ``$text`` it lays under everything: plain code takes the row's text colour.
    """
    from textual.highlight import ANSIDarkHighlightTheme, ANSILightHighlightTheme, HighlightTheme
    from textual.highlight import highlight as textual_highlight

    theme: type[HighlightTheme] = HighlightTheme
    if palette.ansi:
        theme = ANSIDarkHighlightTheme if palette.dark else ANSILightHighlightTheme
    shown = textual_highlight(code, language=lang or "text", theme=theme, tab_size=4)
    return Content(shown.plain, [span for span in shown.spans if span.style != "$text"])


def _tail(text: str) -> str:
    """The last ``MAX_SHOWN`` characters of a long text still streaming (the rest counted)."""
    return f"… {len(text) - MAX_SHOWN} characters before\n" + text[-MAX_SHOWN:]


def _clip(text: str) -> str:
    if len(text) <= MAX_SHOWN:
        return text
    return text[:MAX_SHOWN] + f"\n… {len(text) - MAX_SHOWN} more characters"
