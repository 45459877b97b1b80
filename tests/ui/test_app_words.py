"""On screen a memory key is a conversation, in the refusals too.

The footer, the palette and the switcher say "conversation"; a switch refused
during a turn still said "switch keys", and a read-only window "writes this key".
"""

from __future__ import annotations

import asyncio

from selfref_tui.demo.script import Stall
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.app import SelfRefApp
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until


def _said(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_refusals_speak_of_conversations(tmp_path):
    release = asyncio.Event()
    stall = Stall(release, text_before="thinking", text_after=" done")
    async with DemoServer([stall]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "take your time")
            await wait_until(pilot, lambda: stall.reached.is_set(), what="the turn running")
            await type_and_send(pilot, "/key other")
            await wait_until(pilot, lambda: _said(app), what="the refusal")
            assert _said(app) == ["A turn is running; press Esc first, then switch "
                                  "conversations."]
            release.set()
            await turn_done(pilot, app)

        viewer = SelfRefApp(make_app(tmp_path, url).config, read_only=True)
        async with viewer.run_test(size=SIZE) as pilot:
            await started(pilot, viewer)
            await type_and_send(pilot, "/remember tea")
            await wait_until(pilot, lambda: _said(viewer), what="the refusal")
            (said,) = _said(viewer)
            assert said.startswith("Read-only window (--read-only)")
            assert said.endswith("once no other window writes this conversation.")
