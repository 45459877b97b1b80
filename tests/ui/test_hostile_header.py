"""The header line: key, profile and model come from config and the store, shown inert."""

from __future__ import annotations

from textual.app import App, ComposeResult

from selfref_tui.ui.widgets.app_header import AppHeader
from tests.hostile import assert_inert, hostile


class HeaderApp(App):
    def compose(self) -> ComposeResult:
        yield AppHeader(key="main", provider="https://alice:hunter2pass@proxy.example/v1",
                        model=hostile("click_markup") + hostile("osc0_title"))


async def test_header_hides_userinfo_and_shows_controls():
    app = HeaderApp()
    async with app.run_test(size=(140, 5)) as pilot:
        header = app.query_one(AppHeader)
        header.status = "retry 1 in 1.0 s: " + hostile("clear_screen")
        await pilot.pause()
        shown = str(header.render())
        assert "hunter2pass" not in shown and "alice" not in shown
        assert "https://***@proxy.example/v1" in shown
        assert "[@click=app.quit]ERR[/]" in shown and "␛]0;pwned title␇" in shown
        assert_inert(app.export_screenshot())


class LongNameApp(App):
    def compose(self) -> ComposeResult:
        yield AppHeader(key="a-really-long-branch-name-" + "and-on" * 12, model="selfref-demo",
                        demo=True)


async def test_a_long_conversation_name_is_cut_so_the_model_and_status_stay_in_view():
    """The header is one line: a name longer than what is left of it wrapped to a
    second, hidden line, and took the model and what the agent is doing with it."""
    app = LongNameApp()
    async with app.run_test(size=(80, 5)) as pilot:
        header = app.query_one(AppHeader)
        header.status = "writing…"
        await pilot.pause()
        line = header.render_line(0).text
        assert "conversation a-really-long-" in line and "…" in line
        assert "selfref-demo" in line and line.rstrip().endswith("writing…")
        await pilot.resize_terminal(170, 5)
        await pilot.pause()
        line = header.render_line(0).text
        assert "a-really-long-branch-name-" + "and-on" * 12 + "  selfref-demo" in line


async def test_at_40_columns_the_status_stays_in_view():
    """The word "conversation" goes first, then the model; the name and what the agent
    is doing stay (at 40 columns the status was on the hidden second line)."""
    app = LongNameApp()
    async with app.run_test(size=(40, 5)) as pilot:
        header = app.query_one(AppHeader)
        header.status = "writing…"
        await pilot.pause()
        line = header.render_line(0).text
        assert line.rstrip() == "selfref  a-really-long-bran…  writing…"
        await pilot.resize_terminal(50, 5)
        header.key = "main"
        await pilot.pause()
        line = header.render_line(0).text  # room for the model again, not for the word
        assert line.rstrip() == "selfref  main  selfref-demo  demo   writing…"
        await pilot.resize_terminal(80, 5)
        await pilot.pause()
        assert header.render_line(0).text.startswith(
            "selfref  conversation main  selfref-demo  demo   writing…")
