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
        shown = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "time  ready in 1.2s" in shown and "mcp__time__convert_time  asks" in shown
        assert "mcp__time__get_current_time  trusted" in shown
        assert "docs  failed" in shown and "All connection attempts failed" in shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, McpServersScreen)


async def test_hostile_server_text_is_inert():
    rows = [{"name": "x\x1b]0;t\x07", "transport": "stdio", "state": "exited", "start_s": 0.5,
             "target": "[@click=app.quit]run[/]", "error": "died\x9b31m\nsecond line",
             "tools": [{"name": "mcp__x__t", "description": "[bold]b[/]\x1b[2J",
                        "trusted": False}]}]
    app = HostApp(rows)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        shown = [str(w.render()) for w in app.screen.query(Static)]
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
