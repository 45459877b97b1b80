"""Shared helpers for the runtime tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: a bound that only catches a hang: what it guards happens at once or never (a turn
#: stopped while its answer is held, a stream closed), so no load reaches it
HANG_S = 60.0

#: seconds a test's provider waits for a silent server's next byte (the app's own
#: default): far longer than any hold a test puts on an answer with a ``Stall``. With
#: 5–10 s a loaded machine spent that between the hold and the test's next step, and
#: the held turn ended in a timeout the test never asked for.
STALL_PATIENCE_S = 120.0

#: a wait that burns no CPU (a hang, not a slow machine) fails after this many times
#: its budget of wall time
HANG_FACTOR = 6


class Budget:
    """``timeout`` CPU seconds of this process, and ``HANG_FACTOR`` times as much wall time.

    A loaded machine stretches the wall clock, not the work a test waits for
    (the agent, its threads and the in-process demo server all count here), so
    load makes a wait slower, never red: at load 20 on two cores a 5 s wall
    deadline ran out while the turn it waited for was on its way. A wait for
    something that never comes burns no CPU and still fails, on the wall clock.
    """

    def __init__(self, timeout: float) -> None:
        self.cpu_deadline = time.process_time() + timeout
        self.wall_deadline = time.monotonic() + timeout * HANG_FACTOR

    def spent(self) -> bool:
        return time.process_time() > self.cpu_deadline or time.monotonic() > self.wall_deadline


async def wait_until(predicate: Callable[[], object], timeout: float = 5.0, what: str = ""
                     ) -> None:
    """Poll ``predicate`` on the event loop instead of sleeping a fixed time; fail with
    ``what`` once the :class:`Budget` of ``timeout`` is spent."""
    budget = Budget(timeout)
    while not predicate():
        if budget.spent():
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await asyncio.sleep(0.005)
