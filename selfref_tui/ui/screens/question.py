"""A tool asks the person to choose (the model wants to overwrite a file, say).

The agent's tool waits on the answer, so the dialog has to end in a choice
whatever the person does: each choice has a key (its first letter), Enter
takes the focused button, and Esc takes the last choice, which tools make the
safe one ("keep").
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from selfref_tui.safety import content, inert_line


class QuestionScreen(ModalScreen[str]):
    DEFAULT_CSS = """
    QuestionScreen { align: center middle; background: $background 60%; }
    QuestionScreen > #dialog {
        width: 70;
        height: auto;
        padding: 1 2;
        border: round $warning;
        border-title-color: $warning;
        background: $surface;
    }
    QuestionScreen #prompt { text-style: bold; }
    QuestionScreen #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    QuestionScreen Button { margin-left: 1; min-width: 10; }
    """

    def __init__(self, prompt: str, choices: tuple[str, ...], *, asker: str = "") -> None:
        super().__init__()
        self.prompt = prompt
        self.choices = choices or ("ok",)
        self.asker = asker

    @property
    def safe_choice(self) -> str:
        return self.choices[-1]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = content(
                f"{self.asker} asks" if self.asker else "The agent asks", line=True
            )
            yield Static(content(self.prompt), id="prompt")
            with Horizontal(id="buttons"):
                for index, choice in enumerate(self.choices):
                    shown = inert_line(choice, 30)
                    label = Content.assemble((shown[:1], "underline"), shown[1:])
                    yield Button(label, id=f"choice-{index}", name=choice)

    def on_mount(self) -> None:
        # The safe choice has the focus: an Enter typed for the chat picks it.
        self.query_one(f"#choice-{len(self.choices) - 1}", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.name or self.safe_choice)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            self.dismiss(self.safe_choice)
            return
        for choice in self.choices:
            if event.character and choice[:1].lower() == event.character.lower():
                event.stop()
                self.dismiss(choice)
                return
