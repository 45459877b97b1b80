"""F1: every key the app answers to right now, and the slash commands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.markup import escape
from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

if TYPE_CHECKING:
    from textual.app import App

SLASH_COMMANDS: tuple[tuple[str, str], ...] = (
    ("/compact [FOCUS]", "Summarise the conversation so far and continue from the summary; "
     "FOCUS says what it should keep"),
    ("/remember TEXT", "Save a durable experience the agent sees in every call"),
    ("/forget ID", "Forget an experience, e.g. /forget exp_002"),
    ("/export ID [PATH]", "Write a ref to a file (fence stripped)"),
    ("/key [NAME]", "Switch to another conversation (created if new; without NAME: pick "
     "one, as ctrl+o)"),
    ("/new", "Start a new conversation (/clear too)"),
    ("/context", "Show exactly what the model will see next"),
    ("/mcp", "MCP servers: their state and tools"),
    ("/help", "This screen"),
)


#: what the app cannot do alone: the terminal decides whether a copy reaches the clipboard
TERMINAL_NOTES: tuple[tuple[str, str], ...] = (
    (
        "Copy (ctrl+r)",
        "sent to the terminal as an OSC 52 request; the terminal must allow clipboard "
        "writes. tmux: set -g set-clipboard on. Some terminals ask first, some refuse: "
        "then use Export (ctrl+s).",
    ),
)


def keys_from_app(app: App) -> list[tuple[str, str]]:
    """(key, description) for every active binding with a description, deduplicated."""
    rows: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for active in app.screen.active_bindings.values():
        binding = active.binding
        if not binding.description:
            continue
        row = (binding.key_display or _spell(binding.key), binding.description)
        if row not in seen:
            seen.add(row)
            rows.append(row)
    return rows


def _spell(key: str) -> str:
    """Keys as people type them ("ctrl+b", "esc"), not the footer's "^b"."""
    return key.replace("escape", "esc")


class HelpScreen(ModalScreen[None]):
    """Takes plain rows so the app decides what is listed (its live, remapped keys)."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; background: $background 60%; }
    HelpScreen > #panel {
        width: 80;
        max-width: 95%;
        height: auto;
        max-height: 90%;
        padding: 0 1;
        border: round $primary;
        border-title-color: $text-primary;
        border-subtitle-color: $text-muted;
        background: $surface;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="help.close"),
        Binding("f1", "close", "Close", show=False, id="help.f1"),
        Binding("q", "close", "Close", show=False, id="help.q"),
    ]

    def __init__(
        self,
        keys: Sequence[tuple[str, str]],
        commands: Sequence[tuple[str, str]] = SLASH_COMMANDS,
    ) -> None:
        super().__init__()
        # spelled as the footer and the dialogs spell them: "esc", not "escape"
        self.keys = [(_spell(key), description) for key, description in keys]
        self.commands = list(commands)

    @classmethod
    def from_app(cls, app: App, commands: Sequence[tuple[str, str]] = SLASH_COMMANDS) -> HelpScreen:
        return cls(keys_from_app(app), commands)

    def _table(self, title: str, rows: Sequence[tuple[str, str]]) -> Table:
        accent = self.app.theme_variables.get("text-primary", "")  # readable on its ground
        table = Table.grid(padding=(0, 2))
        table.add_column(style=f"bold {accent}", no_wrap=True, min_width=18)
        table.add_column()
        table.add_row(f"[bold]{title}[/]", "")
        for key, description in rows:
            # Rows are plain text: "[pasted N lines #1]" is shown, not read as markup.
            table.add_row(escape(key), escape(description))
        table.add_row("", "")
        return table

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="panel") as panel:
            panel.border_title = "Help"
            panel.border_subtitle = "esc close · ctrl+p every action"
            yield Static(self._table("Keys", self.keys), id="keys")
            yield Static(self._table("Slash commands", self.commands), id="commands")
            yield Static(self._table("Terminal", TERMINAL_NOTES), id="terminal")

    def action_close(self) -> None:
        self.dismiss(None)
