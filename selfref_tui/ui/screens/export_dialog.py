"""Where to write a ref: a prefilled path the person can edit."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from selfref_tui.safety import content


class ExportDialog(ModalScreen[str | None]):
    """Enter dismisses with the path (``~`` expanded); Esc with None."""

    DEFAULT_CSS = """
    ExportDialog { align: center middle; background: $background 60%; }
    ExportDialog > #dialog {
        width: 72;
        height: auto;
        padding: 1 2;
        border: round $primary;
        border-title-color: $primary;
        background: $surface;
    }
    ExportDialog #preview {
        color: $text-muted;
        max-height: 6;
        margin-bottom: 1;
        padding: 0 1;
        background: $background 50%;
    }
    ExportDialog Input { margin: 0; }
    ExportDialog #error { color: $error; height: auto; }
    ExportDialog #note { color: $text-muted; height: auto; display: none; }
    ExportDialog #hint { color: $text-muted; margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="export.cancel"),
    ]

    def __init__(self, ref_id: str, suggested_path: str, *, preview: str = "") -> None:
        super().__init__()
        self.ref_id = ref_id
        self.suggested_path = suggested_path
        self.preview = preview

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = content(f"Export ref:{self.ref_id}", line=True)
            if self.preview:
                lines = self.preview.splitlines()
                shown = "\n".join(lines[:5]) + ("\n…" if len(lines) > 5 else "")
                yield Static(content(shown), id="preview")
            yield Input(self.suggested_path, placeholder="path/to/file", id="path")
            yield Static("", id="error")
            yield Static("", id="note")
            yield Static(
                Content.assemble(
                    ("enter", "bold $primary"), " write   ", ("esc", "bold $primary"), " cancel"
                ),
                id="hint",
            )

    def on_mount(self) -> None:
        path_input = self.query_one(Input)
        path_input.cursor_blink = False
        path_input.focus()
        path_input.action_end()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        """Say what Enter will do to the disk before it does it."""
        event.stop()
        self.query_one("#error", Static).update("")
        note = path_note(event.value)
        shown = self.query_one("#note", Static)
        shown.update(content(note))
        shown.display = bool(note)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        error = self.query_one("#error", Static)
        if not value:
            error.update("Type a file path, or press Esc to cancel.")
            return
        try:
            path = expand_home(value)
        except ValueError as exc:
            error.update(content(str(exc)))
            return
        if path.is_dir():
            error.update("That is a folder: add a file name to the path.")
            return
        self.dismiss(str(path))

    def action_cancel(self) -> None:
        self.dismiss(None)


def expand_home(value: str) -> Path:
    """``value`` with ``~`` or ``~user`` expanded; ValueError names a user the machine lacks."""
    try:
        return Path(value).expanduser()
    except RuntimeError:  # what pathlib raises for ~name of an unknown user
        raise ValueError(
            f"No home folder for {value.split('/')[0]!r}: write the path out."
        ) from None


def path_note(value: str) -> str:
    """What writing to ``value`` means: a new file, a file to ask about, new folders."""
    value = value.strip()
    if not value:
        return ""
    try:
        path = expand_home(value)
        if path.is_file():
            return "This file exists: you will be asked to overwrite it or append."
        missing = [p for p in reversed(path.parents) if not p.exists()]
    except (OSError, ValueError):  # unreadable, or ~name of an unknown user
        return ""
    if len(missing) == 1:
        return f"Creates the folder {missing[0]}."
    if missing:
        return f"Creates {len(missing)} folders: {missing[0]} down to {missing[-1]}."
    return ""
