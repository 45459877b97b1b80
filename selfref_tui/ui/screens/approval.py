"""Before an untrusted MCP tool runs: the person allows it once, trusts it, or denies it.

The model chose the arguments and the server named the tool, so everything
shown here is untrusted text: it goes through ``selfref_tui.safety.content``
(never markup, control characters made visible). The tool call waits on the
answer, so the dialog always ends in a choice: each answer has a key (its first
letter), Esc denies, and the focus starts on "deny" so an Enter typed for the
chat does not allow anything.
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from selfref_tui.agent.mcp.approval import APPROVAL_CHOICES, DENY, Approval
from selfref_tui.safety import content


class ApprovalScreen(ModalScreen[str]):
    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; background: $background 60%; }
    ApprovalScreen > #dialog {
        width: 80;
        height: auto;
        max-height: 80%;
        padding: 1 2;
        border: round $warning;
        border-title-color: $warning;
        background: $surface;
    }
    ApprovalScreen .label { color: $text-muted; width: 11; }
    ApprovalScreen .row { height: auto; }
    ApprovalScreen #arguments {
        height: auto;
        max-height: 16;
        border: round $panel;
        padding: 0 1;
        margin-top: 1;
    }
    ApprovalScreen #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    ApprovalScreen Button { margin-left: 1; min-width: 10; }
    """

    def __init__(self, approval: Approval, *, asker: str = "") -> None:
        super().__init__()
        self.approval = approval
        self.asker = asker

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            who = f"{self.asker} wants" if self.asker else "The model wants"
            dialog.border_title = Content(f"{who} to run an MCP tool")
            with Horizontal(classes="row"):
                yield Static("server", classes="label")
                yield Static(content(self.approval.server, "bold", line=True), id="server")
            with Horizontal(classes="row"):
                yield Static("tool", classes="label")
                yield Static(content(self.approval.tool, "bold", line=True), id="tool")
            with VerticalScroll(id="arguments") as box:
                box.border_title = Content("arguments")
                yield Static(content(self.approval.arguments), id="arguments-text")
            with Horizontal(id="buttons"):
                for index, choice in enumerate(APPROVAL_CHOICES):
                    label = Content.assemble((choice[:1], "underline"), choice[1:])
                    variant = "error" if choice == DENY else "default"
                    yield Button(label, id=f"choice-{index}", name=choice, variant=variant)

    def on_mount(self) -> None:
        self.query_one(f"#choice-{len(APPROVAL_CHOICES) - 1}", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.name or DENY)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            self.dismiss(DENY)
            return
        for choice in APPROVAL_CHOICES:
            if event.character and choice[:1].lower() == event.character.lower():
                event.stop()
                self.dismiss(choice)
                return
