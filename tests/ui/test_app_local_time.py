"""Times the app shows are on the person's clock (``TZ``): the rewind list, the switcher."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from tests.ui.helpers import SIZE, make_app, started, type_and_send, wait_until

#: five and a half hours east of UTC, no daylight saving (a POSIX rule: no tz database)
EAST = timezone(timedelta(hours=5, minutes=30))


@pytest.fixture
def east_zone(monkeypatch):
    monkeypatch.setenv("TZ", "IST-05:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


async def test_the_rewind_list_and_the_switcher_show_local_times(tmp_path, east_zone):
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": "what time is it"}),
                       AssistantMessageMutation(content="tea time")])
        stamp = memory.entry(1).time
        (updated,) = [info.updated for info in store.keys() if info.key == "main"]  # noqa: SIM118
    local = datetime.fromisoformat(stamp).astimezone(EAST)
    assert local.strftime("%H:%M") != datetime.fromisoformat(stamp).strftime("%H:%M")
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "/rewind")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the rewind list")
            assert app.screen.rows[0] == ("1", f"#1  {local.strftime('%H:%M')}  what time is it")
            await pilot.press("escape")
            await wait_until(pilot, lambda: type(app.screen).__name__ != "ChoiceList",
                             what="the list closed")
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "KeySwitcher",
                             what="the switcher")
            shown = " ".join(str(option.prompt) for option in app.screen.option_list.options)
            when = datetime.fromisoformat(updated).astimezone(EAST)
            assert when.strftime("%Y-%m-%d %H:%M") in shown
