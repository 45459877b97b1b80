"""The model's reasoning, kept out of the way: collapsed unless asked for."""

from __future__ import annotations

from textual.widgets import Collapsible, Static

from selfref_tui.safety import content


class ReasoningView(Collapsible):
    DEFAULT_CSS = """
    ReasoningView {
        height: auto;
        border: none;
        padding: 0;
        margin: 0 0 1 0;
        background: transparent;
        color: $text-muted;
    }
    ReasoningView > Contents { padding: 0 0 0 2; }
    /* Full width, not auto: the word count grows the title, and a title whose
       width follows its text needs a layout pass to show the new text. */
    ReasoningView > CollapsibleTitle { width: 1fr; }
    ReasoningView Static { color: $text-muted; text-style: italic; }
    """

    def __init__(self, text: str = "") -> None:
        self._parts: list[str] = [text] if text else []
        self._body = Static(content(text))
        super().__init__(self._body, title=self._label_text(), collapsed=True)

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def append(self, text: str) -> None:
        self._parts.append(text)
        if not self.collapsed:
            self._body.update(content(self.text))
        self.title = self._label_text()

    def _on_collapsible_expanded(self) -> None:
        self._body.update(content(self.text))

    def _label_text(self) -> str:
        words = len(self.text.split())
        return f"Reasoning · {words} words" if words else "Reasoning"
