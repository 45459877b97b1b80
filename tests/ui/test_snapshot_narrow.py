"""SVG snapshots of the first screens on a small terminal (40x12): they fit.

The empty conversation's hint drops its box there and is read from its first line;
the first-run welcome wraps its commands instead of cutting them at the edge.
Regenerate with ``pytest tests/ui/test_snapshot_narrow.py --snapshot-update`` and look
at the SVGs.
"""

from __future__ import annotations

from selfref_tui.config import AppConfig
from selfref_tui.ui.app import SelfRefApp
from tests.ui.helpers import fixed_clock, make_app, started, thread_server, wait_until

SMALL = (40, 12)


def test_empty_conversation_at_40x12(snap_compare, tmp_path):
    with thread_server([]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.transcript.empty_hint, what="the hint")

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


def test_welcome_screen_at_40x12(snap_compare, tmp_path, monkeypatch):
    monkeypatch.setenv("SELFREF_CONFIG", "/home/you/.config/selfref-tui/config.toml")
    app = SelfRefApp(AppConfig(data_dir=tmp_path / "data", unconfigured=True), clock=fixed_clock)

    async def run_before(pilot) -> None:
        await wait_until(pilot, lambda: type(app.screen).__name__ == "WelcomeScreen")
        await pilot.press("pagedown")  # the commands, wrapped at the edge, not cut
        await pilot.pause()

    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)
