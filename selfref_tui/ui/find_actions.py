"""ctrl+f and ``/find``: the find bar and the transcript's marks, mixed into the app.

The bar (``widgets/find_bar.py``) asks, the transcript finds, marks and
scrolls (``Transcript.find``); this mixin carries one to the other and keeps
the count on the bar up to date.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from selfref_tui.ui.widgets.find_bar import FindBar

if TYPE_CHECKING:
    from selfref_tui.ui.widgets.chat_input import ChatInput
    from selfref_tui.ui.widgets.transcript import Transcript


class FindActions:
    """Find in the conversation on screen."""

    if TYPE_CHECKING:  # what the app provides
        transcript: Transcript
        chat_input: ChatInput

        def query_one(self, selector: type[FindBar]) -> FindBar: ...

    @property
    def find_bar(self) -> FindBar:
        return self.query_one(FindBar)

    def action_find(self) -> None:
        """ctrl+f: the bar, with what it held last (found again at once)."""
        bar = self.find_bar
        bar.open()
        if bar.query_text:
            bar.post_message(FindBar.Changed(bar.query_text))

    async def find_text(self, text: str) -> None:
        """``/find TEXT``: the bar holding ``text``, at its newest occurrence."""
        bar = self.find_bar
        changed = bar.query_text != text
        bar.open(text)
        if not changed:  # the field did not change: nothing else finds it again
            await self._find(text, 0)

    def close_find(self) -> None:
        """The bar away and the marks with it (another conversation opens, say)."""
        bar = self.find_bar
        if bar.display:
            bar.display = False
            self.chat_input.focus()
        self.transcript.find_clear()
        bar.count = ""

    async def _find(self, text: str, step: int) -> None:
        position, count = await self.transcript.find(text, step)
        self.find_bar.count = (
            "" if not text else f"{position} of {count}" if count else "no match"
        )

    async def on_find_bar_changed(self, message: FindBar.Changed) -> None:
        await self._find(message.query, 0)

    async def on_find_bar_step(self, message: FindBar.Step) -> None:
        await self._find(message.query, message.step)

    def on_find_bar_closed(self, message: FindBar.Closed) -> None:
        self.close_find()
        self.chat_input.focus()
