"""The conversation switcher fits its dialog on a small screen, whatever it lists."""

from __future__ import annotations

import pytest

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from tests.ui.helpers import make_app, started, wait_until


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_switchers_list_and_hint_stay_inside_its_dialog(tmp_path, size):
    """At 80x24 the list (16 rows high) ran past the dialog's bottom: the rows under it and
    the hint were cut off, and the highlight moved onto rows nobody could see."""
    with SelfReference(tmp_path / "data") as store:
        for i in range(40):
            store.open(f"k{i:02d}").commit([UserMessageMutation({"role": "user", "content": "x"}),
                                            AssistantMessageMutation(content="y")])
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=size) as pilot:
            await started(pilot, app)
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "KeySwitcher",
                             what="the switcher")
            await pilot.pause()
            switcher = app.screen
            inside = switcher.query_one("#dialog").content_region
            for part in (switcher.option_list, switcher.query_one("#hint")):
                region = part.region
                assert region.height and inside.y <= region.y, (part, region, inside)
                assert region.bottom <= inside.bottom, (part, region, inside)
