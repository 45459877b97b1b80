"""When Python's cyclic garbage collector may stop the app: between turns, not during one.

A streamed answer allocates fast (Markdown blocks, strips, styles), and with
Python's default thresholds the collector's oldest generation ran about once
a second while a long answer streamed. Each of those full collections walks
every live object, over a million by the end of a 20,000-token answer, and
stopped the event loop for 300–900 ms: key presses waited, and in
``bench/stream_bench.py`` a quarter of the stream's time went to them (27
collections, 10.3 s of 40 s).

So while the app runs, the young generations collect as usual (a little less
often) and the oldest waits: cyclic garbage that survives two collections
waits for the full collection the app runs after a turn ends (or a key has
loaded), once the person has not typed for :data:`QUIET_S`, so it does not
land in the middle of their typing either. The
oldest generation still collects by itself after :data:`THRESHOLDS`' third
count of younger collections (about 20 million allocations), so a turn that
never ends cannot grow memory without bound.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

#: (young, middle, oldest): young every 2,000 allocations; middle every 10 young;
#: oldest after 1,000 middle collections (Python's defaults: 700, 10, 10)
THRESHOLDS = (2_000, 10, 1_000)
#: the full collection waits until no key has been pressed for this long
QUIET_S = 1.0


class GcPauses:
    """Holds the collector's thresholds for the app's lifetime and collects when idle."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._saved: tuple[int, int, int] | None = None
        self.last_key = float("-inf")
        #: how long the last idle collection took, in seconds (shown in the log)
        self.last_pause_s = 0.0

    def install(self) -> None:
        if self._saved is None:
            self._saved = gc.get_threshold()
            gc.set_threshold(*THRESHOLDS)

    def uninstall(self) -> None:
        """Give the process its thresholds back (tests run many apps in one process)."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def key_pressed(self) -> None:
        self.last_key = self._clock()

    def wait_s(self) -> float:
        """How much longer the person's typing holds the collection back (0: go)."""
        return max(0.0, self.last_key + QUIET_S - self._clock())

    def collect(self) -> float:
        """A full collection now; how long it took."""
        start = time.perf_counter()
        gc.collect()
        self.last_pause_s = time.perf_counter() - start
        return self.last_pause_s
