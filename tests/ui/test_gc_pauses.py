"""The collector's full pass waits for the end of a turn and a pause in typing."""

from __future__ import annotations

import gc
import time
import weakref

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui import gc_pauses
from selfref_tui.ui.gc_pauses import QUIET_S, THRESHOLDS, GcPauses
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until


def test_thresholds_are_given_back_and_typing_holds_the_pass():
    now = [100.0]
    pauses = GcPauses(clock=lambda: now[0])
    before = gc.get_threshold()
    pauses.install()
    try:
        assert gc.get_threshold() == THRESHOLDS
        assert pauses.wait_s() == 0
        pauses.key_pressed()
        assert pauses.wait_s() == QUIET_S
        now[0] += QUIET_S / 4
        assert abs(pauses.wait_s() - QUIET_S * 3 / 4) < 1e-9
        now[0] += QUIET_S
        assert pauses.wait_s() == 0
    finally:
        pauses.uninstall()
    assert gc.get_threshold() == before


class _Cycle:
    """A node of a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_a_pass_walks_only_what_came_since_and_everything_when_grown_or_asked(monkeypatch):
    growth = 1.1  # (the test process holds many objects: grow it by a tenth, not twice)
    monkeypatch.setattr(gc_pauses, "FULL_GROWTH", growth)
    pauses = GcPauses()
    pauses.install()
    try:
        pauses.collect()  # the first pass walks everything, then freezes its survivors
        assert pauses.last_was_full
        assert pauses.settled is not None and gc.get_freeze_count() > 0

        # Garbage that arrived since: the next pass frees it without walking the frozen.
        young = _Cycle()
        young_ref = weakref.ref(young)
        del young
        pauses.collect()
        assert not pauses.last_was_full
        assert young_ref() is None

        # A cycle that died after it was frozen waits for a pass over everything...
        frozen = _Cycle()
        frozen_ref = weakref.ref(frozen)
        pauses.collect()
        del frozen
        pauses.collect()
        assert not pauses.last_was_full
        assert frozen_ref() is not None
        # ... which a key load asks for,
        pauses.collect(everything=True)
        assert pauses.last_was_full
        assert frozen_ref() is None

        # and which the frozen objects' growth asks for by itself.
        late = _Cycle()
        late_ref = weakref.ref(late)
        pauses.collect()
        del late
        kept = [[i] for i in range(int((growth - 1) * pauses.settled) + 1)]
        pauses.collect()  # walks (and freezes) the growth; the frozen cycle still hides
        assert not pauses.last_was_full and late_ref() is not None
        assert pauses.frozen == gc.get_freeze_count() > growth * pauses.settled
        pauses.collect()
        assert pauses.last_was_full
        assert late_ref() is None
        del kept
    finally:
        pauses.uninstall()
    assert gc.get_freeze_count() == 0  # the process gets its collector back whole


async def test_a_full_collection_follows_the_turn_once_typing_stops(tmp_path):
    full: list[float] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] == 2:
            full.append(time.monotonic())

    before = gc.get_threshold()
    gc.callbacks.append(seen)
    try:
        async with DemoServer([Reply(text="An answer.")]) as url:
            app = make_app(tmp_path, url)
            async with app.run_test(size=SIZE) as pilot:
                await started(pilot, app)
                assert gc.get_threshold() == THRESHOLDS
                await type_and_send(pilot, "hello")
                await turn_done(pilot, app)
                full.clear()
                # Typing right after the turn holds the pass back.
                typing_until = time.monotonic() + QUIET_S * 1.5
                while time.monotonic() < typing_until:
                    await pilot.press("x")
                    await pilot.pause(QUIET_S / 5)
                stopped_typing = time.monotonic()
                assert [t for t in full if t < stopped_typing - 0.05] == []
                await wait_until(pilot, lambda: full, timeout=QUIET_S * 4, what="full pass")
                assert full[0] >= stopped_typing
                assert app.gc_pauses.last_pause_s > 0
        assert gc.get_threshold() == before
    finally:
        gc.callbacks.remove(seen)
