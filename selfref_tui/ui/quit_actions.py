"""Quitting without losing a draft: mixed into the app.

The quit key is a priority binding, so it acts before keys typed just ahead of
it reach the input; the draft is looked at from the input's own queue once it
has taken them, and an unsent one holds the quit behind a question (the quit
key again answers yes). Quitting stops the turn, whose abort patches are
committed, and releases the key's lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work

if TYPE_CHECKING:
    from textual.screen import Screen

    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.ui.widgets.chat_input import ChatInput


class QuitActions:
    """The quit key, and the question an unsent draft raises."""

    if TYPE_CHECKING:  # what the app provides
        controller: ChatController
        chat_input: ChatInput
        screen: Screen[Any]
        #: the question an unsent draft raises on quit, while it is on screen
        _quit_prompt: Screen[bool] | None

        def exit(self, result: Any = None) -> None: ...
        def _key_label(self, binding_id: str | None, default: str) -> str: ...
        async def push_screen_wait(self, screen: Any) -> Any: ...

    async def action_quit(self) -> None:
        prompt = self._quit_prompt
        if prompt is not None and self.screen is prompt:
            prompt.dismiss(True)  # the quit key again, on its own question: yes
            return
        # The quit key is a priority binding: it acts before keys typed just ahead of it
        # (a fast burst) reach the input. Look at the draft from the input's own queue,
        # once it has taken them.
        self.chat_input.call_later(self._quit_unless_draft, prompt is None)

    async def _quit_unless_draft(self, may_ask: bool) -> None:
        if may_ask and self._quit_prompt is None and self.chat_input.text.strip():
            self._confirm_quit()
            return
        await self.shutdown_runtime()
        self.exit(0)

    @work(exclusive=True, group="quit")
    async def _confirm_quit(self) -> None:
        """Nothing typed is lost without asking: an unsent draft holds the quit."""
        from selfref_tui.ui.screens.confirm import ConfirmScreen

        quit_key = self._key_label("quit", "ctrl+q").split(",")[0].strip()
        self._quit_prompt = ConfirmScreen(
            "Quit? The message in the input has not been sent and will be lost.",
            title="Unsent message",
            yes_keys=("y", quit_key),
        )
        try:
            quit_now = await self.push_screen_wait(self._quit_prompt)
        finally:
            self._quit_prompt = None
        if quit_now:
            await self.shutdown_runtime()
            self.exit(0)
        else:
            self.chat_input.focus()

    async def shutdown_runtime(self) -> None:
        """Stop the turn (its abort patches are committed), close HTTP, release locks."""
        await self.controller.aclose()
