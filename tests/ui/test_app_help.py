"""F1 in the whole app: every key with what it does."""

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
