"""A finished piece of an answer, kept as the lines it rendered to.

Every layout pass of a Textual screen walks every displayed widget, whether it
is on screen or not, and a Markdown piece is a widget per block (a 20,000-token
answer ends as ~5,000 of them; each pass then took most of a second). Once a
piece can no longer change and has scrolled out of view, the transcript swaps
it for this single leaf holding the lines it rendered to, so the tree the
layout walks stays small however long the conversation grows.

The lines are exact for the width and the styles they were captured under. A
width change, or a style change of an enclosing block (a ref highlighted,
superseded or archived), puts the live Markdown back (:meth:`thaw`); the
transcript settles it again once it is out of view.

Capturing uses Textual's compositor (``textual._compositor``, not public API):
if that import or the capture fails, pieces simply stay live.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

if TYPE_CHECKING:
    from selfref_tui.ui.widgets.ref_block import StreamingMarkdown

try:
    from textual._compositor import Compositor
except ImportError:  # a Textual without it: pieces stay live
    Compositor = None  # type: ignore[assignment,misc]


def capture(widget: Widget) -> list[Strip] | None:
    """The lines ``widget`` and its children render to at their current size."""
    if Compositor is None:
        return None
    width, height = widget.outer_size
    if width <= 0 or height <= 0:
        return None
    try:
        compositor = Compositor()
        compositor.reflow(widget, Size(width, height))
        strips = compositor.render_strips(Size(width, height))
    except Exception:
        return None
    return strips if len(strips) == height else None


class SettledMarkdown(Widget):
    DEFAULT_CSS = """
    SettledMarkdown { width: 1fr; background: transparent; }
    """

    def __init__(self, text: str, strips: list[Strip], width: int, *, live: bool) -> None:
        super().__init__()
        self.text = text
        self.live = live
        self._strips = strips
        self._width = width
        self.styles.height = len(strips)

    @property
    def streaming(self) -> bool:
        return False

    @property
    def opacity(self) -> float:
        # The captured lines already carry their ancestors' opacity; a change thaws.
        return 1.0

    def render_line(self, y: int) -> Strip:
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width:
            self.thaw()

    def thaw(self) -> StreamingMarkdown | None:
        """Put a live Markdown with the same text back in this place."""
        from selfref_tui.ui.widgets.ref_block import StreamingMarkdown

        parent = self.parent
        if not isinstance(parent, Widget) or not self.is_attached:
            return None
        piece = StreamingMarkdown(self.text, live=self.live, finished=True)
        parent.mount(piece, after=self)
        self.remove()
        return piece
