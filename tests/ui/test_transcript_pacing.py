"""How often a streaming answer is redrawn: less often while the person types."""

from __future__ import annotations

from selfref_tui.ui.widgets.transcript import (
    FRAME_S,
    FRAME_SHARE,
    FRAME_TYPING_S,
    TYPING_S,
    Transcript,
    frame_gap,
)
from tests.ui.helpers import FakeClock
from tests.ui.test_widgets_transcript import TranscriptApp


def test_the_gap_between_redraws():
    assert frame_gap(0.001, None) == FRAME_S  # nobody typed yet
    assert frame_gap(0.001, 0.2) == FRAME_TYPING_S  # a key 0.2 s ago
    assert FRAME_TYPING_S > FRAME_S
    assert frame_gap(0.001, TYPING_S + 0.1) == FRAME_S  # typing stopped a while ago
    # a slow redraw waits a multiple of its cost, typing or not
    assert frame_gap(0.1, None) == frame_gap(0.1, 0.2) == FRAME_SHARE * 0.1


async def test_a_key_slows_the_redraws_for_a_moment():
    app = TranscriptApp()
    async with app.run_test() as pilot:
        t = app.t
        t.clock = clock = FakeClock()  # "a moment" is the fake clock's, not the machine's load
        await pilot.pause()
        t._frame_cost = 0.0  # the first layout's cost is not what this test is about
        assert t.next_frame_s == FRAME_S
        t.person_typed()
        clock.now += TYPING_S - 0.1
        assert t.next_frame_s == FRAME_TYPING_S
        clock.now += 0.2  # the key is more than TYPING_S ago
        assert t.next_frame_s == FRAME_S


async def test_typing_in_the_app_slows_its_transcript_and_sending_does_not(tmp_path):
    from tests.ui.helpers import make_app, started

    clock = FakeClock()  # however long the presses and pauses take, "a moment" is this clock's
    app = make_app(tmp_path, "http://127.0.0.1:9/v1", clock=clock)  # nothing is sent: no server
    async with app.run_test() as pilot:
        await started(pilot, app)
        app.transcript._frame_cost = 0.0
        assert app.transcript.next_frame_s == FRAME_S
        app.chat_input.text = ""  # an emptied input (a send) is not typing
        await pilot.pause()
        app.transcript._frame_cost = 0.0  # (a redraw meanwhile may have taken long: not tested)
        assert app.transcript.next_frame_s == FRAME_S
        await pilot.press("h")
        await pilot.pause()
        app.transcript._frame_cost = 0.0
        clock.now += TYPING_S - 0.1
        assert app.transcript.next_frame_s == FRAME_TYPING_S
        clock.now += 0.2  # the key is more than TYPING_S ago: the app's clock times the transcript
        assert app.transcript.next_frame_s == FRAME_S


async def test_a_key_reaches_the_transcript_without_a_dom_query(tmp_path, monkeypatch):
    """Every key tells the transcript: through the widget kept from compose, not a query."""
    from tests.ui.helpers import make_app, started

    app = make_app(tmp_path, "http://127.0.0.1:9/v1", clock=FakeClock())
    async with app.run_test() as pilot:
        await started(pilot, app)
        asked: list[object] = []
        for name in ("query", "query_one", "query_exactly_one"):
            real = getattr(app, name)

            def counted(*args, _real=real, **kwargs):
                asked.append(args[0] if args else None)
                return _real(*args, **kwargs)

            monkeypatch.setattr(app, name, counted)
        app.transcript._key_at = None
        await pilot.press("h", "i")
        await pilot.pause()
        assert app.transcript._key_at is not None  # the keys reached it
        assert not [s for s in asked if s == "#transcript" or s is Transcript]
