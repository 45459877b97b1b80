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
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList

from selfref_tui.safety import inert_line
from selfref_tui.ui.widgets.sidebar_section import SidebarSection


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


class RefList(SidebarSection):
    """Refs with their size; Enter or a click posts :class:`RefList.RefChosen`."""

    @dataclass
    class RefChosen(Message):
        """The person chose a ref (``ref``: its row)."""

        ref_id: str
        ref: RefRow

    TITLE = "REFS"
    EMPTY = "No refs yet. Answers wrapped in <ref> show up here."

    def validate_rows(
        self, rows: Sequence[RefRow | Mapping[str, Any]] | None
    ) -> tuple[RefRow, ...] | None:
        return ref_rows(rows)

    @property
    def refs(self) -> tuple[RefRow, ...]:
        """The rows shown (none while loading)."""
        return self.rows or ()

    @property
    def highlighted_ref(self) -> RefRow | None:
        return self.highlighted_row

    def highlight_ref(self, ref_id: str) -> None:
        """Follow the transcript's highlight: the current (last non-superseded) row wins."""
        matches = [i for i, ref in enumerate(self._shown) if ref.id == ref_id]
        if not matches:
            return
        current = [i for i in matches if not self._shown[i].superseded]
        self.option_list.highlighted = (current or matches)[-1]

    def rehighlight(self, previous: RefRow | None, index: int | None) -> None:
        if previous is not None:
            self.highlight_ref(previous.id)
        if self.option_list.highlighted is None and self._shown:
            self.option_list.highlighted = 0

    def figures(self, rows: tuple[RefRow, ...]) -> str:
        current = sum(1 for ref in rows if not ref.superseded)
        return str(current) if current == len(rows) else f"{current} · {len(rows) - current} old"

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = event.option_index
        if 0 <= index < len(self._shown):
            ref = self._shown[index]
            self.post_message(self.RefChosen(ref.id, ref))
