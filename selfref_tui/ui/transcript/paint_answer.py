"""An answer's rows drawn as lines: Markdown blocks, code, refs' frames, reasoning.

Mixed into :class:`~selfref_tui.ui.transcript.paint.Painter`, apart from the
other items' rows because an answer is drawn block by block, inside the frames
of the refs that enclose it, and is where Markdown and code highlighting live.

Markdown and code go through :func:`selfref_tui.safety.inert` before Rich sees
them (Rich Markdown does not parse console markup, and links are shown as
text, never as terminal hyperlinks). Long code lines wrap, with ``↪`` at the
start of each continuation line; the mark is decoration (outside the
selectable text), so a copy is the code as it was written.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from rich.segment import Segment
from rich.style import Style
from textual.content import Content
from textual.strip import Strip
from textual.style import Style as VisualStyle

from selfref_tui.safety import inert, inert_line
from selfref_tui.ui.transcript.answer import AnswerItem, Block, RefInfo
from selfref_tui.ui.transcript.model import PINNED_LINE
from selfref_tui.ui.transcript.palette import CODE_TINT, Palette
from selfref_tui.ui.transcript.rows import Line, Row, pad

if TYPE_CHECKING:
    from rich.console import Console

CONTINUATION = "↪"


class AnswerPainter:
    """Draws the rows of an answer: its blocks, reasoning and the marker below it."""

    if TYPE_CHECKING:  # what the painter provides
        console: Console
        p: Palette
        width: int

        def _rich_lines(self, renderable: Any, width: int,
                        style: Style | None = None) -> list[Strip]: ...
        def _text(self, text: str, width: int, style: str = "") -> list[Strip]: ...
        def _faded(self, strip: Strip) -> Strip: ...

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
            segs = [Segment(glyph, bar), pad(2)]
            segs += [seg for seg, _ in left_frames]
            if inner_bg is not None:
                strip = strip.apply_style(inner_bg)
            if faded:
                strip = self._faded(strip)
            segs += list(strip.crop_extend(0, inner, inner_bg))
            segs += [seg for seg, _ in right_frames]
            segs.append(pad(1))
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
        if ref.quoted:  # a quotation of a ref: square, faint, never taken for one
            return p.style(p.fg, 0.3), "┌─┐│└┘"
        if ref.superseded:
            return p.style(p.fg, 0.2), "╭─╮│╰╯"
        if not ref.closed and ref.live:
            return p.style(p.warning, 0.7), "╭─╮│╰╯"
        return p.style(p.accent, 0.6), "╭─╮│╰╯"

    def _ref_bg(self, ref: RefInfo) -> Style | None:
        p = self.p
        if ref.highlighted:
            return p.tint(p.primary, 0.1)
        if ref.superseded or ref.quoted:
            return None
        return p.tint(p.accent, 0.06)

    def _draw_block(self, row: Row) -> list[Line]:
        answer = row.item
        block = row.block
        assert isinstance(answer, AnswerItem) and block is not None
        inner = self.width - 4 - 4 * len(block.frames)
        gap = [Strip([pad(inner)], inner) for _ in range(block.gap)]
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
        if not top or ref.superseded or ref.quoted:
            title_color = p.muted
        elif ref.highlighted:
            title_color = p.text_primary
        elif ref.unfinished or (not ref.closed and ref.live):
            title_color = p.text_warning
        else:
            title_color = p.text_accent
        title_style = full + Style(bold=top and not ref.quoted, italic=ref.quoted,
                                   color=p.mix(title_color, 1.0))
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
        body = [Strip([pad(inner)], inner)]
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
