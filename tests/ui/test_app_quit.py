"""Quitting while the meter still counts a long conversation: at once, and nothing lost."""

from __future__ import annotations

import asyncio
import threading

from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from tests.agent.helpers import wait_until as loop_wait_until
from tests.selfref.helpers import turn
from tests.ui.helpers import SIZE, make_app, started, stored, wait_until, workers_done

TURNS = 300


async def test_quitting_while_the_meter_counts_stops_the_count_and_leaves_the_store_whole(
        tmp_path):
    """The meter counts the conversation in a thread, and closing waits for the store's
    threads: a 20,000-message conversation held the quit for 5 s. The count stops at its
    next message instead; the messages are all there and the key is free again."""
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        for i in range(TURNS):
            memory.commit(turn(i, f"question {i} with a few more words to count"))
    entered, gate = threading.Event(), threading.Event()
    encoded: list[str] = []
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            tokens = app.agent.tokens
            await wait_until(pilot, lambda: tokens.ready, timeout=30, what="tiktoken loaded")
            await workers_done(pilot, app, "encoder")
            await workers_done(pilot, app, "usage")
            real = tokens._encode

            def held(text: str) -> list[int]:
                """The real encoding; the first text waits until the test lets it go."""
                encoded.append(text)
                if len(encoded) == 1:
                    entered.set()
                    gate.wait(60)
                return real(text)

            tokens.set_encoder(held)  # every message is counted again, through ``held``
            app._refresh_usage()
            await wait_until(pilot, entered.is_set, what="the meter's count under way")
            # The key's press returns once every widget is idle: the input is busy
            # quitting until the count ends, so the test looks on from the loop.
            quit_key = asyncio.ensure_future(pilot.press("ctrl+q"))
            try:
                await loop_wait_until(lambda: tokens.stopped, what="the counter stopped")
            finally:
                gate.set()
            await quit_key
        assert app.return_code == 0
    # the count ended at the text it was in (the tools' schemas come first): not after
    # the 1,200 texts of 600 messages
    assert 1 <= len(encoded) < 50
    assert sum(text.startswith("question") for text in encoded) <= 1
    # everything is there, and the key's lock was let go: it opens for writing
    assert len(stored(tmp_path)) == 2 * TURNS
    with SelfReference(tmp_path / "data") as store:
        assert store.open("main").last_number >= 2 * TURNS
