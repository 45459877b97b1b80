"""Quitting while a conversation opens or its meter still counts: at once, nothing lost."""

from __future__ import annotations

import asyncio
import threading

from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.app import SelfRefApp
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


class _HeldStart(SelfRefApp):
    """Start-up holds the runtime's import until the test lets it go."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.starting, self.gate = asyncio.Event(), asyncio.Event()

    async def load_runtime(self) -> None:
        self.starting.set()
        await self.gate.wait()
        await super().load_runtime()


async def test_quitting_while_the_app_starts_exits_cleanly_and_loses_nothing(tmp_path):
    """ctrl+q while the app is still starting (the last conversation not yet open): the
    window closes without an error, and the store is whole and free for the next window."""
    from dataclasses import replace

    from selfref_tui.config import AppConfig, ProviderConfig

    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        for i in range(20):
            memory.commit(turn(i))
    async with DemoServer([]) as url:
        provider = ProviderConfig(base_url=url, api_key="test", model="test-model",
                                  max_retries=0, context_window=128_000)
        config = replace(AppConfig(provider=provider, data_dir=tmp_path / "data", key="main"),
                         resume=True)
        app = _HeldStart(config)
        async with app.run_test(size=SIZE) as pilot:
            await loop_wait_until(app.starting.is_set, timeout=30, what="the app starting")
            quit_key = asyncio.ensure_future(pilot.press("ctrl+q"))
            try:
                await loop_wait_until(lambda: app.controller.closed, what="the window closing")
            finally:
                app.gate.set()
            await quit_key
        assert app.return_code == 0
    assert len(stored(tmp_path)) == 40
    with SelfReference(tmp_path / "data") as store:
        assert store.open("main").last_number == 40
