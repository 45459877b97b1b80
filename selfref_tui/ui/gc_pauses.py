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

A full pass walks every live object, and most of them have not changed since
the last one: the app's own start-up (Textual, our modules: about 140,000
objects, 100 ms a pass) and earlier turns. So after each pass its survivors
are frozen (``gc.freeze``: moved where collections do not look), and the
pass after a turn walks only what arrived since (after a 10,000-ref answer
340,000 objects instead of 480,000). Cyclic garbage among frozen objects is
found only by a pass over everything (``gc.unfreeze`` first): that pass runs
when a key is loaded (the previous key's transcript is dropped then) and once
the frozen objects number :data:`FULL_GROWTH` times what the last such pass
left, so the garbage that can hide among them stays a bounded share of the
heap, and those passes cost in proportion to the growth that asks for them.
(Garbage among the objects that are not frozen, a turn's survivors included,
is found by every pass.)
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.timer import Timer

    from selfref_tui.agent.chat.controller import ChatController

#: (young, middle, oldest): young every 2,000 allocations; middle every 10 young;
#: oldest after 1,000 middle collections (Python's defaults: 700, 10, 10)
THRESHOLDS = (2_000, 10, 1_000)
#: the full collection waits until no key has been pressed for this long
QUIET_S = 1.0
#: a pass over the frozen objects too once they number this many times what the last
#: such pass left (or when asked: a key loaded)
FULL_GROWTH = 2.0


class GcPauses:
    """Holds the collector's thresholds for the app's lifetime and collects when idle."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._saved: tuple[int, int, int] | None = None
        self.last_key = float("-inf")
        #: how long the last idle collection took, in seconds (shown in the log)
        self.last_pause_s = 0.0
        #: objects frozen by the last pass over everything (None: none ran yet)
        self.settled: int | None = None
        #: objects frozen by the last pass of any kind
        self.frozen = 0
        #: whether the last collection walked the frozen objects too
        self.last_was_full = False

    def install(self) -> None:
        if self._saved is None:
            self._saved = gc.get_threshold()
            gc.set_threshold(*THRESHOLDS)

    def uninstall(self) -> None:
        """Give the process its thresholds back (tests run many apps in one process)."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None
            gc.unfreeze()  # back where any collection sees them
            self.settled = None
            self.frozen = 0

    def key_pressed(self) -> None:
        self.last_key = self._clock()

    def wait_s(self) -> float:
        """How much longer the person's typing holds the collection back (0: go)."""
        return max(0.0, self.last_key + QUIET_S - self._clock())

    def collect(self, *, everything: bool = False) -> float:
        """A full collection now, then its survivors frozen; how long it took.

        It walks only what is not frozen unless ``everything`` is asked for, no
        pass over everything ran yet, or the frozen objects have grown
        :data:`FULL_GROWTH` times since the last one.
        """
        start = time.perf_counter()
        settled = self.settled
        full = everything or settled is None or self.frozen > FULL_GROWTH * settled
        if full:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.frozen = gc.get_freeze_count()  # (walks the frozen list: ~5 ms at 500,000)
        if full:
            self.settled = self.frozen
        self.last_was_full = full
        self.last_pause_s = time.perf_counter() - start
        return self.last_pause_s


class IdleCollect:
    """Mixed into the app: the full pass after a turn, once the person stops typing."""

    if TYPE_CHECKING:  # what the app provides
        controller: ChatController
        gc_pauses: GcPauses
        _gc_timer: Timer | None
        #: the next idle collection walks the frozen objects too
        _gc_everything: bool

        def set_timer(self, delay: float, callback: Callable[[], Any]) -> Timer: ...
        def log(self, *args: Any) -> None: ...

    def collect_when_idle(self, *, everything: bool = False) -> None:
        """The collector's full pass waits for a quiet moment (see the module's doc).

        ``everything``: walk the frozen objects too (a key was loaded: the last
        key's transcript may have left cycles among them).
        """
        if self._gc_timer is not None:
            self._gc_timer.stop()
        self._gc_everything = self._gc_everything or everything
        self._gc_timer = self.set_timer(QUIET_S, self._idle_collect)

    def _idle_collect(self) -> None:
        self._gc_timer = None
        if self.controller.busy:
            return  # a new turn began: its end asks again
        wait = self.gc_pauses.wait_s()
        if wait > 0:
            self._gc_timer = self.set_timer(wait, self._idle_collect)
            return
        everything, self._gc_everything = self._gc_everything, False
        pause = self.gc_pauses.collect(everything=everything)
        what = "everything" if self.gc_pauses.last_was_full else "what is new since the last"
        self.log(f"garbage collection between turns ({what}): {pause * 1000:.0f} ms")
