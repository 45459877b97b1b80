"""Pilot tests for the sidebar parts: experiences, refs and the context meter."""

from __future__ import annotations

from textual import on
from textual.app import App, ComposeResult

from selfref_tui.ui.widgets.context_meter import ContextMeter, format_seconds, format_tokens
from selfref_tui.ui.widgets.experience_list import ExperienceList
from selfref_tui.ui.widgets.option_rows import LONG
from selfref_tui.ui.widgets.ref_list import RefList, RefRow
from selfref_tui.ui.widgets.sidebar import Sidebar
from tests.ui.helpers import FakeClock

EXPERIENCES = [
    {"id": "exp_001", "text": "Prefers iterative solutions."},
    {"id": "exp_002", "text": "Uses Python 3.11 and ruff."},
    {"id": "exp_004", "text": "Deploys to a Raspberry Pi."},
]


class SidebarApp(App):
    def __init__(self, clock: FakeClock | None = None) -> None:
        super().__init__()
        self.clock = clock or FakeClock()
        self.forgets: list[str] = []
        self.chosen: list[tuple[str, RefRow]] = []

    def compose(self) -> ComposeResult:
        yield Sidebar(clock=self.clock)

    @on(ExperienceList.ForgetRequested)
    def _forget(self, event: ExperienceList.ForgetRequested) -> None:
        self.forgets.append(event.experience_id)

    @on(RefList.RefChosen)
    def _chosen(self, event: RefList.RefChosen) -> None:
        self.chosen.append((event.ref_id, event.ref))


async def _ready(pilot) -> Sidebar:
    sidebar = pilot.app.query_one(Sidebar)
    sidebar.experiences = EXPERIENCES
    sidebar.experience_list.option_list.focus()
    await pilot.pause()
    return sidebar


async def test_browse_and_forget_with_confirmation():
    app = SidebarApp()
    async with app.run_test(size=(80, 30)) as pilot:
        sidebar = await _ready(pilot)
        exp_list = sidebar.experience_list
        assert exp_list.highlighted_id == "exp_001"
        await pilot.press("down")
        assert exp_list.highlighted_id == "exp_002"
        await pilot.press("delete")
        assert exp_list.confirming == "exp_002"
        assert app.forgets == []
        await pilot.press("y")
        await pilot.pause()
        assert app.forgets == ["exp_002"]
        assert exp_list.confirming is None
        # Focus returns to the list so browsing continues.
        assert app.focused is exp_list.option_list


async def test_forget_cancelled_by_any_other_key():
    app = SidebarApp()
    async with app.run_test(size=(80, 30)) as pilot:
        sidebar = await _ready(pilot)
        await pilot.press("delete")
        assert sidebar.experience_list.confirming == "exp_001"
        await pilot.press("n")
        await pilot.pause()
        assert app.forgets == []
        await pilot.press("delete", "escape")
        await pilot.pause()
        assert app.forgets == []
        # The cancelling key does not leak into the list (down would move the highlight).
        await pilot.press("delete", "down")
        await pilot.pause()
        assert app.forgets == []
        assert sidebar.experience_list.highlighted_id == "exp_001"


async def test_refresh_keeps_highlight_and_moves_on_after_forget():
    app = SidebarApp()
    async with app.run_test(size=(80, 30)) as pilot:
        sidebar = await _ready(pilot)
        exp_list = sidebar.experience_list
        await pilot.press("down", "down")
        assert exp_list.highlighted_id == "exp_004"
        # A new experience arrives at the top: the highlight stays on exp_004.
        sidebar.experiences = [{"id": "exp_005", "text": "New."}, *EXPERIENCES]
        assert exp_list.highlighted_id == "exp_004"
        # exp_004 is forgotten: the highlight stays at the same place, clamped.
        sidebar.experiences = [{"id": "exp_005", "text": "New."}, *EXPERIENCES[:2]]
        assert exp_list.highlighted_id == "exp_002"
        sidebar.experiences = []
        assert exp_list.highlighted_id is None
        await pilot.press("delete")
        assert exp_list.confirming is None


async def test_ref_chosen_posts_the_row():
    app = SidebarApp()
    refs = [
        {"id": "fib", "content": "old", "superseded": True},
        {"id": "fib", "content": "def fib(n):\n    return n\n", "message_index": 7},
        {"id": "readme", "chars": 1500, "lines": 30},
    ]
    async with app.run_test(size=(80, 30)) as pilot:
        sidebar = pilot.app.query_one(Sidebar)
        sidebar.refs = refs
        sidebar.ref_list.option_list.focus()
        await pilot.pause()
        # The current definitions first, the superseded one below them all.
        assert [(r.id, r.superseded) for r in sidebar.ref_list.refs] == [
            ("fib", False), ("readme", False), ("fib", True)]
        await pilot.press("enter")
        await pilot.pause()
        assert app.chosen == [("fib", RefRow("fib", chars=25, lines=3))]
        sidebar.ref_list.highlight_ref("readme")
        await pilot.press("enter")
        await pilot.pause()
        assert app.chosen[-1][0] == "readme"
        # highlight_ref prefers the current definition over a superseded one.
        sidebar.ref_list.highlight_ref("fib")
        assert sidebar.ref_list.highlighted_ref == RefRow("fib", chars=25, lines=3)


async def test_meter_numbers_and_levels():
    clock = FakeClock()
    app = SidebarApp(clock)
    async with app.run_test(size=(80, 30)) as pilot:
        meter = pilot.app.query_one(ContextMeter)
        assert meter.usage_label == "counting…"  # no window known yet: no fake "0 / 0"
        meter.tokens, meter.window = 12_300, 128_000
        await pilot.pause()
        assert meter.usage_label == "12.3k / 128k"
        assert meter.level == "ok"
        assert "12.3k / 128k" in str(meter.render())
        meter.tokens, meter.window = 96_000, 128_000  # 75 %: within 10 points of 80 %
        assert meter.level == "near"
        meter.tokens, meter.window = 110_000, 128_000
        assert meter.level == "over"
        meter.tokens, meter.window = 2_048, 4_096
        meter.estimated = True  # our own count: shown as one
        assert meter.usage_label == "~2k / 4.1k"
        meter.tokens, meter.window = 110_000, 128_000
        meter.estimated = False

        meter.streaming = True
        clock.now += 4.0
        meter.stream_tokens = 200
        await pilot.pause()
        assert meter.tokens_per_second == 50.0
        assert "50 tok/s" in str(meter.render())
        assert "4.0s" in str(meter.render())
        clock.now += 6.0
        meter.streaming = False
        clock.now += 100.0  # time after the end no longer counts
        assert meter.elapsed == 10.0
        assert "last answer" in str(meter.render())


async def test_a_call_that_streamed_nothing_is_not_reported_at_0_tok_s():
    """A server that was down: "last answer · 0 tok/s · 3.9s" read as a very slow model."""
    clock = FakeClock()
    app = SidebarApp(clock)
    async with app.run_test(size=(80, 30)) as pilot:
        meter = pilot.app.query_one(ContextMeter)
        meter.tokens, meter.window = 500, 32_000
        meter.streaming = True
        clock.now += 3.9
        meter.streaming = False
        await pilot.pause()
        shown = str(meter.render())
        assert "tok/s" not in shown and "no answer · 3.9s" in shown


def test_number_formats():
    assert format_tokens(950) == "950"
    assert format_tokens(12_300) == "12.3k"
    assert format_tokens(128_000) == "128k"
    assert format_tokens(1_000) == "1k"
    assert format_tokens(1_260_000) == "1.3M"
    assert format_tokens(-5) == "0"
    assert format_seconds(4.0) == "4.0s"
    assert format_seconds(65) == "1m 05s"


async def test_the_meter_explains_its_auto_compact_tick():
    app = SidebarApp()
    async with app.run_test(size=(80, 30)) as pilot:
        meter = pilot.app.query_one(ContextMeter)
        meter.tokens, meter.window = 500, 32_000
        await pilot.pause()
        lines = str(meter.render()).splitlines()
        assert "┃" in lines[1] and lines[2].startswith("┃ auto-compact at 80%")
        assert meter.size.height == 3  # the legend has a line of its own
        assert "80%" in str(meter.tooltip) and "compact" in str(meter.tooltip)


def _ref_rows(count: int, superseded: frozenset[int] = frozenset()) -> list[dict]:
    """Fresh dicts every call, as the app builds them from the store after each event
    (oldest first: a superseded ref's new definition comes last)."""
    return [
        {"id": f"r{i}", "content": f"line {i}\n" * 3, "superseded": i in superseded}
        for i in range(count)
    ] + [{"id": f"r{i}", "content": f"new line {i}\n" * 3} for i in sorted(superseded)]


async def test_a_refresh_touches_only_the_rows_that_changed():
    app = SidebarApp()
    async with app.run_test(size=(80, 30)) as pilot:
        sidebar = pilot.app.query_one(Sidebar)
        option_list = sidebar.ref_list.option_list
        sidebar.refs = _ref_rows(100)
        await pilot.pause()
        before = list(option_list.options)
        prompts = [option.prompt for option in before]
        # One more ref, and r5 defined again: its row shows the new definition in the
        # same place, the old one goes below the rest; every other row stays.
        sidebar.refs = _ref_rows(101, frozenset({5}))
        after = list(option_list.options)
        assert len(after) == 102
        assert all(after[i] is before[i] for i in range(100))  # the options are kept...
        kept = [i for i in range(100) if after[i].prompt is prompts[i]]
        assert kept == [i for i in range(100) if i != 5]  # ...and all but one prompt
        assert "33 ch" in str(after[5].prompt) and "old" in str(after[-1].prompt)
        # The same rows again: nothing at all is replaced.
        sidebar.refs = _ref_rows(101, frozenset({5}))
        assert all(a is b for a, b in zip(option_list.options, after, strict=True))
        # Loading (a key being opened), then a shorter list: shown as such.
        sidebar.refs = None
        assert sidebar.ref_list.refs == () and option_list.option_count == 0
        sidebar.refs = _ref_rows(3)
        assert [row.id for row in sidebar.ref_list.refs] == ["r0", "r1", "r2"]
        assert option_list.option_count == 3


async def test_the_meter_level_is_a_class_as_well():
    app = SidebarApp()
    async with app.run_test(size=(80, 30)) as pilot:
        meter = pilot.app.query_one(ContextMeter)
        meter.tokens, meter.window = 1_000, 10_000
        await pilot.pause()
        assert meter.has_class("-ok")
        meter.tokens = 9_000
        assert meter.level == "over" and meter.has_class("-over") and not meter.has_class("-ok")


async def test_on_a_small_window_the_tick_is_where_the_runtime_asks():
    """At 80 % of 8,192 tokens only 1,638 would be left for the compaction call itself: the
    runtime asks at 8,192 - 2,048 (a quarter of the window), and the tick says so."""
    app = SidebarApp()
    async with app.run_test(size=(80, 30)) as pilot:
        meter = pilot.app.query_one(ContextMeter)
        meter.tokens, meter.window = 6_200, 8_192
        await pilot.pause()
        assert str(meter.render()).splitlines()[2].startswith("┃ auto-compact at 75%")
        assert meter.level == "over"
        meter.tokens = 5_500  # 67 %: within 10 points of 75 %
        assert meter.level == "near"


async def test_a_long_list_of_experiences_takes_its_half_and_scrolls_to_its_last():
    """Past ``LONG`` rows the list is not measured row by row: it looks the same."""
    app = SidebarApp()
    async with app.run_test(size=(80, 30)) as pilot:
        sidebar = pilot.app.query_one(Sidebar)
        section = sidebar.experience_list
        heights = []
        for count in (3, LONG - 1, LONG + 50):
            sidebar.experiences = [{"id": f"exp_{k:04d}", "text": f"fact {k}"}
                                   for k in range(count)]
            await pilot.pause()
            heights.append(section.region.height)
            # every line of the list is in the section: the title above it took the
            # list's last line out of sight (the provenance of the last experience)
            list_region = section.option_list.region
            assert section.region.y < list_region.y
            assert list_region.bottom <= section.region.bottom
        assert heights[0] < heights[1] == heights[2]
        assert heights[2] >= sidebar.region.height // 2 - 1
        option_list = section.option_list
        option_list.focus()
        await pilot.press("end")
        await pilot.pause()
        assert section.highlighted_id == f"exp_{LONG + 49:04d}"
        assert 0 < option_list.scroll_y == option_list.max_scroll_y
        assert option_list.max_scroll_y == LONG + 50 - option_list.scrollable_content_region.height
        # the forget question and the editor show in the section, under the list (below a
        # list that fills the section they were out of sight: Delete seemed to do nothing)
        for keys, part in ((("delete",), "#forget-confirm"), (("n", "e"), "#experience-editor")):
            await pilot.press(*keys)
            await pilot.pause()
            shown = section.query_one(part).region
            assert shown.height and option_list.region.bottom <= shown.y
            assert shown.bottom <= section.region.bottom
            # and the row it is about is still in sight above it
            row = option_list.highlighted
            end = option_list._index_to_line[row] + option_list._heights[row]
            assert end <= option_list.scroll_y + option_list.scrollable_content_region.height
        await pilot.press("escape")
