"""Before an untrusted MCP tool runs: the person allows it once, trusts it, or denies it.

The model chose the arguments and the server named the tool, so everything
shown here is untrusted text: it goes through ``selfref_tui.safety.content``
(never markup, control characters made visible). The keys are the question
dialog's (it is one, with a body that lays out server, tool and arguments):
only "deny" has a letter, Esc and Enter deny, and allowing takes Tab or the
arrows and Enter, or a click — never a key typed for the chat a moment before.
↑↓ and the page keys scroll long arguments.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from selfref_tui.agent.mcp.approval import APPROVAL_CHOICES, Approval
from selfref_tui.safety import content
from selfref_tui.ui.screens.question import QuestionScreen


class ApprovalScreen(QuestionScreen):
    SCROLLS = "arguments"
    DEFAULT_CSS = """
    ApprovalScreen > #dialog { width: 80; max-height: 80%; }
    ApprovalScreen .label { color: $text-muted; width: 11; }
    ApprovalScreen .row { height: auto; }
    ApprovalScreen #arguments {
        height: auto;
        max-height: 16;
        border: round $panel;
        border-title-color: $text-muted;  /* the border's own colour is no text colour */
        padding: 0 1;
        margin-top: 1;
    }
    """

    def __init__(self, approval: Approval, *, asker: str = "") -> None:
        super().__init__("", APPROVAL_CHOICES, asker=asker)
        self.approval = approval

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            who = f"{self.asker} wants" if self.asker else "The model wants"
            dialog.border_title = content(f"{who} to run an MCP tool", line=True)
            with Horizontal(classes="row"):
                yield Static("server", classes="label")
                yield Static(content(self.approval.server, "bold", line=True), id="server")
            with Horizontal(classes="row"):
                yield Static("tool", classes="label")
                yield Static(content(self.approval.tool, "bold", line=True), id="tool")
            with VerticalScroll(id="arguments") as box:
                box.border_title = Content("arguments")
                yield Static(content(self.approval.arguments), id="arguments-text")
            yield from self.compose_choices()
