"""The person pins messages from the app: every compaction keeps them verbatim.

A mixin of :class:`~selfref_tui.ui.app.SelfRefApp`. ``/pin [N]`` and
``/unpin [N]`` (N: the message number ``selfref-tui history`` prints; without
it, the highlighted message), and Pin / Unpin in the actions on a highlighted
message (F8, ``steer_actions.py``). The controller stores the pin (a record in
the key's log); the transcript marks pinned messages under their text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from selfref_tui.agent.chat.refusals import Refused

if TYPE_CHECKING:
    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.ui.transcript.model import Item
    from selfref_tui.ui.widgets.transcript import Transcript


class PinActions:
    """Pin and unpin, on screen."""

    if TYPE_CHECKING:  # provided by SelfRefApp and its other mixins
        controller: ChatController
        transcript: Transcript

        def notify(self, message: str, **kwargs: Any) -> None: ...
        def refused(self, exc: Refused, extra: str = "") -> None: ...
        def message_number(self, item: Item | None) -> int | None: ...

    def pin_message(self, n: int | None, pinned: bool = True) -> bool:
        """Pin (or unpin) message ``n``, by default the highlighted one; False when refused."""
        verb = "pin" if pinned else "unpin"
        if n is None:
            item = self.transcript.highlighted_item()
            n = self.message_number(item) if item is not None and item.kind != "rewound" else None
        if n is None:
            self.notify(f"Highlight a message first (ctrl+↑), or give its number: /{verb} N.",
                        severity="warning")
            return False
        try:
            changed = self.controller.pin(n, pinned)
        except Refused as exc:
            self.refused(exc)
            return False
        if not changed:
            # "was already unpinned" said of a message never pinned
            self.notify(f"Message {n} is already pinned." if pinned
                        else f"Message {n} is not pinned.")
        elif pinned:
            self.notify(f"Pinned message {n}: every compaction keeps it verbatim (/unpin {n}).")
        else:
            self.notify(f"Unpinned message {n}: compactions summarise it again.")
        self.show_pins()
        return True

    def show_pins(self) -> None:
        """The transcript marks the key's pinned messages (after a pin, a load, a rewind)."""
        self.transcript.set_pinned(self.controller.pins())
