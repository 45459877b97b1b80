"""Pins the Textual internals behind selfref_tui/ui/transcript/textual_adapter.py."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget

from selfref_tui.ui.transcript.textual_adapter import set_virtual_size


class Lines(ScrollView):
    DEFAULT_CSS = "Lines { height: 1fr; }"


class AdapterApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Lines()


def test_textual_still_has_the_private_scroll_update_the_adapter_calls():
    assert callable(getattr(Widget, "_scroll_update", None)), (
        "Textual no longer has Widget._scroll_update: update textual_adapter.set_virtual_size"
    )


async def test_a_new_virtual_size_reaches_the_scrollbar_without_a_layout():
    app = AdapterApp()
    async with app.run_test(size=(40, 10)) as pilot:
        lines = app.query_one(Lines)
        set_virtual_size(lines, Size(38, 100))
        await pilot.pause()
        assert lines.virtual_size == Size(38, 100)
        assert lines.show_vertical_scrollbar
        assert lines.vertical_scrollbar.window_virtual_size == 100
        assert lines.max_scroll_y == 100 - lines.container_size.height
        layouts = []
        original = app.screen._refresh_layout

        def counting(*args, **kwargs):
            layouts.append(1)
            return original(*args, **kwargs)

        app.screen._refresh_layout = counting  # type: ignore[method-assign]
        for height in range(101, 131):
            set_virtual_size(lines, Size(38, height))
        await pilot.pause()
        assert lines.vertical_scrollbar.window_virtual_size == 130
        assert not layouts  # the screen was not laid out again for a taller content
