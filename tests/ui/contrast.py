"""What a person could not read on screen: letters and digits whose colour is too close
to the colour behind them.

The screen is read as the terminal gets it: the current screen's composed lines
(dialogs over what they cover), with the app's own line filters applied, so
Textual's ``dim`` is measured as the blended colour it becomes. Contrast is
WCAG's ratio (:mod:`selfref_tui.ui.theme_colors`). Box drawing, bars and other
decoration are not text and are not measured.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass

from rich.color import Color as RichColor
from textual.app import App
from textual.color import Color
from textual.geometry import Region

from selfref_tui.ui.theme_colors import contrast

#: the floor a test asks for: every letter and digit on screen at least this far from its ground
READABLE = 3.0


@dataclass(frozen=True)
class Cell:
    """One character a person could not read."""

    y: int
    x: int
    char: str
    ratio: float
    fg: str
    bg: str


def _color(color: RichColor | None, default: Color) -> Color:
    if color is None or color.is_default:
        return default
    triplet = color.get_truecolor()
    return Color(triplet.red, triplet.green, triplet.blue)


def screen_cells(app: App) -> list[list[tuple[str, Color, Color]]]:
    """Each row of the screen as (character, foreground, background), filters applied."""
    theme = app.current_theme
    background = Color.parse(theme.background or "#000000")
    foreground = Color.parse(theme.foreground or "#ffffff")
    rows = []
    for strip in app.screen._compositor.render_strips():
        segments = list(strip)
        for line_filter in app.get_line_filters():
            segments = line_filter.apply(segments, background)
        row = []
        for segment in segments:
            style = segment.style
            fg = _color(style.color if style else None, foreground)
            bg = _color(style.bgcolor if style else None, background)
            if style is not None and style.reverse:
                fg, bg = bg, fg
            row += [(char, fg, bg) for char in segment.text]
        rows.append(row)
    return rows


def unreadable(app: App, minimum: float = READABLE, region: Region | None = None) -> list[Cell]:
    """Every letter or digit on screen (or in ``region`` of it: a dialog, not the screen it
    shades) whose contrast with its background is under ``minimum``."""
    out = []
    for y, row in enumerate(screen_cells(app)):
        for x, (char, fg, bg) in enumerate(row):
            if region is not None and not region.contains(x, y):
                continue
            if unicodedata.category(char)[0] in "LN":
                ratio = contrast(fg, bg)
                if ratio < minimum:
                    out.append(Cell(y, x, char, round(ratio, 2), fg.hex, bg.hex))
    return out


def describe(cells: list[Cell], app: App) -> str:
    """The unreadable cells as runs of text, with their colours (for a failure message)."""
    rows = screen_cells(app)
    runs: dict[tuple[int, str, str], list[Cell]] = {}
    for cell in cells:
        runs.setdefault((cell.y, cell.fg, cell.bg), []).append(cell)
    lines = []
    for (y, fg, bg), run in list(runs.items())[:12]:
        text = "".join(char for char, _, _ in rows[y]).rstrip()
        shown = "".join(cell.char for cell in run)
        lines.append(f"row {y} {shown!r} {fg} on {bg} ({run[0].ratio}:1) in {text!r}")
    return "\n".join(lines)


def main_background(app: App, region) -> Color:
    """The most common background colour in ``region`` (x, y, width, height) of the screen."""
    rows = screen_cells(app)
    x, y, width, height = region
    counts = Counter(
        bg.hex for row in rows[y : y + height] for _, _, bg in row[x : x + width]
    )
    return Color.parse(counts.most_common(1)[0][0])
