"""Quitting without losing a draft: mixed into the app.

The quit key is a priority binding, so it acts before keys typed just ahead of
it reach the input; the draft is looked at from the input's own queue once it
has taken them, and an unsent one holds the quit behind a question (the quit
key again answers yes). Quitting stops the turn, whose abort patches are
committed, and releases the key's lock.

The terminal closed under the app (SIGHUP: its window or tab closed, an ssh link
dropped) or a polite kill (SIGTERM) quits the same way, without the question: the
answer streaming keeps what arrived, marked interrupted, as Esc keeps it, where the
default action of either signal ended the process with it lost.
"""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING, Any

from textual import work

if TYPE_CHECKING:
    from textual.screen import Screen

    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.ui.widgets.chat_input import ChatInput


class QuitActions:
    """The quit key, and the question an unsent draft raises."""

    #: a SIGHUP or SIGTERM is quitting the app (:meth:`quit_on_hangup`)
    _signalled = False

    if TYPE_CHECKING:  # what the app provides
        controller: ChatController
        chat_input: ChatInput
        screen: Screen[Any]
        #: the question an unsent draft raises on quit, while it is on screen
        _quit_prompt: Screen[bool] | None

        def exit(self, result: Any = None) -> None: ...
        def run_worker(self, work: Any, **kwargs: Any) -> Any: ...
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

    def quit_on_hangup(self) -> None:
        """SIGHUP and SIGTERM quit as the quit key does (no question: nobody is there to
        answer it), so the answer streaming is kept; where the loop takes no signal
        handlers (another thread, another platform) their default stays."""
        loop = asyncio.get_running_loop()
        for signum in (getattr(signal, "SIGHUP", None), signal.SIGTERM):
            if signum is None:
                continue
            try:
                loop.add_signal_handler(signum, self._hung_up, signum)
            except (NotImplementedError, RuntimeError, ValueError):
                return

    def _hung_up(self, signum: int) -> None:
        # once: a closed terminal's SIGHUP comes from the kernel and again from the shell,
        # and a second quit must not cancel the first one's shutdown half-way
        if self._signalled:
            return
        self._signalled = True
        self.run_worker(self._quit_for_signal(signum), group="hangup")

    async def _quit_for_signal(self, signum: int) -> None:
        try:
            await self.shutdown_runtime()
        finally:
            self.exit(128 + signum)  # as a shell reports a process a signal ended

    async def shutdown_runtime(self) -> None:
        """Stop the turn (its abort patches are committed), close HTTP, release locks."""
        await self.controller.aclose()
