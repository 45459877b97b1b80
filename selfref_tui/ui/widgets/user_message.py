"""What the person typed; shows "queued" until the running turn takes it."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from selfref_tui.safety import content


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        background: $primary 12%;
        border-left: outer $primary;
    }
    UserMessage.-queued { background: $warning 8%; border-left: outer $warning 60%; }
    UserMessage.archived { opacity: 60%; }
    """

    def __init__(self, text: str, *, queued: bool = False, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.text = text
        self.queued = queued
        #: a turn has reported starting with this message (see Transcript._awaiting_start)
        self.started = False
        self.set_class(queued, "-queued")
        self._refresh_label()

    def delivered(self) -> None:
        self.queued = False
        self.remove_class("-queued")
        self._refresh_label()

    def _refresh_label(self) -> None:
        body = content(self.text)  # from the store too: shown inert
        if self.queued:
            body = Content.assemble(
                body, "\n", ("queued — delivered at the next step", "italic $warning")
            )
        self.update(body)
