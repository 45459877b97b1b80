"""The collector's full pass waits for the end of a turn and a pause in typing."""

from __future__ import annotations

import gc
import time

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
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
