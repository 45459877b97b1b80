"""What the app shows when the controller refuses: nothing typed is lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from textual.pilot import Pilot

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.app import SelfRefApp
from tests.selfref.helpers import turn
from tests.ui.helpers import SIZE, make_app, type_and_send, wait_until


class _GatedReadOnly(SelfRefApp):
    """A read-only window whose start-up waits for ``gate``: typing meanwhile is early input."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, read_only=True, **kwargs)
        self.gate = asyncio.Event()

    async def load_runtime(self) -> None:
        await self.gate.wait()
        await super().load_runtime()


@asynccontextmanager
async def gated_read_only(
    tmp_path: Path,
) -> AsyncIterator[tuple[_GatedReadOnly, Pilot, DemoServer]]:
    """A read-only window on a key with one turn, its start-up held until ``app.gate`` is set."""
    holder = SelfReference(tmp_path / "data")
    holder.open("main").commit(turn(1, "what is up"))
    try:
        server = DemoServer([Reply(text="never asked")])
        async with server as url:
            app = _GatedReadOnly(make_app(tmp_path, url).config)
            async with app.run_test(size=SIZE) as pilot:
                yield app, pilot, server
    finally:
        holder.close()


async def refused(pilot: Pilot, app: _GatedReadOnly) -> None:
    """Let start-up go on, and wait for the read-only window's refusal."""
    app.gate.set()
    await wait_until(
        pilot,
        lambda: any("--read-only" in n.message for n in app._notifications),
        timeout=30,
        what="the refusal",
    )


async def test_early_input_a_read_only_window_refuses_goes_back_into_the_input(tmp_path):
    async with gated_read_only(tmp_path) as (app, pilot, server):
        await type_and_send(pilot, "typed early")
        assert [m.text for m in app.transcript.items_of("user")] == ["typed early"]
        assert app.chat_input.text == ""
        await refused(pilot, app)
        assert app.chat_input.text == "typed early"  # back, not lost
        assert [m.text for m in app.transcript.items_of("user")] == ["what is up"]
        assert not app.router.busy
    assert server.requests == []


async def test_refused_early_input_goes_back_ahead_of_a_draft_typed_since(tmp_path):
    # Sent during start-up, then a draft typed (not sent) before the key refuses:
    # both must be in the input, the early message first, as the notification says.
    async with gated_read_only(tmp_path) as (app, pilot, server):
        await type_and_send(pilot, "typed early")
        await pilot.press(*"draft")
        assert app.chat_input.text == "draft"
        await refused(pilot, app)
        assert app.chat_input.text == "typed early\n\ndraft"
        notice = next(n for n in app._notifications if "--read-only" in n.message)
        assert "What you typed is back in the input." in notice.message
        # the cursor stays where the person was typing: at the end of the draft
        await pilot.press(*"!")
        assert app.chat_input.text == "typed early\n\ndraft!"
        assert not app.router.busy
    assert server.requests == []


async def test_a_refused_command_finished_at_its_end_is_sent_by_the_next_enter(tmp_path):
    """A command the app refused stays in the input; what is typed onto its end and sent
    with Enter goes (an Enter is held back only while the app has not yet taken the text
    of the one before)."""
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready, what="started")
            await type_and_send(pilot, "/remember")
            await wait_until(pilot, lambda: app._notifications, what="the usage said")
            assert app.chat_input.text == "/remember"
            await type_and_send(pilot, " I use tabs")
            await wait_until(pilot, lambda: app.chat_input.text == "", what="taken")
            await wait_until(pilot, lambda: [e["text"] for e in app.agent.memory("main")
                                             .experiences] == ["I use tabs"],
                             what="remembered")
