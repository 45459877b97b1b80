"""The input box is a screen too: recalled history and pastes never write controls raw.

A TextArea draws its text as it is, so an escape sequence in a stored message
recalled with Up, or in a pasted terminal log, would reach the terminal from
the input. Both are shown (and sent) with the characters made visible.
"""

from __future__ import annotations

from textual import events

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from tests.cli.helpers import arun
from tests.hostile import assert_inert, hostile
from tests.ui.helpers import make_app, started, wait_until

SIZE = (100, 30)


async def test_recalled_and_pasted_controls_are_shown_not_sent(tmp_path):
    typed_elsewhere = hostile("osc52_clipboard") + hostile("clear_screen")
    async with DemoServer([Reply(text="ok")]) as url:
        # a message stored by another front end (ask), control characters and all
        code, _out, err = await arun("ask", "--base-url", url, "--model", "m", typed_elsewhere,
                                     env={"OPENAI_API_KEY": "unused-key"})
        assert code == 0, err
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            assert_inert(app.export_screenshot())  # the history shows it inert

            await pilot.press("up")
            await wait_until(pilot, lambda: app.chat_input.text, what="recalled input")
            assert "␛]52;c;" in app.chat_input.text and "␛[2J" in app.chat_input.text
            assert_inert(app.export_screenshot())

            app.chat_input.clear()
            app.post_message(events.Paste(hostile("osc0_title") + " tail"))
            await wait_until(pilot, lambda: "tail" in app.chat_input.text, what="pasted text")
            assert app.chat_input.text == "␛]0;pwned title␇hello tail"
            assert_inert(app.export_screenshot())

            app.chat_input.clear()
            app.post_message(events.Paste("plain paste"))
            await wait_until(pilot, lambda: app.chat_input.text, what="plain paste")
            assert app.chat_input.text == "plain paste"  # once, unchanged
