"""/mcp: the MCP servers from config.toml, their state and the tools each offers.

Takes plain rows (``McpManager.overview()``), so it renders without a running
manager and a test can hand it any data; given where they come from, it asks
again while a server is starting, so a screen opened at start-up shows each
server ready (or failed) when it is, and, given a cheap sign of change
(``McpManager.changes``), for as long as it is open, so a server that fails or
exits meanwhile is shown so. Up and Down pick a server (highlighted; a failed
one first when the screen opens); given the manager's ``restart``, ``r``
restarts the one picked, whatever its state (a ready server may have stopped
answering), and the screen follows it through "starting" to "ready" or
"failed". Only a ready server's tools are listed: those of a server that is
down are not offered to the model, so they are one dim line that counts them.
Names, descriptions and errors come
from the servers: all of it is shown through ``selfref_tui.safety.content``.
The list is one Line-API widget (``ServerList``): a server with 10,000 tools
opens as fast as one with ten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from selfref_tui.safety import content
from selfref_tui.ui.widgets.server_list import ListRow, ServerList

#: tool names are padded to the longest of their server's, up to this many columns
NAME_COLUMN = 40
#: seconds between two looks at the servers while one is starting
POLL_S = 0.5
#: the states of a server that is down: the cursor starts on the first such one
DOWN = ("failed", "exited")

STATE_STYLES = {
    "ready": "$text-success",
    "starting": "$text-warning",
    "failed": "$text-error",
    "exited": "$text-error",
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
        border-title-color: $text-primary;
        border-subtitle-color: $text-muted;
        background: $surface;
    }
    McpServersScreen .empty { color: $text-muted; text-style: italic; margin: 1 1; }
    McpServersScreen #said { color: $text-warning; margin: 1 1 0 1; height: auto; }
    McpServersScreen #said.-empty { display: none; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="mcp.close"),
        Binding("q", "close", "Close", show=False, id="mcp.quit"),
        Binding("r", "restart", "Restart", id="mcp.restart"),
    ]

    def __init__(self, rows: Sequence[Mapping[str, Any]],
                 source: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
                 changes: Callable[[], object] | None = None,
                 restart: Callable[[str], str] | None = None) -> None:
        """``source``: fresh rows (the manager's ``overview``), asked while one is starting;
        ``changes``: a value that differs whenever the rows do (the manager's ``changes``),
        looked at while the screen is open, the rows asked again when it moves. With
        10,000 tools ``source`` takes tens of milliseconds: too much to ask twice a second.
        ``restart``: starts a server again by name, '' or why not (the manager's)."""
        super().__init__()
        self.rows = [dict(r) for r in rows]
        self.source = source
        self.changes = changes
        self.restart = restart

    def on_mount(self) -> None:
        source, changes = self.source, self.changes
        if source is None or (changes is None and not self._starting()):
            return
        seen: object = None  # the rows may have changed between their making and now

        def follow() -> None:
            nonlocal seen
            if changes is not None:
                now = changes()
                if now == seen:
                    return
                seen = now
            self._show(source())
            if changes is None and not self._starting():
                poll.stop()

        poll = self.set_interval(POLL_S, follow)

    def _show(self, fresh: Sequence[Mapping[str, Any]]) -> None:
        rows = [dict(r) for r in fresh]
        if rows != self.rows:
            self.rows = rows
            self.server_list.set_rows(self._list_rows())
            self.query_one("#dialog").border_subtitle = self._hint()
            self.query_one("#said", Static).add_class("-empty")  # said of the rows before

    def _starting(self) -> bool:
        return any(row.get("state") == "starting" for row in self.rows)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "MCP servers"
            dialog.border_subtitle = self._hint()
            if not self.rows:
                yield Static("No MCP servers configured: add an [mcp.servers.NAME] table "
                             "to config.toml, then /mcp reload.", classes="empty", markup=False)
            else:
                # what r could not do: said here, since a notice waits for the dialog to
                # close; above the list, which may take all the room there is
                yield Static("", id="said", classes="-empty")
                down = [str(r.get("name", "")) for r in self.rows if r.get("state") in DOWN]
                yield ServerList(self._list_rows(), id="servers",
                                 cursor=down[0] if down else None)

    def _hint(self) -> str:
        if self.restart is None or not self.rows:
            return "esc close"
        return "↑↓ server · r restart it · esc close"

    @property
    def server_list(self) -> ServerList:
        return self.query_one("#servers", ServerList)

    def _list_rows(self) -> list[ListRow]:
        return [line for row in self.rows for line in self._server(row)]

    def _server(self, row: Mapping[str, Any]) -> list[ListRow]:
        state = str(row.get("state", ""))
        took = f" in {row['start_s']:.1f}s" if row.get("start_s") is not None and \
            state == "ready" else ""  # a server down since: its start is no news
        rows = [ListRow(Content("")), ListRow(Content.assemble(
            content(str(row.get("name", "")), "bold", line=True),
            "  ",
            (f"{state}{took}", STATE_STYLES.get(state, "")),
            "  ",
            content(f"{row.get('transport', '')}: {row.get('target', '')}", "$text-muted",
                    line=True),
        ).stylize_before("bold"), wrap=True, key=str(row.get("name", "")))]
        if row.get("error"):
            rows.append(ListRow(content(str(row["error"]), "$text-error", line=True), wrap=True,
                                indent=2))
        tools = row.get("tools", [])
        if state != "ready" and tools:  # not offered to the model: not listed as if they were
            count = f"{len(tools)} tool{'' if len(tools) == 1 else 's'}"
            rows.append(ListRow(Content.styled(f"{count} not offered while it is {state}"
                                               f"{' (r restarts it)' if self.restart else ''}",
                                               "$text-muted italic"), indent=2))
            return rows
        # built when first drawn: a server may list thousands
        column = min(NAME_COLUMN, max((len(str(tool.get("name", ""))) for tool in tools),
                                      default=0))
        rows += [ListRow(partial(_tool_line, tool, column), indent=2) for tool in tools]
        return rows

    def action_close(self) -> None:
        self.dismiss(None)

    def action_restart(self) -> None:
        """The picked server stopped and started again; what refuses is said in the dialog.

        The screen shows it "starting" at once, then "ready" or "failed"; the
        manager's notice of it shows when the dialog closes."""
        if self.restart is None or not self.rows:
            return
        name = self.server_list.cursor
        refused = self.restart(name) if name is not None else ""
        if self.source is not None:
            self._show(self.source())  # "starting" at once
        said = self.query_one("#said", Static)
        said.update(content(refused))
        said.set_class(not refused, "-empty")


def _tool_line(tool: Mapping[str, Any], column: int = 0) -> Content:
    """Name, trust and description; names padded to ``column`` so the words after line up."""
    first = (str(tool.get("description", "")).strip().splitlines() or [""])[0]
    trusted = ("trusted", "$text-success") if tool.get("trusted") else ("asks   ", "$text-warning")
    name = content(str(tool.get("name", "")), line=True)
    return Content.assemble(
        name, " " * max(0, column - name.cell_length), "  ", trusted, "  ",
        content(first, "$text-muted", line=True),
    )
