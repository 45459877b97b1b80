"""The dialogs not read by test_themes.py are readable in every built-in theme too.

Each is opened in the running app after the theme is chosen, and every letter and
digit inside its box must stand at least :data:`~tests.ui.contrast.READABLE` from
its ground (tests/ui/contrast.py). Before: /mcp's picked server was its coloured
words on the theme's strong cursor colour (1.0:1 on rose-pine-dawn: the name in
the colour behind it), and the titles of the files-restore, compaction-review,
confirm and choice dialogs were the raw border colour (1.4:1 on textual-light), and
a file the restore dialog cannot put back was Textual's disabled grey (2.5:1).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.theme import BUILTIN_THEMES
from textual.widgets import Button, Static

from selfref_tui.ui.app import SelfRefApp
from selfref_tui.ui.screens import ConfirmScreen
from selfref_tui.ui.screens.choice_list import ChoiceList
from selfref_tui.ui.screens.compaction_review import CompactionReviewScreen
from selfref_tui.ui.screens.mcp_servers import McpServersScreen
from selfref_tui.ui.screens.restore_files import RestoreFiles
from selfref_tui.ui.theme_actions import ThemeActions
from tests.mcp.test_mcp_screen import ROWS
from tests.ui.contrast import describe, unreadable

THEMES = [name for name in BUILTIN_THEMES if not name.startswith("ansi")]

DIALOGS: dict[str, Callable[[], Screen]] = {
    "mcp": lambda: McpServersScreen(ROWS),  # the cursor starts on the failed server
    "restore": lambda: RestoreFiles([("notes.txt", "put back as it was", ""),
                                     ("big.bin", "put back", "too large to restore")]),
    "compaction review": lambda: CompactionReviewScreen("## Summary\nThe person likes Python."),
    "confirm": lambda: ConfirmScreen("Delete conversation 'notes'?"),
    "choices": lambda: ChoiceList("Profiles", [("local", "llama.cpp"), ("demo", "offline")]),
}


class Host(ThemeActions, App):
    """The app's stylesheet and its readable theme variables, around one dialog at a time."""

    CSS_PATH = SelfRefApp.CSS_PATH
    read_only = True  # a theme set here is never saved to a config.toml
    _theme_saved = ""

    def compose(self) -> ComposeResult:
        yield Static("host")


@pytest.mark.parametrize("name", list(DIALOGS))
async def test_dialog_is_readable_in_every_theme(name):
    app = Host()
    failures = []
    async with app.run_test(size=(100, 30)) as pilot:
        for theme in THEMES:
            app.theme = theme
            app.push_screen(DIALOGS[name]())
            await pilot.pause()
            await pilot.pause()
            # Buttons are left out here: the test below holds every variant's label to
            # the text colours' floor, at rest and hovered
            buttons = [button.region for button in app.screen.query(Button)]
            bad = [cell for cell in unreadable(app, region=app.screen.children[0].region)
                   if not any(region.contains(cell.x, cell.y) for region in buttons)]
            if bad:
                failures.append(f"{theme}:\n{describe(bad, app)}")
            app.pop_screen()
            await pilot.pause()
    assert not failures, "\n".join(failures)


class Buttons(Screen):
    """A button of each variant, none focused (a focused one is tinted)."""

    AUTO_FOCUS = ""

    def compose(self) -> ComposeResult:
        from textual.containers import Horizontal

        with Horizontal():
            for variant in ("default", "primary", "success", "warning", "error"):
                yield Button(variant.upper(), variant=variant, id=variant)


async def test_button_labels_read_at_4_5_to_1_in_every_theme_at_rest_and_hovered():
    """"Restore ticked files" was Textual's off-white on catppuccin-latte's orange, 2.3:1
    (and 3:1 or less on a few others: solarized, flexoki, nord's red). Every label now
    reaches the floor the theme's text colours keep (MIN_CONTRAST)."""
    from selfref_tui.ui.theme_colors import MIN_CONTRAST

    app = Host()
    failures = []
    async with app.run_test(size=(100, 10)) as pilot:
        for theme in THEMES:
            app.theme = theme
            app.push_screen(Buttons())
            await pilot.pause()
            for button in [None, *app.screen.query(Button)]:
                if button is not None:
                    await pilot.hover(button)
                    await pilot.pause()
                for region in [b.region for b in app.screen.query(Button)]:
                    bad = unreadable(app, minimum=MIN_CONTRAST, region=region)
                    if bad:
                        hovered = f" ({button.id} hovered)" if button is not None else ""
                        failures.append(f"{theme}{hovered}:\n{describe(bad, app)}")
            app.pop_screen()
            await pilot.pause()
    assert not failures, "\n".join(failures)
