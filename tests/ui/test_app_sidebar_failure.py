"""Start-up when the side panel's parts fail to mount: it says so instead of waiting forever."""

from __future__ import annotations

from selfref_tui.ui.widgets.sidebar import Sidebar
from tests.ui.helpers import make_app, wait_until


async def test_start_up_reports_a_side_panel_that_failed_to_mount(tmp_path, monkeypatch):
    def broken(self):
        raise RuntimeError("no lists today")

    monkeypatch.setattr(Sidebar, "_parts", broken)
    app = make_app(tmp_path, "http://127.0.0.1:9/v1")  # it never gets to send: no server
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.header.status == "not ready", what="start-up ended")
        assert app.sidebar.parts_mounted.is_set()
        (error,) = app.transcript.items_of("error")
        assert "Could not start" in error.message and "no lists today" in error.message
        assert not app.ready
