"""The footer at 80 columns: the keys it shows are whole, none covered by another."""

from __future__ import annotations

from textual.widgets import Footer

from tests.ui.helpers import DOWN_URL, make_app, started


async def test_at_80_columns_sidebar_and_forks_are_readable(tmp_path):
    app = make_app(tmp_path, DOWN_URL)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        await pilot.pause()
        shown = [key for key in app.query_one(Footer).query("FooterKey") if key.display]
        by_action = {key.action: key.region for key in shown}
        for action in ("toggle_sidebar", "toggle_forks"):
            region = by_action[action]
            assert region.right <= 80, (action, region)
            covered = [other.action for other in shown
                       if other.action != action and other.region.overlaps(region)]
            assert not covered, (action, covered)
        assert "command_palette" not in by_action  # ctrl+p still opens it; F1 lists it
