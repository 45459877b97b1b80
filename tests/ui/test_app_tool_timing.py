"""A tool call's time survives a reload: "✓ done 0.01s" stayed "✓ done" once read back."""

from __future__ import annotations

from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until


async def test_a_tool_calls_duration_is_shown_again_after_a_restart(tmp_path):
    script = [Reply(tool_calls=[ToolCall("remember", {"text": "likes tea"}, id="r1")]),
              Reply(text="Stored.")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "remember that I like tea")
            await turn_done(pilot, app)
            live = app.transcript.items_of("tool")[0]
            assert live.duration_s is not None
            shown = live.title
        again = make_app(tmp_path, url)
        async with again.run_test(size=SIZE) as pilot:
            await started(pilot, again)
            await wait_until(pilot, lambda: again.transcript.items_of("tool"), what="the card")
            card = again.transcript.items_of("tool")[0]
            assert card.duration_s == live.duration_s
            assert card.title == shown and shown.endswith("s")
