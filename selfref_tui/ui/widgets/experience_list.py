"""The agent's durable experiences, browsable and forgettable by the person.

Forgetting is destructive and the Delete key is easy to hit, so it asks a
one-key question inline (no modal: the person keeps their place in the list).
The widget never touches the store: it posts :class:`ExperienceList.ForgetRequested`
and the app routes it through the runtime as an ``ExperienceForgetMutation``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from selfref_tui.safety import inert_line


class _ForgetConfirm(Static, can_focus=True):
    """Takes exactly one key: ``y`` confirms, anything else cancels."""

    DEFAULT_CSS = """
    _ForgetConfirm {
        display: none;
        height: auto;
        padding: 0 1;
        background: $error 20%;
        color: $text;
    }
    _ForgetConfirm.-asking { display: block; }
    """

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
                ("y", "bold $error"),
                " yes · any other key cancels",
            )
        )
        self.add_class("-asking")
        self.focus()

    def _close(self, confirmed: bool) -> None:
        experience_id = self.experience_id
        self.experience_id = None
        self.remove_class("-asking")
        owner = self.parent
        if isinstance(owner, ExperienceList):
            owner._answered(experience_id, confirmed)

    async def _on_key(self, event: events.Key) -> None:
        # Swallow the key so it cannot also trigger a binding further up.
        event.stop()
        event.prevent_default()
        if self.experience_id is not None:
            self._close(event.key == "y")

    def _on_blur(self, event: events.Blur) -> None:
        if self.experience_id is not None:
            self._close(False)


class ExperienceList(Vertical):
    """Experiences (id and text); arrows browse, Delete forgets after a y/n."""

    DEFAULT_CSS = """
    ExperienceList {
        height: auto;
        max-height: 50%;
    }
    ExperienceList > .section-title {
        padding: 0 1;
        color: $text-muted;
        text-style: bold;
    }
    ExperienceList > OptionList {
        height: auto;
        max-height: 100%;
        border: none;
        padding: 0;
        background: transparent;
        scrollbar-size-vertical: 1;
    }
    ExperienceList > OptionList:focus { border: none; background-tint: transparent; }
    ExperienceList > OptionList > .option-list--option-highlighted {
        background: $boost;
        text-style: none;
    }
    ExperienceList > OptionList:focus > .option-list--option-highlighted {
        background: $primary 30%;
        text-style: none;
    }
    ExperienceList > OptionList > .option-list--option { padding: 0 1; }
    ExperienceList > .empty {
        padding: 0 1;
        color: $text-disabled;
        text-style: italic;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "delete",
            "forget",
            "Forget",
            id="experiences.forget",
            tooltip="Forget the highlighted experience (asks y/n first)",
        ),
    ]

    @dataclass
    class ForgetRequested(Message):
        """The person confirmed forgetting this experience."""

        experience_id: str

    EMPTY = "Nothing remembered yet. The agent keeps durable facts here."

    def __init__(
        self,
        experiences: Sequence[Mapping[str, Any]] = (),
        *,
        loading: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._experiences: list[dict[str, str]] = _clean(experiences)
        #: no key's experiences yet (start-up, key switch): say so, not "nothing remembered"
        self.loading = loading

    def compose(self) -> ComposeResult:
        yield Static("", classes="section-title")
        yield Static(self.EMPTY, classes="empty")
        yield OptionList()
        yield _ForgetConfirm()

    def on_mount(self) -> None:
        self._render_list(keep=None)

    @property
    def option_list(self) -> OptionList:
        return self.query_one(OptionList)

    @property
    def experiences(self) -> list[dict[str, str]]:
        return [dict(exp) for exp in self._experiences]

    @property
    def highlighted_id(self) -> str | None:
        option = self.option_list.highlighted_option
        return option.id if option is not None else None

    @property
    def confirming(self) -> str | None:
        """The experience id a y/n question is pending for, if any."""
        return self.query_one(_ForgetConfirm).experience_id

    def set_experiences(self, experiences: Sequence[Mapping[str, Any]]) -> None:
        """Replace the rows, keeping the highlight on the same id (or the same place)."""
        self._experiences = _clean(experiences)
        self.loading = False
        if self.is_mounted:
            self._render_list(keep=self.option_list.highlighted)

    def show_loading(self) -> None:
        """A key is being opened: its rows come next."""
        self._experiences = []
        self.loading = True
        if self.is_mounted:
            self._render_list(keep=None)

    def action_forget(self) -> None:
        experience_id = self.highlighted_id
        if experience_id is not None:
            self.query_one(_ForgetConfirm).ask(experience_id)

    def _answered(self, experience_id: str | None, confirmed: bool) -> None:
        self.option_list.focus()
        if confirmed and experience_id is not None:
            self.post_message(self.ForgetRequested(experience_id))

    def _render_list(self, keep: int | None) -> None:
        option_list = self.option_list
        previous_id = self.highlighted_id
        option_list.set_options(
            Option(
                Content.assemble(
                    (inert_line(exp["id"]), "bold $primary"), "  ", inert_line(exp["text"])
                ),
                id=exp["id"],
            )
            for exp in self._experiences
        )
        count = len(self._experiences)
        ids = [exp["id"] for exp in self._experiences]
        if previous_id in ids:
            option_list.highlighted = ids.index(previous_id)
        elif count:
            option_list.highlighted = min(keep or 0, count - 1)
        self.query_one(".section-title", Static).update(
            Content.assemble("EXPERIENCES ", ("…" if self.loading else str(count), "dim"))
        )
        empty = self.query_one(".empty", Static)
        empty.update("Loading…" if self.loading else self.EMPTY)
        empty.display = count == 0
        option_list.display = count > 0

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()


def _clean(experiences: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Accept what the store hands out; skip rows without an id rather than crash."""
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    for exp in experiences:
        exp_id = str(exp.get("id") or "")
        if not exp_id or exp_id in seen:
            continue
        seen.add(exp_id)
        rows.append({"id": exp_id, "text": str(exp.get("text") or "")})
    return rows
