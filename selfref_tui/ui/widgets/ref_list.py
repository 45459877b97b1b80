"""Every ref of the current key, newest definition bright, superseded ones dim.

Choosing a row only posts :class:`RefList.RefChosen`; the app owns the
transcript and does the scrolling and highlighting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from selfref_tui.safety import inert_line


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


class RefList(Vertical):
    """Refs with their size; Enter or a click posts :class:`RefList.RefChosen`."""

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
        text-style: none;
    }
    RefList > OptionList > .option-list--option { padding: 0 1; }
    RefList > .empty {
        padding: 0 1;
        color: $text-disabled;
        text-style: italic;
    }
    """

    @dataclass
    class RefChosen(Message):
        """The person chose a ref; ``ref`` is the row's dict exactly as it was given."""

        ref_id: str
        ref: dict[str, Any] = field(default_factory=dict)

    EMPTY = "No refs yet. Answers wrapped in <ref> show up here."

    def __init__(
        self,
        refs: Sequence[Mapping[str, Any]] = (),
        *,
        loading: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._refs: list[dict[str, Any]] = [dict(ref) for ref in refs if ref.get("id")]
        #: no key's refs yet (start-up, key switch): say so, not "no refs"
        self.loading = loading

    def compose(self) -> ComposeResult:
        yield Static("", classes="section-title")
        yield Static(self.EMPTY, classes="empty")
        yield OptionList()

    def on_mount(self) -> None:
        self._render_list()

    @property
    def option_list(self) -> OptionList:
        return self.query_one(OptionList)

    @property
    def refs(self) -> list[dict[str, Any]]:
        return [dict(ref) for ref in self._refs]

    @property
    def highlighted_ref(self) -> dict[str, Any] | None:
        index = self.option_list.highlighted
        if index is None or not 0 <= index < len(self._refs):
            return None
        return dict(self._refs[index])

    def set_refs(self, refs: Sequence[Mapping[str, Any]]) -> None:
        """Rows in display order: {"id", "content" or "chars"/"lines", "superseded"}."""
        self._refs = [dict(ref) for ref in refs if ref.get("id")]
        self.loading = False
        if self.is_mounted:
            self._render_list()

    def show_loading(self) -> None:
        """A key is being opened: its refs come next."""
        self._refs = []
        self.loading = True
        if self.is_mounted:
            self._render_list()

    def highlight_ref(self, ref_id: str) -> None:
        """Follow the transcript's highlight: the current (last non-superseded) row wins."""
        matches = [i for i, ref in enumerate(self._refs) if ref["id"] == ref_id]
        if not matches:
            return
        current = [i for i in matches if not self._refs[i].get("superseded")]
        self.option_list.highlighted = (current or matches)[-1]

    def _render_list(self) -> None:
        option_list = self.option_list
        previous = self.highlighted_ref
        options = []
        for index, ref in enumerate(self._refs):
            label = f"ref:{inert_line(ref['id'], 64)}"
            chars, lines = ref_size(ref)
            superseded = bool(ref.get("superseded"))
            size = _size_label(chars, lines)
            if superseded:
                prompt = Content.assemble(
                    (label, "dim strike"), "  ", (f"{size} · old", "dim")
                )
            elif ref.get("open"):
                prompt = Content.assemble(
                    (label, "bold $primary"),
                    "  ",
                    (f"{size} · streaming", "dim italic"),
                )
            else:
                prompt = Content.assemble(
                    (label, "bold $primary"), "  ", (size, "dim")
                )
            options.append(Option(prompt, id=f"ref-row-{index}"))
        option_list.set_options(options)
        if previous is not None:
            self.highlight_ref(previous["id"])
        if option_list.highlighted is None and options:
            option_list.highlighted = 0
        count = len(self._refs)
        current = sum(1 for ref in self._refs if not ref.get("superseded"))
        figures = str(current) if current == count else f"{current} · {count - current} old"
        if self.loading:
            figures = "…"
        self.query_one(".section-title", Static).update(Content.assemble("REFS ", (figures, "dim")))
        empty = self.query_one(".empty", Static)
        empty.update("Loading…" if self.loading else self.EMPTY)
        empty.display = count == 0
        option_list.display = count > 0

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = event.option_index
        if 0 <= index < len(self._refs):
            ref = self._refs[index]
            self.post_message(self.RefChosen(ref["id"], dict(ref)))
