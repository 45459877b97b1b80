"""One line on top: which memory, which model, what the agent is doing.

Every part is a reactive the app assigns (``header.status = "ready"``); a change
repaints the line, and an assignment of the same value costs nothing, so the
event bridge can set the phase on every event without checking first.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from selfref_tui.safety import content, inert_line, name_line, redact


class AppHeader(Widget):
    DEFAULT_CSS = """
    AppHeader {
        dock: top;
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text;
    }
    """

    #: the memory key shown
    key: reactive[str] = reactive("")
    #: the provider profile's name ("default" and "demo" are not shown: they say nothing)
    provider: reactive[str] = reactive("")
    model: reactive[str] = reactive("")
    demo: reactive[bool] = reactive(False)
    read_only: reactive[bool] = reactive(False)
    #: what the agent is doing ("ready", "writing…")
    status: reactive[str] = reactive("starting…")
    #: what a quick check found wrong with the provider ("unreachable"), "" when fine
    provider_note: reactive[str] = reactive("")

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
        self.set_reactive(AppHeader.key, key)
        self.set_reactive(AppHeader.provider, provider)
        self.set_reactive(AppHeader.model, model)
        self.set_reactive(AppHeader.demo, demo)
        self.set_reactive(AppHeader.read_only, read_only)

    def render(self) -> Content:
        # The provider's name only when it says something the model name and the
        # demo badge do not ("demo · selfref-demo demo" said one thing three times).
        provider = self.provider if self.provider not in ("", "default", "demo") else ""
        head: list[Content | str | tuple[str, str]] = [
            ("selfref", "bold $text-accent"),
            "  ",
            ("conversation ", "$text-muted"),
        ]
        model: list[Content | str | tuple[str, str]] = [
            "  ",
            # A profile may be named after its URL: never with its userinfo.
            content(f"{redact(provider)} · " if provider else "", "$text-muted", line=True),
            content(redact(self.model or ""), line=True),
        ]
        if self.demo:
            model += [" ", (" demo ", "bold $text on $warning")]
        tail: list[Content | str | tuple[str, str]] = []
        if self.provider_note:
            tail += ["  ", content(f"⚠ {self.provider_note}", "bold $text-error", line=True)]
        if self.read_only:
            tail += [" ", (" read-only ", "bold $text on $error")]
        if self.status:
            tail += ["  ", (inert_line(self.status), "italic $text-muted")]
        # One line: a name longer than what the rest leaves is cut (it wrapped onto a
        # hidden second line, and took the model and the status with it). Narrower
        # still (40 columns), the word "conversation" goes, then the model: what the
        # agent is doing stays in view.
        name = name_line(self.key or "—")
        width = self.content_size.width

        def left(*parts: list[Content | str | tuple[str, str]]) -> int:
            """The cells ``parts`` leave, a name of up to 12 cells kept in view."""
            return (width - min(cell_len(name), 12)
                    - sum(Content.assemble(*part).cell_length for part in parts))

        if width and left(head, model, tail) < 0:
            head = head[:2]
            if left(head, model, tail) < 0:
                model = []
        tail = model + tail
        room = (width - Content.assemble(*head).cell_length
                - Content.assemble(*tail).cell_length)
        most = max(room, 12)  # a name stays recognisable, however narrow the window
        if cell_len(name) > most:
            name = set_cell_size(name, most - 1) + "…"
        return Content.assemble(*head, content(name, "bold"), *tail)
