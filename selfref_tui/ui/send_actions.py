"""What the person sends and stops: messages, slash commands, retry and Esc.

A mixin of :class:`~selfref_tui.ui.app.SelfRefApp`. A message goes through the
controller and then on screen (queued while a turn runs); what was typed during
start-up goes out once the key is open, or back into the input when the key cannot
take it; ``/command`` runs from the table (``command_handlers.py``); F5 retries a
failed turn or regenerates the last answer; Esc stops a turn (what was queued comes
back into the input), puts the fork panel away, or twice starts a rewind. Apart from
the app because these are what the person *does* with the conversation; the app
composes the screen and routes messages here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from selfref_tui.agent.chat.refusals import Refused
from selfref_tui.ui.lazy_import import LazyModule
from selfref_tui.ui.steer_actions import ESC_DOUBLE_S

if TYPE_CHECKING:
    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.ui import command_handlers
    from selfref_tui.ui import commands as slash
    from selfref_tui.ui.widgets.app_header import AppHeader
    from selfref_tui.ui.widgets.chat_input import ChatInput
    from selfref_tui.ui.widgets.fork_panel import ForkPanel
    from selfref_tui.ui.widgets.transcript import Transcript
else:  # the first Enter or F1 imports the command table
    command_handlers = LazyModule("selfref_tui.ui.command_handlers")
    slash = LazyModule("selfref_tui.ui.commands")

#: a second Esc this soon after a stop is the same press repeated, not a new stop
ESC_REPEAT_S = 0.5


class SendActions:
    """Send, run a command, retry, stop."""

    if TYPE_CHECKING:  # provided by SelfRefApp and its other mixins
        controller: ChatController
        clock: Any
        _stopped_at: float
        _idle_esc_at: float

        @property
        def transcript(self) -> Transcript: ...
        @property
        def chat_input(self) -> ChatInput: ...
        @property
        def header(self) -> AppHeader: ...
        @property
        def fork_panel(self) -> ForkPanel: ...
        @property
        def ready(self) -> bool: ...
        def notify(self, message: str, **kwargs: Any) -> None: ...
        def queued_back(self, left: Any) -> None: ...
        def action_toggle_forks(self) -> None: ...
        def pick_rewind(self) -> None: ...
        async def regenerate(self) -> None: ...
        def run_worker(self, work: Any, **kwargs: Any) -> Any: ...

    async def _send(self, text: str) -> None:
        """Through the controller, then on screen (raises :class:`Refused`)."""
        await self._show_sent(text, self.controller.submit(text))

    async def _show_sent(self, text: str, outcome: str,
                         images: Sequence[tuple[str, str]] = ()) -> None:
        """A sent message on screen: queued while a turn (or start-up) runs; its images
        ((data URL, file name) pairs) under it."""
        await self.transcript.add_user(text, queued=outcome != "started", images=images)
        if outcome != "early":
            self.transcript.scroll_bottom()  # what one sends is followed, wherever one reads

    async def _send_early_inputs(self) -> None:
        """What was typed during start-up goes out now, in order, shown as any message is.

        Opening the key cleared it off the transcript. A key that cannot take
        it (locked, read-only) gets it back into the input, not lost: always,
        ahead of whatever was typed since (the controller no longer holds it,
        so this is its only copy), and the cursor stays in that draft.
        """
        early = self.controller.take_early_inputs()
        for at, text in enumerate(early):
            try:
                await self._send(text)
            except Refused as exc:
                back = "\n\n".join(early[at:])
                if self.chat_input.text:
                    back += "\n\n"
                self.chat_input.insert(back, location=(0, 0))
                self.refused(exc, " What you typed is back in the input.")
                return

    def refused(self, exc: Refused, extra: str = "") -> None:
        """The controller's refusal, said in one notification."""
        self.notify(f"{exc}{extra}", severity=exc.severity, timeout=8)

    async def run_command(self, text: str) -> bool:
        """Run a slash command; False keeps the text in the input (it needs fixing)."""
        try:
            command = slash.parse_command(text)
        except slash.CommandError as exc:
            self.notify(str(exc), severity="warning")
            return False
        try:
            return await command_handlers.run(self, command)
        except Refused as exc:
            self.refused(exc)
            return False

    def action_retry(self) -> None:
        """Send the failed last message again (``/retry``, F5)."""
        if self._retry() == "nothing":
            self.notify("Nothing to retry: the last message did not fail.")

    def _retry(self) -> str | None:
        """The controller's retry; None when it was refused or a turn runs (said here)."""
        try:
            outcome = self.controller.retry()
        except Refused as exc:
            self.refused(exc)
            return None
        if outcome == "busy":
            self.notify("A turn is running; wait for it or press Esc first.", severity="warning")
            return None
        return outcome

    def action_abort(self) -> None:
        self.chat_input.focus()
        now = self.clock()
        if now - self._stopped_at < ESC_REPEAT_S:
            # A double press stops once: a turn running now is a message sent after
            # the first press, and the second press meant that first stop.
            return
        left = self.controller.abort()
        if left is not None:
            self._stopped_at = now
            self.header.status = "stopping…"
            if left:
                # Esc means stop: what the person queued and the model never saw goes
                # back into the input, to send again or not (as a rewind during an
                # answer does), instead of starting a turn the person just stopped.
                self.queued_back(left)
        elif self.fork_panel.display and not self.controller.busy:
            # nothing to stop: Esc puts the fork panel away, as ctrl+t does (an overlay
            # is what a person closes with Esc), and starts no Esc Esc
            self._idle_esc_at = float("-inf")
            self.action_toggle_forks()
        elif self.ready and not self.controller.busy:
            # Esc Esc with nothing running: pick one of your messages to rewind to
            if now - self._idle_esc_at < ESC_DOUBLE_S:
                self._idle_esc_at = float("-inf")
                self.pick_rewind()
            else:
                self._idle_esc_at = now

    def action_retry_or_regenerate(self) -> None:
        """F5: a failed turn's message again; after a turn that went well, the last answer
        asked for again (the old one kept, rewound)."""
        if self._retry() == "nothing":
            self.run_worker(self.regenerate(), exclusive=True, group="steer")
