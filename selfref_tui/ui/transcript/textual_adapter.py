"""The one place the transcript leans on Textual internals (pinned by a test).

A ``ScrollView``'s ``virtual_size`` is a reactive declared with
``layout=True``: setting it lays out the whole screen. Textual's own ``Log``
does that on every write, which is fine for a log and not for a transcript
that grows 30 times a second next to a sidebar, a header and a fork panel
(a layout pass cost 50–160 ms per frame on the benchmark machine). The
transcript's size on screen never depends on its content (it is ``1fr``), so
only its scrollbar needs to hear about the new size; a layout is asked for
only when the scrollbar appears or goes.

``Widget._scroll_update`` is private: ``tests/ui/test_transcript_adapter.py``
fails loudly if a Textual release renames it or stops updating the scrollbar.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.widget import Widget


def set_virtual_size(widget: Widget, size: Size) -> None:
    """Give ``widget`` a new scrollable size without laying out the screen."""
    if widget.virtual_size == size:
        return
    shown = (widget.show_vertical_scrollbar, widget.show_horizontal_scrollbar)
    widget.set_reactive(Widget.virtual_size, size)
    widget._scroll_update(size)
    if (widget.show_vertical_scrollbar, widget.show_horizontal_scrollbar) != shown:
        widget.refresh(layout=True)  # a scrollbar came or went: the region changed
