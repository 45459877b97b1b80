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
from selfref_tui.selfref.export_path import expand_home, export_target, names_folder

__all__ = ["ExportDialog", "expand_home", "path_note"]


class ExportDialog(ModalScreen[str | None]):
    """Enter dismisses with the path (``~`` expanded); Esc with None."""

    DEFAULT_CSS = """
    ExportDialog { align: center middle; background: $background 60%; }
    ExportDialog > #dialog {
        width: 72;
        max-width: 100%;
        height: auto;
        padding: 1 2;
        border: round $primary;
        border-title-color: $text-primary;
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
    ExportDialog #error { color: $text-error; height: auto; }
    ExportDialog #note { color: $text-muted; height: auto; display: none; }
    ExportDialog #hint { color: $text-muted; margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="export.cancel"),
    ]

    def __init__(
        self,
        ref_id: str,
        suggested_path: str,
        *,
        preview: str = "",
        error: str = "",
        suggested_name: str = "",
        title: str = "",
    ) -> None:
        """``error`` is shown under the path: the app re-opens the dialog with the
        person's path and what went wrong, so a failed write loses nothing typed.
        ``title`` names what is exported when it is not a ref (an image)."""
        super().__init__()
        self.ref_id = ref_id
        self.title_text = title or f"Export ref:{ref_id}"
        self.suggested_path = suggested_path
        self.preview = preview
        self.error = error
        self.suggested_name = suggested_name or Path(suggested_path).name

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = content(self.title_text, line=True)
            if self.preview:
                lines = self.preview.splitlines()
                shown = "\n".join(lines[:5]) + ("\n…" if len(lines) > 5 else "")
                yield Static(content(shown), id="preview")
            yield Input(self.suggested_path, placeholder="path/to/file", id="path")
            yield Static(content(self.error), id="error")
            yield Static("", id="note")
            yield Static(
                Content.assemble(
                    ("enter", "bold $text-primary"), " write   ",
                    ("esc", "bold $text-primary"), " cancel"
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
        if event.value != self.suggested_path:  # the first Changed is the prefill
            self.query_one("#error", Static).update("")
        note = path_note(event.value, self.suggested_name)
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
            path = export_target(value, self.suggested_name)
        except ValueError as exc:
            error.update(content(str(exc)))
            return
        self.dismiss(str(path))

    def action_cancel(self) -> None:
        self.dismiss(None)


def path_note(value: str, suggested_name: str = "") -> str:
    """What writing to ``value`` means: a new file, a file to ask about, new folders."""
    value = value.strip()
    if not value:
        return ""
    try:
        path = export_target(value, suggested_name) if suggested_name else expand_home(value)
        if suggested_name and names_folder(value) and not path.is_file():
            inside = f"Writes {suggested_name} in this folder"
            missing = [p for p in reversed(path.parents) if not p.exists()]
            return inside + (f" (creates {missing[0]})." if missing else ".")
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
