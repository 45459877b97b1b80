"""An answer cut short by a failed stream reads the same live and after a reload."""

from __future__ import annotations

from selfref_tui.demo import DemoServer
from selfref_tui.demo.script import Drop

from .helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until


async def test_a_dropped_stream_marks_the_partial_answer_live_as_after_a_reload(tmp_path):
    async with DemoServer([Drop(text="The first half of an answer that")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app, status="error")
            model = app.transcript.model
            await wait_until(pilot, lambda: model.of_kind("error"), what="the error block")
            (answer,) = model.of_kind("answer")
            live = answer.marker
            assert answer.interrupted and live == "■ interrupted — connection lost"
            assert "interrupted — connection lost" in "\n".join(app.transcript.visible_text())
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            model = app.transcript.model
            await wait_until(pilot, lambda: model.of_kind("answer"), what="the stored answer")
            (answer,) = model.of_kind("answer")
            assert answer.text.startswith("The first half") and answer.marker == live
