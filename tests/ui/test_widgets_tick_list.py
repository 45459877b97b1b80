"""The restore dialog's boxes say ticked or not in a character, not by colour alone."""

from __future__ import annotations

from textual.app import App

from selfref_tui.ui.screens.restore_files import RestoreFiles
from selfref_tui.ui.widgets.tick_list import TICKED, TickList

ROWS = [
    ("notes/a.txt", "restoring writes it back as it was", ""),
    ("notes/b.txt", "restoring removes it: it did not exist before", ""),
    ("notes/c.txt", "", "changed since the model wrote it: left as it is"),
]


def _boxes(tick_list: TickList) -> list[str]:
    """The character inside each row's box, as drawn (the box is the line's second cell)."""
    return [tick_list.render_line(y).text[1] for y in range(len(ROWS))]


async def test_ticked_boxes_hold_a_mark_and_unticked_ones_are_empty():
    chosen: list = []

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(RestoreFiles(ROWS), chosen.append)

    app = Host()
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        tick_list = app.screen.query_one(TickList)
        # the file changed since cannot be ticked, and its box is empty, not an "X"
        assert _boxes(tick_list) == [TICKED, TICKED, " "]
        await pilot.press("down", "space")  # untick the second file
        await pilot.pause()
        assert _boxes(tick_list) == [TICKED, " ", " "]
        await pilot.press("space")
        await pilot.pause()
        assert _boxes(tick_list) == [TICKED, TICKED, " "]
        await pilot.press("space", "enter")
        await pilot.pause()
    assert chosen == [[0]]


async def test_a_file_that_cannot_be_restored_is_shown_whole():
    """A row that cannot be ticked is never highlighted, so the line under the list that
    shows the highlighted row whole stayed empty, and the reason was only seen cut
    short. With no row to highlight, each is shown whole there."""
    from textual.widgets import Static

    path = "/tmp/" + "deep/" * 20 + "fib_iterative.py"
    why = "changed since the model wrote it: left as it is"

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(RestoreFiles([(path, "", why)]))

    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.screen.query_one(TickList).highlighted is None
        detail = app.screen.query_one("#detail", Static)
        assert str(detail.render()) == f"{path}\n{why}"
        # and seen whole: the path wraps to two lines at 80 columns, the reason a third
        assert detail.region.height == 3
