"""The agent's durable experiences, browsable, correctable and forgettable by the person.

Each row says where the experience came from under its text (who: the agent,
the person or a compaction summary; the message it came from; when), so a
fact the model inferred is not mistaken for one the person stated.

Forgetting is destructive and the Delete key is easy to hit, so it asks a
one-key question inline (no modal: the person keeps their place in the list).
Editing (``e``) opens the text in a one-line input in place: Enter keeps the
correction, Esc leaves it. The widget never touches the store: it posts
:class:`ExperienceList.ForgetRequested` / :class:`ExperienceList.EditRequested`
and the app routes them through the runtime as patches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, OptionList, Static

from selfref_tui.safety import inert_line
from selfref_tui.ui.widgets.sidebar_section import SidebarSection


class _ForgetConfirm(Static, can_focus=True):
    """Takes exactly one key: ``y`` confirms, anything else cancels."""

    DEFAULT_CSS = """
    /* docked: below a list that fills the section it would be out of sight */
    _ForgetConfirm {
        dock: bottom;
        display: none;
        height: auto;
        padding: 0 1;
        background: $error 20%;
        color: $text;
    }
    _ForgetConfirm.-asking { display: block; }
    """

    @dataclass
    class Answered(Message):
        """The one key came: ``confirmed`` when it was ``y``."""

        experience_id: str
        confirmed: bool

    def __init__(self) -> None:
        super().__init__("", id="forget-confirm")
        self.experience_id: str | None = None

    def ask(self, experience_id: str) -> None:
        self.experience_id = experience_id
        self.update(
            Content.assemble(
                "Forget ",
                (inert_line(experience_id), "bold"),
                "?  ",
                ("y", "bold $text-error"),
                " yes · any other key cancels",
            )
        )
        self.add_class("-asking")
        self.focus()

    def _close(self, confirmed: bool) -> None:
        experience_id = self.experience_id
        self.experience_id = None
        self.remove_class("-asking")
        if experience_id is not None:
            self.post_message(self.Answered(experience_id, confirmed))

    async def _on_key(self, event: events.Key) -> None:
        # Swallow the key so it cannot also trigger a binding further up.
        event.stop()
        event.prevent_default()
        if self.experience_id is not None:
            self._close(event.key == "y")

    def _on_blur(self, event: events.Blur) -> None:
        if self.experience_id is not None:
            self._close(False)


class _ExperienceEditor(Input):
    """The highlighted experience's text, to correct: Enter keeps it, Esc (or leaving) drops it."""

    DEFAULT_CSS = """
    /* docked: below a list that fills the section it would be out of sight */
    _ExperienceEditor { dock: bottom; display: none; height: 3; }
    _ExperienceEditor.-editing { display: block; }
    """

    @dataclass
    class Done(Message):
        """The edit ended: ``text`` is the new text, None when it was abandoned."""

        experience_id: str
        text: str | None

    def __init__(self) -> None:
        # Typing adds to the text: a selected whole would be replaced by the first key.
        super().__init__(id="experience-editor", select_on_focus=False)
        self.experience_id: str | None = None

    def edit(self, experience_id: str, text: str) -> None:
        """Edit ``text`` as the row shows it: the model's, so inert (an Input writes
        ESC to the terminal as it is)."""
        self.experience_id = experience_id
        text = inert_line(text)
        self.value = text
        self.border_title = Content.assemble("edit ", (inert_line(experience_id), "bold"),
                                             " · Enter keeps · Esc leaves")
        self.add_class("-editing")
        self.focus()
        self.cursor_position = len(text)

    def _close(self, text: str | None) -> None:
        experience_id = self.experience_id
        self.experience_id = None
        self.remove_class("-editing")
        if experience_id is not None:
            self.post_message(self.Done(experience_id, text))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._close(event.value)

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "escape" and self.experience_id is not None:
            event.stop()
            event.prevent_default()
            self._close(None)

    def _on_blur(self, event: events.Blur) -> None:
        if self.experience_id is not None:
            self._close(None)


@dataclass(frozen=True)
class Experience:
    """One experience as the list shows it: a value, so rows compare cheaply."""

    id: str
    text: str
    #: where it came from (``context.experiences.describe_provenance``), "" when not known
    about: str = ""

    @property
    def prompt(self) -> Content:
        head = Content.assemble((inert_line(self.id), "bold $text-primary"), "  ",
                                inert_line(self.text))
        if not self.about:
            return head
        return Content.assemble(head, "\n", (inert_line(self.about), "$text-muted"))


class ExperienceList(SidebarSection):
    """Experiences (id, text and origin); arrows browse, Delete forgets after a y/n, e edits."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "delete",
            "forget",
            "Forget",
            id="experiences.forget",
            tooltip="Forget the highlighted experience (asks y/n first)",
        ),
        Binding(
            "e",
            "edit",
            "Edit",
            id="experiences.edit",
            tooltip="Correct the highlighted experience's text (its id and origin stay)",
        ),
    ]

    @dataclass
    class ForgetRequested(Message):
        """The person confirmed forgetting this experience."""

        experience_id: str

    @dataclass
    class EditRequested(Message):
        """The person corrected this experience's text."""

        experience_id: str
        text: str

    TITLE = "EXPERIENCES"
    EMPTY = "Nothing remembered yet. The agent keeps durable facts here."

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield _ForgetConfirm()
        yield _ExperienceEditor()

    def validate_rows(
        self, rows: Sequence[Experience | Mapping[str, Any]] | None
    ) -> tuple[Experience, ...] | None:
        return experience_rows(rows)

    @property
    def experiences(self) -> tuple[Experience, ...]:
        """The rows shown (none while loading)."""
        return self.rows or ()

    @property
    def highlighted_id(self) -> str | None:
        row = self.highlighted_row
        return None if row is None else row.id

    @property
    def confirming(self) -> str | None:
        """The experience id a y/n question is pending for, if any."""
        return self.query_one(_ForgetConfirm).experience_id

    def action_forget(self) -> None:
        experience_id = self.highlighted_id
        if experience_id is not None:
            self.query_one(_ForgetConfirm).ask(experience_id)
            self._keep_in_sight()

    @property
    def editing(self) -> str | None:
        """The experience id being edited, if any."""
        return self.query_one(_ExperienceEditor).experience_id

    def action_edit(self) -> None:
        experience_id = self.highlighted_id
        if experience_id is None:
            return
        text = next(row.text for row in self._shown if row.id == experience_id)
        self.query_one(_ExperienceEditor).edit(experience_id, text)
        self._keep_in_sight()

    def _keep_in_sight(self) -> None:
        """The question or the editor takes lines under the list: the row it is about
        stays in sight (at the list's end it went under them)."""
        self.call_after_refresh(self.option_list.scroll_to_highlight)

    @on(_ExperienceEditor.Done)
    def _edited(self, message: _ExperienceEditor.Done) -> None:
        message.stop()
        self.option_list.focus()
        shown = next((inert_line(row.text) for row in self._shown
                      if row.id == message.experience_id), None)
        text = (message.text or "").strip()
        if message.text is not None and text and text != shown:
            self.post_message(self.EditRequested(message.experience_id, text))

    @on(_ForgetConfirm.Answered)
    def _answered(self, message: _ForgetConfirm.Answered) -> None:
        message.stop()
        self.option_list.focus()
        if message.confirmed:
            self.post_message(self.ForgetRequested(message.experience_id))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()


def experience_rows(
    experiences: Sequence[Experience | Mapping[str, Any]] | None,
) -> tuple[Experience, ...] | None:
    """Accept what the store hands out; skip rows without an id rather than crash.

    ``None`` (a key being opened) stays ``None``.
    """
    if experiences is None:
        return None
    if not experiences:
        return ()
    # Imported here: the first frame shows the list before any experience arrives.
    from selfref_tui.context.experiences import describe_provenance

    rows: list[Experience] = []
    seen: set[str] = set()
    for exp in experiences:
        row = (
            exp
            if isinstance(exp, Experience)
            else Experience(str(exp.get("id") or ""), str(exp.get("text") or ""),
                            describe_provenance(dict(exp)))
        )
        if not row.id or row.id in seen:
            continue
        seen.add(row.id)
        rows.append(row)
    return tuple(rows)
