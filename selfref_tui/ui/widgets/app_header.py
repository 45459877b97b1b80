"""One line on top: which memory, which model, what the agent is doing."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from selfref_tui.safety import inert_line


class AppHeader(Static):
    DEFAULT_CSS = """
    AppHeader {
        dock: top;
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text;
    }
    """

    def __init__(
        self, *, key: str = "", provider: str = "", model: str = "", demo: bool = False
    ) -> None:
        super().__init__(id="app-header")
        self.key = key
        self.provider = provider
        self.model = model
        self.demo = demo
        self.status = "starting…"

    def on_mount(self) -> None:
        self._render_line()

    def set_key(self, key: str) -> None:
        self.key = key
        self._render_line()

    def set_model(self, provider: str, model: str, demo: bool) -> None:
        self.provider, self.model, self.demo = provider, model, demo
        self._render_line()

    def set_status(self, status: str) -> None:
        self.status = status
        self._render_line()

    def _render_line(self) -> None:
        parts: list[Content | str | tuple[str, str]] = [
            ("selfref", "bold $accent"),
            "  ",
            ("key ", "dim"),
            (inert_line(self.key) or "—", "bold"),
            "  ",
            (f"{inert_line(self.provider)} · " if self.provider else "", "dim"),
            (inert_line(self.model or ""), ""),
        ]
        if self.demo:
            parts += [" ", (" demo ", "bold $text on $warning")]
        if self.status:
            parts += ["  ", (inert_line(self.status), "italic $text-muted")]
        self.update(Content.assemble(*parts))
