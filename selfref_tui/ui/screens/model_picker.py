"""``/model`` without a name: the server's models to pick from, or a name to type.

The list comes from the server's ``/v1/models`` (the app asks, then opens
this); a server that does not answer leaves the list empty and the field
takes any name. Model ids are the server's text: shown through ``safety``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from selfref_tui.safety import content, inert_line
from selfref_tui.ui.screens.filtered_list import FilteredListScreen, FilterField, filter_by_name

#: row ids: a listed model, and the row that uses the typed name as it is
LISTED, TYPED = "model:", "typed:"


def _name(option_id: str) -> str:
    return option_id.split(":", 1)[1]


def filter_models(models: Sequence[str], query: str) -> list[str]:
    """Case-insensitive substring match; names starting with the query first."""
    return filter_by_name(models, query, str)


class ModelPicker(FilteredListScreen):
    """Dismisses with the chosen or typed model name, or None (Esc)."""

    DEFAULT_CSS = """
    ModelPicker > #dialog { max-width: 100%; }
    /* as the conversation switcher's: what the dialog has left under its field; 14 rows ran
       past it at 80x24, the hint and the highlighted row out of sight */
    ModelPicker OptionList { max-height: 28vh; }
    ModelPicker OptionList > .option-list--option-highlighted {
        background: $primary 30%; text-style: none;
    }
    ModelPicker #note { color: $text-muted; padding: 0 1; height: auto; }
    /* as the conversation switcher: the rows one column in, a line before the keys
       (the rows stood against the border and the keys right under the last one) */
    ModelPicker OptionList > .option-list--option { padding: 0 1; }
    ModelPicker #hint { margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="model.cancel"),
        Binding("down", "move(1)", "Next", show=False, id="model.down"),
        Binding("up", "move(-1)", "Previous", show=False, id="model.up"),
    ]

    def __init__(self, models: Sequence[str] | None, current: str) -> None:
        """``models`` None: the server did not answer (a name can still be typed)."""
        super().__init__()
        self.models = list(models or [])
        self.answered = models is not None
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "Model for this conversation"
            yield FilterField(placeholder="filter, or type a model name", id="filter")
            yield OptionList()
            if not self.answered:
                note = "The server did not list its models; type the name of one."
            elif not self.models:
                note = "The server lists no models; type the name of one."
            else:
                note = ""
            shown = Static(note, id="note")
            shown.display = bool(note)
            yield shown
            yield Static(
                Content.assemble(
                    ("↑↓", "bold $text-primary"), " choose  ", ("enter", "bold $text-primary"),
                    " use  ", ("esc", "bold $text-primary"), " cancel",
                ),
                id="hint",
            )

    @property
    def shown(self) -> list[str]:
        """The rows listed, in order: ``model:NAME``, and ``typed:NAME`` for a typed one."""
        return self.row_ids

    def _refilter(self, query: str) -> None:
        self.listed_for = query
        options = [
            Option(
                Content.assemble(
                    ("● " if name == self.current else "  ", "$text-primary"),
                    content(inert_line(name, 64), line=True),
                ),
                id=LISTED + name,
            )
            for name in filter_models(self.models, query)
        ]
        typed = query.strip()
        if typed and typed not in self.models:
            # Last, so Enter after a partial filter picks the listed match.
            options.append(Option(
                Content.assemble(("  use ", "$text-muted"),
                                 content(inert_line(typed, 60), "bold $text-primary", line=True)),
                id=TYPED + typed,
            ))
        self._show(options, select=None if query else LISTED + self.current)

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self._refilter(event.value)

    def submit(self, value: str) -> None:
        option = self.option_list.highlighted_option
        if option is not None and option.id and self.option_list.display:
            self.dismiss(_name(option.id))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.dismiss(_name(event.option.id))

    def action_cancel(self) -> None:
        self.dismiss(None)
