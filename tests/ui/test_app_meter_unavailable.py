"""The context meter ends in a state a person can read when nothing can be counted.

A conversation that cannot open (locked by another window, unreadable, from a newer
version) has no figures: the meter said "counting…" for as long as the app ran, or
kept the figures of the conversation shown before it.
"""

from __future__ import annotations

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.widgets.context_meter import ContextMeter
from tests.hostile import hostile
from tests.selfref.helpers import turn
from tests.ui.helpers import SIZE, FakeClock, make_app, type_and_send, wait_until
from tests.ui.test_context_meter_stream import MeterApp, RecordingMeter


def _shown(meter: ContextMeter) -> str:
    return str(meter.render())


def _tooltip(meter: ContextMeter) -> str:
    return str(meter.tooltip)


async def test_a_conversation_locked_elsewhere_shows_unavailable_and_why(tmp_path):
    holder = SelfReference(tmp_path / "data")
    holder.open("main").commit(turn(1, "held elsewhere"))  # another window writes it
    try:
        async with DemoServer([Reply(text="hi")]) as url:
            app = make_app(tmp_path, url)
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(pilot, lambda: app.key_error, what="lock error")
                meter = app.sidebar.meter
                await wait_until(pilot, lambda: "unavailable" in _shown(meter),
                                 what="meter unavailable")
                assert "counting" not in _shown(meter)
                assert "not counted: conversation not open" in _shown(meter)
                assert "open for writing" in _tooltip(meter)
                assert "--read-only" in _tooltip(meter)
                # Another conversation opens: its figures replace "unavailable".
                await pilot.press("ctrl+n")
                await wait_until(pilot, lambda: type(app.screen).__name__ == "NewKeyPrompt",
                                 what="name prompt")
                await pilot.press("enter")
                await wait_until(pilot, lambda: app.key == "chat-1" and not app.key_error,
                                 what="chat-1 open")
                await wait_until(pilot, lambda: "/ 128k" in _shown(meter), what="figures")
                assert "unavailable" not in _shown(meter)
                assert "At the tick" in _tooltip(meter)  # the legend is back
                # Back to the locked one: not chat-1's figures, and not "counting…".
                await type_and_send(pilot, "/key main")
                await wait_until(pilot, lambda: app.header.key == "main" and app.key_error,
                                 what="main refused again")
                await wait_until(pilot, lambda: "unavailable" in _shown(meter),
                                 what="meter unavailable again")
                assert "128k" not in _shown(meter)
    finally:
        holder.close()


async def test_the_reason_is_shown_as_text_and_a_count_clears_it():
    app = MeterApp(FakeClock())
    async with app.run_test(size=(60, 10)) as pilot:
        meter = app.query_one(RecordingMeter)
        click = hostile("click_markup")
        meter.show_unavailable(f"Conversation {click} is open elsewhere", "the count failed")
        await pilot.pause()
        assert "unavailable" in meter.drawn[-1]
        assert "not counted: the count failed" in meter.drawn[-1]
        assert click in _tooltip(meter)  # shown, never parsed as markup
        meter.show_counting()
        await pilot.pause()
        assert "counting…" in meter.drawn[-1]
        meter.show_usage(1_000, 10_000, False)
        await pilot.pause()
        assert "1k / 10k" in meter.drawn[-1] and "unavailable" not in meter.drawn[-1]
