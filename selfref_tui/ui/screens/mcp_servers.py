"""/mcp: the MCP servers from config.toml, their state and the tools each offers.

Takes plain rows (``McpManager.overview()``), so it renders without a running
manager and a test can hand it any data. Names, descriptions and errors come
from the servers: all of it is shown through ``selfref_tui.safety.content``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from selfref_tui.safety import content

STATE_STYLES = {
    "ready": "$success",
    "starting": "$warning",
    "failed": "$error",
    "exited": "$error",
    "stopped": "$text-muted",
    "disabled": "$text-muted",
}


class McpServersScreen(ModalScreen[None]):
    """Scrollable; Esc (or q) closes."""

    DEFAULT_CSS = """
    McpServersScreen { align: center middle; background: $background 60%; }
    McpServersScreen > #dialog {
        width: 90%;
        max-width: 110;
        height: auto;
        max-height: 90%;
        border: round $primary;
        border-title-color: $primary;
        border-subtitle-color: $text-muted;
        background: $surface;
    }
    McpServersScreen #servers { height: auto; max-height: 100%; padding: 0 1; }
    McpServersScreen .server { text-style: bold; margin-top: 1; }
    McpServersScreen .error { color: $error; padding-left: 2; }
    McpServersScreen .tool { padding-left: 2; }
    McpServersScreen .empty { color: $text-muted; text-style: italic; margin: 1 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="mcp.close"),
        Binding("q", "close", "Close", show=False, id="mcp.quit"),
    ]

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        super().__init__()
        self.rows = [dict(r) for r in rows]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "MCP servers"
            dialog.border_subtitle = "esc close"
            with VerticalScroll(id="servers"):
                if not self.rows:
                    yield Static("No MCP servers configured: add an [mcp.servers.NAME] table "
                                 "to config.toml (see the README).", classes="empty",
                                 markup=False)
                for row in self.rows:
                    yield from self._server(row)

    def _server(self, row: Mapping[str, Any]) -> ComposeResult:
        state = str(row.get("state", ""))
        took = f" in {row['start_s']:.1f}s" if row.get("start_s") is not None else ""
        yield Static(Content.assemble(
            content(str(row.get("name", "")), "bold", line=True),
            "  ",
            (f"{state}{took}", STATE_STYLES.get(state, "")),
            "  ",
            content(f"{row.get('transport', '')}: {row.get('target', '')}", "$text-muted",
                    line=True),
        ), classes="server")
        if row.get("error"):
            yield Static(content(str(row["error"]), line=True), classes="error")
        for tool in row.get("tools", []):
            first = (str(tool.get("description", "")).strip().splitlines() or [""])[0]
            trusted = ("trusted", "$success") if tool.get("trusted") else ("asks", "$warning")
            yield Static(Content.assemble(
                content(str(tool.get("name", "")), line=True), "  ", trusted, "  ",
                content(first, "$text-muted", line=True),
            ), classes="tool")

    def action_close(self) -> None:
        self.dismiss(None)
