"""F1 and /context in the whole app: every key with what it does, and the next call."""

from __future__ import annotations

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer

from .helpers import SIZE, make_app, wait_until


async def test_help_says_what_each_key_does_in_full(tmp_path):
    """The footer's labels are cut to fit ("Prev ref", "Export ref"): ctrl+up also stops
    on messages and code blocks, ctrl+s writes whatever is highlighted. F1 says so."""
    async with DemoServer([Reply(text="hi")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f1")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "HelpScreen",
                             what="help")
            keys = dict(app.screen.keys)
            assert keys["ctrl+up"] == ("Highlight the previous message, ref or code block in "
                                       "the transcript")
            assert keys["ctrl+s"].startswith("Write what is highlighted to a file")
            assert keys["ctrl+q"] == "Quit selfref-tui"
            # the key is spelled as the footer and every dialog's hint spell it
            assert keys["esc"].startswith("Stop the running answer") and "escape" not in keys


async def test_context_names_the_model_and_its_window(tmp_path):
    """/context: who gets the next call and how much fits, as `context show` says."""
    from textual.content import Content

    from .helpers import started, type_and_send

    async with DemoServer([Reply(text="hi")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.sidebar.meter.window, what="the window")
            await type_and_send(pilot, "/context")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ContextView",
                             what="/context")
            dialog = app.screen.query_one("#dialog")
            assert Content.from_markup(dialog.border_title).plain == "Next call · test-model"
            assert " of 128,000 tokens" in str(dialog.border_subtitle)
