"""The abort signal a person fires (Esc in the app, SIGINT in ``ask``).

It is a one-shot flag plus an :class:`asyncio.Event`: code that polls between
steps reads :attr:`AbortSignal.fired`; code that is blocked (a stream, a tool
batch) races its work against :meth:`AbortSignal.wait` so it can stop at once
instead of at the next chunk. Callbacks let the loop cancel the task that is
consuming the HTTP stream synchronously, inside ``fire()``, which is what
keeps abort latency in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

DEFAULT_REASON = "user pressed Esc"
#: the reason when the program ends the turn, not the person: the app quitting (the quit
#: key, a closed terminal), ``ask`` ended by a signal. Nobody decided against what the
#: turn was doing (a compaction the runtime asked for is asked for again).
CLOSING_REASON = "app closing"


def closing(reason: str) -> bool:
    """Whether a turn stopped for ``reason`` was ended by the program's end (see above)."""
    return reason == CLOSING_REASON or reason.startswith("ended by SIG")


class AbortSignal:
    """Fire once; everything listening stops and records ``reason``."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._fired = False
        self._reason = ""
        self._callbacks: list[Callable[[], None]] = []

    @property
    def fired(self) -> bool:
        return self._fired

    @property
    def reason(self) -> str:
        return self._reason

    def _get_event(self) -> asyncio.Event:
        # Created lazily so a signal can be built outside a running loop.
        if self._event is None:
            self._event = asyncio.Event()
            if self._fired:
                self._event.set()
        return self._event

    def fire(self, reason: str = DEFAULT_REASON) -> None:
        """Fire the signal; later calls keep the first reason."""
        if self._fired:
            return
        self._fired = True
        self._reason = reason or DEFAULT_REASON
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    async def wait(self) -> None:
        """Return once the signal has fired."""
        await self._get_event().wait()

    def on_fire(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the signal fires (at once if it already has).

        Returns a function that unregisters it, so a finished step does not
        leave a stale cancel hook behind.
        """
        if self._fired:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove
