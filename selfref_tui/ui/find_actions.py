"""ctrl+f and ``/find``: the find bar and the transcript's marks, mixed into the app.

The bar (``widgets/find_bar.py``) asks, the transcript finds, marks and
scrolls (``Transcript.find``); this mixin carries one to the other and keeps
the count on the bar up to date. The bar is not in the first frame (its
``Input`` and rules cost ~75 M instructions there, 5 % of the start): ``boot``
mounts it just after, and ctrl+f or ``/find`` before that mounts it first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from selfref_tui.ui.widgets.chat_input import ChatInput
    from selfref_tui.ui.widgets.find_bar import FindBar
    from selfref_tui.ui.widgets.transcript import Transcript


class FindActions:
    """Find in the conversation on screen."""

    if TYPE_CHECKING:  # what the app provides
        transcript: Transcript
        chat_input: ChatInput

        def query(self, selector: str) -> Any: ...
        def query_one(self, selector: str) -> Any: ...

    @property
    def find_bar(self) -> FindBar | None:
        """The bar, or None before it is mounted (see the module doc)."""
        found = self.query("#find")
        return found.first() if found else None

    async def mount_find_bar(self) -> FindBar:
        """The bar, mounted above the input if it is not yet (``boot`` calls it)."""
        bar = self.find_bar
        if bar is None:
            from selfref_tui.ui.widgets.find_bar import FindBar

            bar = FindBar(id="find")
            await self.query_one("#chat").mount(bar, before="#input")
        return bar

    async def action_find(self) -> None:
        """ctrl+f: the bar, with what it held last (found again at once)."""
        bar = await self.mount_find_bar()
        bar.open()
        if bar.query_text:
            bar.post_message(bar.Changed(bar.query_text))

    async def find_text(self, text: str) -> None:
        """``/find TEXT``: the bar holding ``text``, at its newest occurrence."""
        bar = await self.mount_find_bar()
        changed = bar.query_text != text
        bar.open(text)
        if not changed:  # the field did not change: nothing else finds it again
            await self._find(text, 0)

    def close_find(self) -> None:
        """The bar away and the marks with it (another conversation opens, say)."""
        bar = self.find_bar
        if bar is not None:
            if bar.display:
                bar.display = False
                self.chat_input.focus()
            bar.count = ""
        self.transcript.find_clear()

    async def _find(self, text: str, step: int) -> None:
        position, count = await self.transcript.find(text, step)
        bar = self.find_bar
        if bar is None:  # (only the bar asks, so it is there)
            return
        bar.count = (
            "" if not text else f"{position} of {count}" if count else "no match"
        )

    async def on_find_bar_changed(self, message: FindBar.Changed) -> None:
        await self._find(message.query, 0)

    async def on_find_bar_step(self, message: FindBar.Step) -> None:
        await self._find(message.query, message.step)

    def on_find_bar_closed(self, message: FindBar.Closed) -> None:
        self.close_find()
        self.chat_input.focus()
