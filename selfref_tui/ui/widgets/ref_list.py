"""Every ref of the current key, newest definition bright, superseded ones dim.

Choosing a row only posts :class:`RefList.RefChosen`; the app owns the
transcript and does the scrolling and highlighting. The rows flow down as a
reactive (``rows``), bound from the sidebar's ``refs``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.reactive import var
from textual.widgets import OptionList, Static

from selfref_tui.safety import inert_line
from selfref_tui.ui.widgets.option_rows import sync_options


def ref_size(ref: Mapping[str, Any]) -> tuple[int, int]:
    """(chars, lines) from explicit figures or from the ref's content."""
    content = ref.get("content")
    chars = ref.get("chars")
    lines = ref.get("lines")
    if chars is None:
        chars = len(content) if isinstance(content, str) else 0
    if lines is None:
        lines = (content.count("\n") + 1) if isinstance(content, str) and content else 0
    return int(chars), int(lines)


def _size_label(chars: int, lines: int) -> str:
    shown = f"{chars / 1000:.1f}k" if chars >= 1000 else str(chars)
    return f"{lines} ln · {shown} ch"


@dataclass(frozen=True)
class RefRow:
    """One definition of a ref as the list shows it: a value, so rows compare cheaply."""

    id: str
    chars: int = 0
    lines: int = 0
    #: a later definition of the same id exists
    superseded: bool = False
    #: still streaming
    open: bool = False

    @classmethod
    def of(cls, ref: RefRow | Mapping[str, Any]) -> RefRow:
        """A row from the store's dict: {"id", "content" or "chars"/"lines", "superseded"}."""
        if isinstance(ref, RefRow):
            return ref
        chars, lines = ref_size(ref)
        return cls(
            str(ref["id"]), chars, lines, bool(ref.get("superseded")), bool(ref.get("open"))
        )

    @property
    def prompt(self) -> Content:
        label = f"ref:{inert_line(self.id, 64)}"
        size = _size_label(self.chars, self.lines)
        if self.superseded:
            # Short enough not to wrap where a current row does not: its size is the
            # current definition's business ("… 204 ch ·" / "old" wrapped at 40 columns).
            return Content.assemble((label, "strike $text-muted"), "  ", ("old", "$text-muted"))
        if self.open:
            return Content.assemble(
                (label, "bold $text-primary"), "  ", (f"{size} · streaming", "italic $text-muted")
            )
        return Content.assemble((label, "bold $text-primary"), "  ", (size, "$text-muted"))


def ref_rows(refs: Sequence[RefRow | Mapping[str, Any]] | None) -> tuple[RefRow, ...] | None:
    """Rows in display order: the current definitions, then the superseded ones (each
    group in the order given); ``None`` (a key being opened) stays ``None``."""
    if refs is None:
        return None
    rows = [RefRow.of(ref) for ref in refs if isinstance(ref, RefRow) or ref.get("id")]
    # A ref defined again keeps the place its id first had (so a new definition changes
    # one row and adds one, instead of moving every row after it); the old definitions
    # go below every current one.
    first: dict[str, int] = {}
    for index, row in enumerate(rows):
        first.setdefault(row.id, index)
    current = sorted((row for row in rows if not row.superseded), key=lambda row: first[row.id])
    return tuple(current) + tuple(row for row in rows if row.superseded)


class RefList(Vertical):
    """Refs with their size; Enter or a click posts :class:`RefList.RefChosen`.

    ``rows`` is the state: a tuple of :class:`RefRow`, or ``None`` while a key is
    being opened ("Loading…", not "no refs"). A new value updates only the rows
    that changed, so a list of 1,000 refs is not rebuilt for each new ref.
    """

    DEFAULT_CSS = """
    RefList {
        height: auto;
        max-height: 50%;
    }
    RefList > .section-title {
        padding: 0 1;
        color: $text-muted;
        text-style: bold;
    }
    RefList > OptionList {
        height: auto;
        max-height: 100%;
        border: none;
        padding: 0;
        background: transparent;
        scrollbar-size-vertical: 1;
    }
    RefList > OptionList:focus { border: none; background-tint: transparent; }
    RefList > OptionList > .option-list--option-highlighted {
        background: $boost;
        text-style: none;
    }
    RefList > OptionList:focus > .option-list--option-highlighted {
        background: $primary 30%;
        color: $text;  /* the theme's text can be too faint on this tint (solarized-dark) */
        text-style: none;
    }
    RefList > OptionList > .option-list--option { padding: 0 1; }
    RefList > .empty {
        padding: 0 1;
        color: $text-muted;
        text-style: italic;
    }
    """

    @dataclass
    class RefChosen(Message):
        """The person chose a ref (``ref``: its row)."""

        ref_id: str
        ref: RefRow

    EMPTY = "No refs yet. Answers wrapped in <ref> show up here."

    #: the rows, or None while a key is being opened
    rows: var[tuple[RefRow, ...] | None] = var(())

    def __init__(
        self,
        refs: Sequence[RefRow | Mapping[str, Any]] | None = (),
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.set_reactive(RefList.rows, ref_rows(refs))
        #: the rows the option list holds now (what the next update is compared with)
        self._shown: tuple[RefRow, ...] = ()
        self._title = ""

    def compose(self) -> ComposeResult:
        yield Static("", classes="section-title")
        yield Static(self.EMPTY, classes="empty")
        yield OptionList()

    def on_mount(self) -> None:
        self._show(self.rows)

    def validate_rows(
        self, rows: Sequence[RefRow | Mapping[str, Any]] | None
    ) -> tuple[RefRow, ...] | None:
        return ref_rows(rows)

    def watch_rows(self, rows: tuple[RefRow, ...] | None) -> None:
        if self.is_mounted:
            self._show(rows)

    @property
    def option_list(self) -> OptionList:
        return self.query_one(OptionList)

    @property
    def refs(self) -> tuple[RefRow, ...]:
        """The rows shown (none while loading)."""
        return self.rows or ()

    @property
    def highlighted_ref(self) -> RefRow | None:
        index = self.option_list.highlighted
        if index is None or not 0 <= index < len(self._shown):
            return None
        return self._shown[index]

    def highlight_ref(self, ref_id: str) -> None:
        """Follow the transcript's highlight: the current (last non-superseded) row wins."""
        matches = [i for i, ref in enumerate(self._shown) if ref.id == ref_id]
        if not matches:
            return
        current = [i for i in matches if not self._shown[i].superseded]
        self.option_list.highlighted = (current or matches)[-1]

    def _show(self, rows: tuple[RefRow, ...] | None) -> None:
        option_list = self.option_list
        loading = rows is None
        rows = rows or ()
        previous = self.highlighted_ref
        sync_options(option_list, self._shown, rows, lambda row: row.prompt)
        self._shown = rows
        if previous is not None:
            self.highlight_ref(previous.id)
        if option_list.highlighted is None and rows:
            option_list.highlighted = 0
        count = len(rows)
        current = sum(1 for ref in rows if not ref.superseded)
        figures = str(current) if current == count else f"{current} · {count - current} old"
        if loading:
            figures = "…"
        if figures != self._title:
            self._title = figures
            self.query_one(".section-title", Static).update(
                Content.assemble("REFS ", (figures, "$text-muted"))
            )
        empty = self.query_one(".empty", Static)
        if count == 0:
            empty.update("Loading…" if loading else self.EMPTY)
        empty.display = count == 0
        option_list.display = count > 0

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = event.option_index
        if 0 <= index < len(self._shown):
            ref = self._shown[index]
            self.post_message(self.RefChosen(ref.id, ref))
