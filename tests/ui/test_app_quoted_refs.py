"""The person reads it when an answer rewrites a ref the model just read back quoted.

Real app (Pilot) over real HTTP: the demo server writes a ref, reads that
message back with ``read_history`` (the ref shows as ``<quoted_ref>``), then
answers with the ref cut short as a new definition. The change is kept, the
earlier version stays in the refs list as old, and a toast says so.
"""

from __future__ import annotations

from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from tests.ui.helpers import make_app, started, turn_done, type_and_send, wait_until

PLAN = "1. back up the database\n2. run the migration\n3. switch the traffic over"


def _toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_a_ref_rewritten_after_a_read_back_is_told_in_a_toast(tmp_path):
    read = Reply(tool_calls=[ToolCall("read_history", {"start": 2, "count": 1}, id="r1")])
    script = [Reply(text=f'The plan:\n<ref id="plan">\n{PLAN}\n</ref>'), read,
              Reply(text='Here:\n<ref id="plan">\n1. back up the database\n</ref>')]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "Plan the migration.")
            await turn_done(pilot, app)
            assert _toasts(app) == []
            await type_and_send(pilot, "What was the plan?")
            await turn_done(pilot, app)
            told = "ref plan was rewritten right after the model read it quoted from the history"
            await wait_until(pilot, lambda: any(told in t for t in _toasts(app)),
                             what="the notice")
            await wait_until(pilot, lambda: app.screen.query("Toast"), what="the toast shown")
            lists = app.controller.sidebar_lists()
    assert [(r["content"], r["superseded"]) for r in lists.refs] == [
        (PLAN, True), ("1. back up the database", False)]
