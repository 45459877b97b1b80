"""A tool asks the person to choose (the model wants to overwrite a file, say).

The agent's tool waits on the answer, so the dialog has to end in a choice
whatever the person does. It opens at any moment, while the person may be
typing a message, so no stray key may say yes: only the safe choice (the
last one, "keep" or "deny") has a letter key, and Esc and Enter take it too
(it has the focus). Any other choice needs a deliberate act — Tab or the
arrows and Enter, or a click — and keys pressed in the first half second
after the dialog opens are ignored (they were typed for the chat).
"""

from __future__ import annotations

import time

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from selfref_tui.safety import content, inert_line
from selfref_tui.ui.screens.short import BREAKPOINTS, rows_left

#: keys this soon after the dialog opened were meant for the chat input
GRACE_S = 0.5

#: keys that scroll a question's long body (``SCROLLS``) wherever the focus is, and how
SCROLL_KEYS = {"up": "scroll_up", "down": "scroll_down", "pageup": "scroll_page_up",
               "pagedown": "scroll_page_down", "home": "scroll_home", "end": "scroll_end"}


class QuestionScreen(ModalScreen[str]):
    DEFAULT_CSS = """
    QuestionScreen { align: center middle; background: $background 60%; }
    QuestionScreen > #dialog {
        width: 70;
        max-width: 100%;
        height: auto;
        max-height: 90%;
        padding: 1 2;
        border: round $warning;
        border-title-color: $text-warning;
        background: $surface;
    }
    QuestionScreen #prompt { text-style: bold; }
    QuestionScreen #question { height: auto; }
    QuestionScreen #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    QuestionScreen Button { margin-left: 1; min-width: 10; }
    QuestionScreen #hint { color: $text-muted; }
    /* under 24 rows (short.py): no blank lines, the screen's height (_fit_body gives a
       scrolled body what is left) */
    QuestionScreen.-short > #dialog { padding: 0 1; max-height: 100%; }
    QuestionScreen.-short #dialog > #buttons, QuestionScreen.-short #dialog > VerticalScroll {
        margin-top: 0;
    }
    """

    VERTICAL_BREAKPOINTS = BREAKPOINTS

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
            # scrolled: a long question grew the dialog past the screen's top, its start
            # out of sight (the arrows and page keys scroll it, the focus on the choices)
            with VerticalScroll(id="question"):
                yield Static(content(self.prompt), id="prompt")
            yield from self.compose_choices()

    def compose_choices(self) -> ComposeResult:
        """The buttons and the key hint (a subclass with another body reuses them)."""
        with Horizontal(id="buttons"):
            last = len(self.choices) - 1
            for index, choice in enumerate(self.choices):
                shown = inert_line(choice, 30)
                label = (
                    Content.assemble((shown[:1], "underline"), shown[1:])
                    if index == last
                    else Content(shown)
                )
                yield Button(label, id=f"choice-{index}", name=choice)
        # keys as every dialog's hint names them: lower case, bold, then what they do
        key = "bold $text-primary"
        yield Static(
            Content.assemble(
                (inert_line(self.safe_choice[:1]), key), ", ", ("esc", key), " or ",
                ("enter", key), f" {inert_line(self.safe_choice)}   ",
                ("tab", key), " or ", ("←→", key), " then ", ("enter", key), " another choice",
            ),
            id="hint",
        )

    def on_mount(self) -> None:
        self._opened = time.monotonic()
        self._body_not_focusable()
        self.call_after_refresh(self._fit_body)
        # The safe choice has the focus: an Enter typed for the chat picks it.
        self.query_one(f"#choice-{len(self.choices) - 1}", Button).focus()

    def _too_soon(self) -> bool:
        return time.monotonic() - getattr(self, "_opened", 0.0) < GRACE_S

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        choice = event.button.name or self.safe_choice
        if choice != self.safe_choice and self._too_soon():
            return  # an Enter typed for the chat, on a button focused a moment ago
        self.dismiss(choice)

    #: the id of the scrolled body (the question; a subclass's arguments, say): the scroll
    #: keys move it
    SCROLLS = "question"

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._fit_body)

    def _fit_body(self) -> None:
        """The scrolled body (the question, the arguments, the experience) gets at most
        what the dialog's other parts leave it: long, the arguments' 16 rows took a
        20-row screen's dialog and the buttons and keys under them were cut off, and a
        long question grew the dialog past the screen's top."""
        if not self.SCROLLS or not self.is_mounted:
            return
        body = self.query_one(f"#{self.SCROLLS}")
        dialog = self.query_one("#dialog")
        size = self.size
        limit = dialog.styles.max_height
        height = int(limit.resolve(size, size)) if limit is not None else size.height
        room = rows_left(dialog, body, height)
        cap = body.styles.base.max_height  # the CSS's, not the one set here before
        most = int(cap.resolve(size, size)) if cap is not None else room
        body.styles.max_height = max(3, min(most, room))

    def _body_not_focusable(self) -> None:
        """Tab goes round the choices only: on a focusable body, Enter did nothing."""
        if self.SCROLLS:
            self.query_one(f"#{self.SCROLLS}").can_focus = False

    def on_key(self, event: events.Key) -> None:
        scroll = SCROLL_KEYS.get(event.key) if self.SCROLLS else None
        if scroll is not None:
            event.stop()
            getattr(self.query_one(f"#{self.SCROLLS}"), scroll)(animate=False)
            return
        if event.key == "escape":
            event.stop()
            self.dismiss(self.safe_choice)
            return
        if event.key in ("left", "right"):
            event.stop()
            if event.key == "left":
                self.focus_previous()
            else:
                self.focus_next()
            return
        if self._too_soon() and event.key not in ("tab", "shift+tab"):
            event.stop()  # typed for the chat before the dialog was seen
            return
        if event.character and event.character.lower() == self.safe_choice[:1].lower():
            event.stop()
            self.dismiss(self.safe_choice)
