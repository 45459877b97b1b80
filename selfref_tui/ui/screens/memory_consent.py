"""Before the model changes its durable memory: the person allows it, or denies it.

Shown with ``[agent] memory_writes = "ask"`` when the model calls ``remember``
or ``forget`` (or its summary keeps facts as experiences). The text is the
model's: it goes through ``selfref_tui.safety.content`` (never markup, control
characters made visible). The keys are the question dialog's (it is one, with
a body that lays out the action and the text): only "deny" has a letter, Esc
and Enter deny, and allowing takes Tab or the arrows and Enter, or a click —
never a key typed for the chat a moment before.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from selfref_tui.agent.tools.consent import CONSENT_CHOICES, Consent
from selfref_tui.safety import content
from selfref_tui.ui.screens.question import QuestionScreen

#: what each action does, said before the text
WHAT = {
    "remember": ("wants to remember this", "It is added to the system prompt of every later "
                 "call, and kept after compaction."),
    "forget": ("wants to forget this", "It is taken out of the system prompt of every later "
               "call."),
}


class MemoryConsentScreen(QuestionScreen):
    SCROLLS = "text"
    DEFAULT_CSS = """
    MemoryConsentScreen > #dialog { width: 76; max-height: 80%; }
    MemoryConsentScreen #why { color: $text-muted; }
    MemoryConsentScreen #text {
        height: auto;
        max-height: 12;
        border: round $panel;
        border-title-color: $text-muted;  /* the border's own colour is no text colour */
        padding: 0 1;
        margin-top: 1;
    }
    """

    def __init__(self, consent: Consent, *, asker: str = "") -> None:
        super().__init__("", CONSENT_CHOICES, asker=asker)
        self.consent = consent

    def compose(self) -> ComposeResult:
        wants, why = WHAT.get(self.consent.action, ("wants to change its memory", ""))
        with Vertical(id="dialog") as dialog:
            who = self.asker if self.asker else "The model"
            dialog.border_title = content(f"{who} {wants}", line=True)
            yield Static(Content(why), id="why")
            with VerticalScroll(id="text") as box:
                box.border_title = Content(
                    "experience" if self.consent.action == "remember" else "forgetting")
                yield Static(content(self.consent.text), id="consent-text")
            yield from self.compose_choices()
