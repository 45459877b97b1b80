"""The theme's colours as Rich styles, for everything the transcript draws.

Apart from the painter because it is the one place a theme's variables become
colours (a theme change builds a new one), and because find's marks and the
painter both read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from rich.color import Color as RichColor
from rich.style import Style
from rich.theme import Theme
from textual.color import Color

from selfref_tui.ui.theme_colors import readable

#: how much of the text colour tints the background of code
CODE_TINT = 0.07


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

    @cached_property
    def find_marks(self) -> tuple[Style, Style]:
        """(every occurrence, the current one) of the find text: text readable on each mark.

        The current one is the accent colour under the background colour, which on a
        light theme is light on light orange (1.5:1 on textual-light); the others kept
        the row's colour on a warning tint (2.8:1 on solarized-light). Each text colour
        is raised to the contrast floor on its mark (ui/theme_colors.py).
        """
        if self.ansi:  # the terminal's own colours: the current one reversed
            return Style(bgcolor=self.mix(self.warning, 0.4)), Style(reverse=True, bold=True)
        tint = self.bg.blend(self.warning, 0.4)
        return (Style(bgcolor=tint.rich_color, color=readable(self.fg, [tint]).rich_color),
                Style(bgcolor=self.accent.rich_color,
                      color=readable(self.bg, [self.accent]).rich_color, bold=True))

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
