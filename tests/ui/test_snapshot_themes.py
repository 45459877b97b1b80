"""The app in one light and one dark theme: a conversation with every kind of row.

The first turn of the scripted conversation of tests/ui/test_themes.py (reasoning,
Markdown, refs, code), drawn in solarized-light (the theme whose
transcript once stayed near-black with navy text) and nord. The failed turn is
left out: its text names the test server's port.
Regenerate with ``pytest tests/ui/test_snapshot_themes.py --snapshot-update`` and
look at the SVGs.
"""

from __future__ import annotations

from tests.ui.helpers import (
    SIZE,
    fixed_clock,
    make_app,
    started,
    steady_durations,
    steady_usage,
    thread_server,
    turn_done,
    type_and_send,
)
from tests.ui.test_themes import SCRIPT

#: one turn: a remembered experience would show the clock's date in the sidebar
PROMPTS = ["show me everything"]


def _themed(snap_compare, tmp_path, theme: str) -> bool:
    with thread_server(SCRIPT) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)
        app.theme = theme

        async def run_before(pilot) -> None:
            await started(pilot, app)
            for prompt in PROMPTS:
                await type_and_send(pilot, prompt)
                await turn_done(pilot, app)
            steady_durations(app)
            await steady_usage(pilot, app)
            app.clear_notifications()
            await app.transcript.settle()

        return snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_light_theme(snap_compare, tmp_path):
    assert _themed(snap_compare, tmp_path, "solarized-light")


def test_dark_theme(snap_compare, tmp_path):
    assert _themed(snap_compare, tmp_path, "nord")


def test_files_restore_dialog_in_catppuccin_latte_at_80_columns(snap_compare):
    """The restore dialog at 80x24: its keys on one line ("all" had wrapped alone), and
    "Restore ticked files" readable on catppuccin-latte's orange (it was 2.3:1)."""
    from selfref_tui.ui.screens.restore_files import RestoreFiles
    from tests.ui.test_dialog_themes import Host

    app = Host()

    async def run_before(pilot) -> None:
        app.theme = "catppuccin-latte"
        app.push_screen(RestoreFiles([("notes.txt", "put back as it was", ""),
                                      ("big.bin", "put back", "too large to restore")]))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
