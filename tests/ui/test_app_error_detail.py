"""A server's error text is shown in full on request, not only its first 160 characters."""

from __future__ import annotations

from selfref_tui.demo import DemoServer, HttpError

from .helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until

#: the part that says what is wrong comes after the first 160 characters
LONG = ("Request validation failed for field messages: " + "x" * 200
        + " — the real cause: TEMPLATE_REFUSES_ROLE_ORDER")


async def test_the_servers_full_text_opens_with_a_click(tmp_path):
    async with DemoServer([HttpError(400, LONG, type="invalid_request_error")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app, status="error")
            transcript = app.transcript
            await wait_until(pilot, lambda: transcript.model.of_kind("error"), what="the error")
            error = transcript.model.of_kind("error")[0]
            assert error.has_detail and "TEMPLATE_REFUSES_ROLE_ORDER" in error.detail
            await pilot.pause()
            shown = "\n".join(transcript.visible_text())
            assert "the server's full text" in shown
            assert "TEMPLATE_REFUSES_ROLE_ORDER" not in shown  # collapsed: one line
            row = next(y for y, line in enumerate(transcript.visible_text())
                       if "the server's full text" in line)
            await pilot.click(transcript, offset=(6, row))
            await wait_until(
                pilot, lambda: "TEMPLATE_REFUSES_ROLE_ORDER" in "".join(transcript.visible_text()),
                what="the full text")
            assert "TEMPLATE_REFUSES_ROLE_ORDER" in error.copy_text
