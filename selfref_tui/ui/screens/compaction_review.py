"""The model's compaction summary, shown before it replaces the conversation.

With ``[agent] review_compaction = true`` the ``compact`` tool waits here: the
person reads the summary, may edit it (one text area, a ``## Title`` block
per section), and accepts it (ctrl+s, or the button) or cancels it (Esc, or
the button: nothing is replaced). What they accept is what is applied; the
runtime still adds what it keeps verbatim (their own messages, pins).

The text is the model's, so it is made inert before it is shown (control
characters become visible symbols; a text area never parses markup). The
dialog opens while the person may be typing: keys in its first half second
are dropped rather than typed into the summary, as in the question dialog.
"""

from __future__ import annotations

import time
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from selfref_tui.agent.tools.review import CANCEL, accept_answer
from selfref_tui.safety import content, inert
from selfref_tui.ui.screens import question
from selfref_tui.ui.screens.short import BREAKPOINTS


class CompactionReviewScreen(ModalScreen[str]):
    DEFAULT_CSS = """
    CompactionReviewScreen { align: center middle; background: $background 60%; }
    CompactionReviewScreen > #dialog {
        width: 90%;
        max-width: 110;
        height: 90%;
        padding: 0 1;
        border: round $warning;
        border-title-color: $text-warning;
        border-subtitle-color: $text-muted;
        background: $surface;
    }
    CompactionReviewScreen #about { color: $text-muted; margin-bottom: 1; }
    CompactionReviewScreen #summary { height: 1fr; }
    CompactionReviewScreen #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    CompactionReviewScreen Button { margin-left: 1; min-width: 10; }
    /* under 24 rows (short.py): the paragraph on one line and no blank line, the summary
       taking the rows (its four lines of about left it seven at 60x20) */
    CompactionReviewScreen.-short > #dialog { height: 100%; }
    CompactionReviewScreen.-short #dialog > #about { margin-bottom: 0; height: 1;
                                                     text-wrap: nowrap; text-overflow: ellipsis; }
    CompactionReviewScreen.-short #dialog > #buttons { margin-top: 0; }
    """

    VERTICAL_BREAKPOINTS = BREAKPOINTS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "accept", "Accept", id="review.accept",
                tooltip="Apply the summary as it reads now"),
        Binding("escape", "cancel", "Cancel", id="review.cancel",
                tooltip="Keep the conversation as it is: nothing is replaced"),
    ]

    def __init__(self, text: str, *, asker: str = "") -> None:
        super().__init__()
        #: the summary as proposed (made inert: the person edits what they can see)
        self.proposed = inert(text)
        self.asker = asker

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            who = f"{self.asker}'s" if self.asker else "The model's"
            dialog.border_title = content(f"{who} compaction summary", line=True)
            dialog.border_subtitle = "ctrl+s accept · esc cancel"
            yield Static(Content(
                "It replaces the conversation once accepted (nothing is deleted: the messages "
                "stay stored and searchable). Edit any section; your own messages and pinned "
                "ones are kept verbatim beside it."), id="about")
            yield TextArea(self.proposed, id="summary", soft_wrap=True, show_line_numbers=False)
            with Horizontal(id="buttons"):
                yield Button("accept", id="accept", variant="primary")
                yield Button(Content.assemble(("c", "underline"), "ancel"), id="cancel")

    @property
    def editor(self) -> TextArea:
        return self.query_one("#summary", TextArea)

    def on_mount(self) -> None:
        self._opened = time.monotonic()
        editor = self.editor
        if self.app.is_headless:
            editor.cursor_blink = False  # tests and snapshots: a steady frame
        editor.focus()
        # Keys typed for the chat before the dialog was seen must not land in the summary.
        if question.GRACE_S > 0:
            editor.read_only = True
            self.set_timer(question.GRACE_S, self._editable)

    def _editable(self) -> None:
        self.editor.read_only = False

    def _too_soon(self) -> bool:
        return time.monotonic() - getattr(self, "_opened", 0.0) < question.GRACE_S

    def action_accept(self) -> None:
        if self._too_soon():
            return
        text = self.editor.text
        self.dismiss(accept_answer(None if text == self.proposed else text))

    def action_cancel(self) -> None:
        self.dismiss(CANCEL)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "accept":
            self.action_accept()
        else:
            self.action_cancel()
