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
import os
import signal
import threading
from typing import TYPE_CHECKING, Any

from textual import work

if TYPE_CHECKING:
    from textual.screen import Screen

    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.ui.widgets.chat_input import ChatInput


#: seconds a SIGHUP or SIGTERM leaves the app to save and quit before it ends anyway
SIGNAL_GRACE_S = 10.0


class QuitActions:
    """The quit key, and the question an unsent draft raises."""

    #: the SIGHUP or SIGTERM quitting the app (:meth:`quit_on_hangup`); 0: none
    _signalled = 0
    _signal_quit: asyncio.Future[None] | None = None

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

    def quit_on_hangup(self) -> None:
        """SIGHUP and SIGTERM quit as the quit key does (no question: nobody is there to
        answer it), so the answer streaming is kept.

        Python-level handlers, not the loop's: they run even while the loop is stuck in
        Textual's teardown on a closed terminal (its writer thread's queue can block it
        for good). Whatever happens, the process ends within :data:`SIGNAL_GRACE_S`, as
        the signals' default action ended it at once.
        """
        loop = asyncio.get_running_loop()

        def received(signum: int, _frame: Any) -> None:
            self._signal_received(loop, signum)

        for signum in (getattr(signal, "SIGHUP", None), signal.SIGTERM):
            if signum is None:
                continue
            try:
                signal.signal(signum, received)
            except (ValueError, OSError):  # not the main thread, or not this platform
                return

    def _signal_received(self, loop: asyncio.AbstractEventLoop, signum: int) -> None:
        # once: a closed terminal's SIGHUP comes from the kernel and again from the shell,
        # and a second quit must not start another shutdown
        if self._signalled:
            return
        self._signalled = signum
        watchdog = threading.Timer(SIGNAL_GRACE_S, os._exit, (128 + signum,))
        watchdog.daemon = True
        watchdog.start()
        loop.call_soon_threadsafe(self._start_signal_quit, signum)

    def _start_signal_quit(self, signum: int) -> None:
        self._signal_quit = asyncio.ensure_future(self._quit_for_signal(signum))

    async def _quit_for_signal(self, signum: int) -> None:
        try:
            await self.shutdown_runtime()
        finally:
            self.after_signal_shutdown()
            self.exit(128 + signum)  # as a shell reports a process a signal ended

    def after_signal_shutdown(self) -> None:
        """After a SIGHUP the terminal is gone: nothing to give back to it, and Textual's
        teardown writes to it (and can wait for ever): the process ends here, its
        conversation saved and its locks released."""
        if self._signalled and self._signalled == getattr(signal, "SIGHUP", None):
            os._exit(128 + self._signalled)

    async def shutdown_runtime(self) -> None:
        """Stop the turn (its abort patches are committed), close HTTP, release locks."""
        await self.controller.aclose()
