"""The lazy option list draws what Textual's own draws, wrapping only the rows it shows."""

from __future__ import annotations

from textual import on
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.geometry import Region
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from selfref_tui.ui.widgets.lazy_option_list import EAGER, LazyOptionList

ROWS = 3_000
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "and",
         "naïve", "café", "東京"]


def _options() -> list[Option]:
    """Rows of one to five lines at 30 columns: words wrap, wide characters count twice."""
    return [Option(Content.assemble((f"row {i}", "bold"), "  ",
                                    " ".join(WORDS[: 1 + (i * 7) % len(WORDS)] * (1 + i % 3)),
                                    "\n" if i % 5 == 0 else "", "from somewhere" if i % 5 == 0
                                    else ""))
            for i in range(ROWS)]


class TwoLists(App):
    """Textual's list and the lazy one, side by side, the same rows in each."""

    CSS = """
    OptionList { width: 32; height: 1fr; border: none; padding: 0; }
    OptionList > .option-list--option { padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.selected: list[int] = []

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield OptionList(*_options(), id="plain")
            yield LazyOptionList(*_options(), id="lazy")

    @on(OptionList.OptionSelected, "#lazy")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.selected.append(event.option_index)


def drawn(option_list: OptionList) -> list[str]:
    size = option_list.scrollable_content_region.size
    return [strip.text for strip in option_list.render_lines(Region(0, 0, *size))]


def highlighted_lines(option_list: OptionList) -> list[str]:
    """The lines of the highlighted row that are on screen."""
    top = int(option_list.scroll_y)
    lines = option_list._lines
    return [text for y, text in enumerate(drawn(option_list), top)
            if y < len(lines) and lines[y][0] == option_list.highlighted]


async def test_a_long_list_shows_scrolls_and_chooses_like_textuals_wrapping_only_what_it_shows():
    app = TwoLists()
    async with app.run_test(size=(70, 20)) as pilot:
        plain, lazy = app.query_one("#plain", OptionList), app.query_one("#lazy", LazyOptionList)
        await pilot.pause()
        assert drawn(lazy) == drawn(plain)  # the top of the list, as Textual draws it
        assert "row 0" in drawn(lazy)[0]
        # only the rows seen (and around the highlight) were wrapped, not 3,000
        assert 0 < lazy.measured_rows < 60
        # its length is estimated: within a line a row of the real one
        assert abs(lazy.virtual_size.height - plain.virtual_size.height) < ROWS // 10
        for option_list in (plain, lazy):
            option_list.focus()
            await pilot.press("end")
        await pilot.pause()
        assert lazy.highlighted == plain.highlighted == ROWS - 1
        assert drawn(lazy) == drawn(plain)  # the end, drawn the same
        assert lazy.scroll_y == lazy.max_scroll_y > 0
        for keys in (("pageup", "pageup", "up"), ("home",), ("pagedown", "down", "down")):
            for option_list in (plain, lazy):
                option_list.focus()
                await pilot.press(*keys)
            await pilot.pause()
            assert lazy.highlighted == plain.highlighted, keys
            shown = highlighted_lines(lazy)
            assert shown and shown == highlighted_lines(plain), keys
        # far into the list in one step (as the sidebar follows the transcript)
        for option_list in (plain, lazy):
            option_list.highlighted = 1_777
        await pilot.pause()
        assert highlighted_lines(lazy) == highlighted_lines(plain)
        assert highlighted_lines(lazy)[0].strip().startswith("row 1777")
        assert lazy.measured_rows < 200
        # a click chooses the row under the mouse
        lazy.focus()
        lines = lazy._lines
        y = next(y for y in range(3, 10) if lines[int(lazy.scroll_y) + y][1] == 0)
        row = lines[int(lazy.scroll_y) + y][0]
        await pilot.click(lazy, offset=(2, y))
        await pilot.pause()
        assert lazy.highlighted == row and app.selected == [row]
        # a new width wraps the rows again: what is drawn is still Textual's
        await pilot.resize_terminal(50, 16)
        await pilot.pause()
        for option_list in (plain, lazy):
            option_list.highlighted = 2_500
        await pilot.pause()
        assert highlighted_lines(lazy) == highlighted_lines(plain)


async def test_a_short_list_is_measured_whole_as_textuals_is():
    class Short(App):
        CSS = "OptionList { height: auto; border: none; }"

        def compose(self) -> ComposeResult:
            yield LazyOptionList(*_options()[:EAGER])

    app = Short()
    async with app.run_test(size=(40, 100)) as pilot:
        option_list = app.query_one(LazyOptionList)
        await pilot.pause()
        assert option_list.measured_rows == EAGER
        option_list.add_options(_options()[:50])  # past EAGER: the new rows are estimated
        await pilot.pause()
        assert EAGER <= option_list.measured_rows < EAGER + 50
        option_list.clear_options()
        await pilot.pause()
        assert option_list.measured_rows == 0 and option_list.virtual_size.height == 0
        assert drawn(option_list) == [""] * option_list.scrollable_content_region.height
