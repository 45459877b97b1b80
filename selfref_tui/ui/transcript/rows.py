"""What the transcript view caches: rows, their drawn lines, and when they are stale.

The view cuts its items into :class:`Row` s (a user message, one block of an
answer, a tool card's title…) and keeps each row's drawn :class:`Line` s under
:func:`row_key`, so a finished block is drawn once per width, highlight or
dimming change. Before a row is drawn, :func:`estimate` guesses its height,
close enough to scroll by. These sit apart from the painter so the view's
layout, selection and find read rows without the drawing code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from selfref_tui.ui.transcript.answer import AnswerItem, Block
from selfref_tui.ui.transcript.image import ImageItem
from selfref_tui.ui.transcript.image import estimate as estimate_image
from selfref_tui.ui.transcript.model import Item, UserItem


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
    #: the strip has the widget's own style already (drawn as it is: see Painter.draw)
    styled: bool = False

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


def pad(width: int, style: Style | None = None) -> Segment:
    """``width`` blank cells (none below zero): the padding drawn lines are made of."""
    return Segment(" " * max(0, width), style)
