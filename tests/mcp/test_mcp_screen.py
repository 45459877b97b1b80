"""The /mcp screen: servers, states and tools from plain rows, shown inert."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Static

from selfref_tui.ui.screens.mcp_servers import McpServersScreen
from tests.hostile import assert_inert

ROWS: list[dict[str, Any]] = [
    {"name": "time", "transport": "stdio", "state": "ready", "start_s": 1.2, "error": "",
     "target": "mcp-server-time --local-timezone UTC", "tools": [
         {"name": "mcp__time__get_current_time", "server_tool": "get_current_time",
          "description": "Get current time in a specific timezone", "trusted": True},
         {"name": "mcp__time__convert_time", "server_tool": "convert_time",
          "description": "Convert time between timezones", "trusted": False}]},
    {"name": "docs", "transport": "http", "state": "failed", "start_s": None,
     "target": "http://127.0.0.1:9000/mcp", "tools": [],
     "error": "All connection attempts failed (http://127.0.0.1:9000/mcp)"},
]


class HostApp(App):
    def __init__(self, rows) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        yield Static("host")

    def on_mount(self) -> None:
        self.push_screen(McpServersScreen(self.rows))


async def test_servers_and_tools_are_listed_and_esc_closes():
    app = HostApp(ROWS)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        shown = "\n".join(app.screen.server_list.text())
        assert "time  ready in 1.2s" in shown
        assert "mcp__time__get_current_time  trusted  Get current" in shown
        # names padded to the longest: trust words and descriptions stand in columns
        assert "mcp__time__convert_time      asks     Convert time" in shown
        assert "docs  failed" in shown and "All connection attempts failed" in shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, McpServersScreen)


async def test_hostile_server_text_is_inert():
    rows = [{"name": "x\x1b]0;t\x07", "transport": "stdio", "state": "ready", "start_s": 0.5,
             "target": "[@click=app.quit]run[/]", "error": "died\x9b31m\nsecond line",
             "tools": [{"name": "mcp__x__t", "description": "[bold]b[/]\x1b[2J",
                        "trusted": False}]}]
    app = HostApp(rows)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        shown = app.screen.server_list.text()
        for text in shown:
            assert_inert(text)
        assert any("[@click=app.quit]run[/]" in t for t in shown)
        assert any("[bold]b[/]" in t for t in shown)


async def test_no_servers_says_how_to_add_one():
    app = HostApp([])
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        shown = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "[mcp.servers.NAME]" in shown


def test_mcp_screen_snapshot(snap_compare):
    assert snap_compare(HostApp(ROWS), terminal_size=(110, 24))


async def test_ten_thousand_tools_are_one_widget_that_draws_what_it_shows():
    tools = [{"name": f"mcp__big__tool_{i:05d}", "description": f"extra tool {i}",
              "trusted": i % 2 == 0} for i in range(1, 10_001)]
    rows = [{"name": "big", "transport": "stdio", "state": "ready", "start_s": 2.0, "error": "",
             "target": "big-server", "tools": tools}]
    app = HostApp(rows)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert len(screen.query("*")) < 10  # not a widget per tool
        listing = screen.server_list
        assert len(listing.lines(listing.scrollable_content_region.width)) == 10_002
        assert len(listing._built) < 50  # only the rows drawn were built
        listing.focus()
        await pilot.press("end")
        await pilot.pause()
        drawn = [listing.render_line(y).text for y in range(listing.size.height)]
        assert "mcp__big__tool_10000  trusted  extra tool 10000" in "\n".join(drawn)


async def test_long_errors_wrap_and_long_tool_rows_end_in_an_ellipsis():
    rows = [{"name": "x", "transport": "stdio", "state": "ready", "start_s": None,
             "target": "cmd", "error": "word " * 60, "tools": [
                 {"name": "mcp__x__t", "description": "d" * 300, "trusted": False}]}]
    app = HostApp(rows)
    async with app.run_test(size=(80, 30)) as pilot:
        await pilot.pause()
        lines = app.screen.server_list.text()
        assert sum("word" in line for line in lines) >= 3  # wrapped, all of it kept
        assert "".join(lines).count("word") == 60
        drawn = [app.screen.server_list.render_line(y).text for y in range(10)]
        assert any(line.rstrip().endswith("…") and "mcp__x__t" in line for line in drawn)
