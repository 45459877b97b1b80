"""One line on top: which memory, which model, what the agent is doing."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from selfref_tui.safety import content, inert_line, redact


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
        self,
        *,
        key: str = "",
        provider: str = "",
        model: str = "",
        demo: bool = False,
        read_only: bool = False,
    ) -> None:
        super().__init__(id="app-header")
        self.read_only = read_only
        self.key = key
        self.provider = provider
        self.model = model
        self.demo = demo
        self.status = "starting…"
        #: what a quick check found wrong with the provider ("unreachable"), "" when fine
        self.provider_note = ""

    def on_mount(self) -> None:
        self._render_line()

    def set_key(self, key: str) -> None:
        self.key = key
        self._render_line()

    def set_model(self, provider: str, model: str, demo: bool) -> None:
        self.provider, self.model, self.demo = provider, model, demo
        self._render_line()

    def set_provider_note(self, note: str) -> None:
        self.provider_note = note
        self._render_line()

    def set_status(self, status: str) -> None:
        self.status = status
        self._render_line()

    def _render_line(self) -> None:
        # The provider's name only when it says something the model name and the
        # demo badge do not ("demo · selfref-demo demo" said one thing three times).
        provider = self.provider if self.provider not in ("", "default", "demo") else ""
        parts: list[Content | str | tuple[str, str]] = [
            ("selfref", "bold $accent"),
            "  ",
            ("key ", "dim"),
            content(self.key or "—", "bold", line=True),
            "  ",
            # A profile may be named after its URL: never with its userinfo.
            content(f"{redact(provider)} · " if provider else "", "dim", line=True),
            content(redact(self.model or ""), line=True),
        ]
        if self.demo:
            parts += [" ", (" demo ", "bold $text on $warning")]
        if self.provider_note:
            parts += ["  ", content(f"⚠ {self.provider_note}", "bold $error", line=True)]
        if self.read_only:
            parts += [" ", (" read-only ", "bold $text on $error")]
        if self.status:
            parts += ["  ", (inert_line(self.status), "italic $text-muted")]
        self.update(Content.assemble(*parts))
