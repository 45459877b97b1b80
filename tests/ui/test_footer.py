"""The footer: every key it shows is whole and uncovered, at 80 columns as at 120."""

from __future__ import annotations

import itertools

import pytest

from selfref_tui.ui.widgets.app_footer import AppFooter
from tests.ui.helpers import DOWN_URL, make_app, started, wait_until

#: what the footer shows at any width (ctrl+up/down share "Step")
SHOWN = {"abort", "ref_prev", "ref_next", "toggle_sidebar", "find", "switch_key", "help", "quit"}


@pytest.mark.parametrize(("width", "compact"), [(80, True), (120, False)])
async def test_every_key_the_footer_shows_is_whole_and_uncovered(tmp_path, width, compact):
    app = make_app(tmp_path, DOWN_URL)
    async with app.run_test(size=(width, 24)) as pilot:
        await started(pilot, app)
        await pilot.pause()
        footer = app.query_one(AppFooter)
        assert footer.compact is compact  # Textual's own compact style, below 100 columns
        shown = [key for key in footer.query("FooterKey") if key.display]
        by_action = {key.action: key.region for key in shown}
        assert set(by_action) >= SHOWN, sorted(by_action)
        for action, region in by_action.items():
            assert region.x >= 0 and region.right <= width, (action, region)
            covered = [other.action for other in shown
                       if other.action != action and other.region.overlaps(region)]
            assert not covered, (action, covered)
        # The words say what the keys do: a conversation is one, ctrl+up/down step.
        labels = {key.action: str(key.description) for key in shown}
        assert labels["switch_key"] == "Conversations"
        groups = [str(w.render()) for w in footer.query("FooterLabel") if w.display]
        assert "Step" in groups, groups
        if compact:
            assert "command_palette" not in by_action  # ctrl+p still opens it; F1 lists it
            # Unpadded keys: a blank column between neighbours, "^↑^↓ Step ^b Sidebar", never
            # "Step^b" (the keys of one group, "^↑^↓", stand together)
            parts = sorted((w for w in footer.query("FooterKey, FooterLabel") if w.display),
                           key=lambda w: w.region.x)
            for left, right in itertools.pairwise(parts):
                if not (left.has_class("-grouped") and right.has_class("-grouped")):
                    assert left.region.right < right.region.x, (left, right)


async def test_no_two_palette_entries_share_a_name(tmp_path):
    """Two were called "Keys" (Textual's key panel and the conversation switcher)."""
    import re

    app = make_app(tmp_path, DOWN_URL)
    async with app.run_test(size=(120, 24)) as pilot:
        await started(pilot, app)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        names = [re.sub(r" \([^)]*\)$", "", str(title)) for title in titles]
        assert len(names) == len(set(names)), sorted(names)
        assert "Conversations" in names and "New conversation" in names
        assert {"Step back", "Step on"} <= set(names)


async def test_the_palette_runs_every_command_that_needs_no_argument(tmp_path):
    """ctrl+p → "model" finds /model and opens its picker (only commands without an
    optional argument were listed: no /model, /save, /rewind, /compact)."""
    from selfref_tui.demo.server import DemoServer
    from selfref_tui.ui.commands import COMMANDS
    from selfref_tui.ui.screens.model_picker import ModelPicker
    from tests.ui.helpers import wait_until

    async with DemoServer([], models=("small", "large")) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=(120, 30)) as pilot:
            await started(pilot, app)
            titles = {str(command.title) for command in app.get_system_commands(app.screen)}
            assert {f"/{spec.name}" for spec in COMMANDS if not spec.min_args} <= titles
            assert {"/model", "/save", "/rewind", "/compact", "/edit", "/branch"} <= titles
            assert "/remember" not in titles  # it needs its text
            actions = next(command for command in app.get_system_commands(app.screen)
                           if str(command.title).startswith("Actions"))
            assert "pin or unpin" in actions.help  # F8 offers it; its help said nothing of it
            await pilot.press("ctrl+p", *"/model")
            await wait_until(pilot, lambda: any(
                "/model" in str(option.prompt)
                for option in app.screen.query("CommandList").first().options),
                what="/model offered")
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker),
                             what="the model picker")


def _whole_keys(footer: AppFooter, width: int) -> set[str]:
    """The actions of the keys shown, after checking none runs past ``width``."""
    shown = [key for key in footer.query("FooterKey") if key.display]
    for key in shown:
        assert key.region.width and key.region.right <= width, (key.action, key.region)
    return {key.action for key in shown}


async def test_a_60_column_footer_hides_whole_keys_and_keeps_help(tmp_path):
    """At 60 columns "^o Conversati" ran off the edge and F1 Help was gone."""
    app = make_app(tmp_path, DOWN_URL)
    async with app.run_test(size=(60, 20)) as pilot:
        await started(pilot, app)
        footer = app.query_one(AppFooter)

        def fits(width: int) -> bool:
            keys = [key for key in footer.query("FooterKey") if key.display]
            return bool(keys) and all(key.region.right <= width for key in keys)

        await wait_until(pilot, lambda: fits(60), what="the footer fits 60 columns")
        shown = _whole_keys(footer, 60)
        assert "help" in shown and "quit" in shown, shown
        assert SHOWN - shown  # something had to go
        # under a dialog too: the footer is composed again for the dialog's keys
        await pilot.press("f1")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "HelpScreen",
                         what="help")
        await pilot.pause()
        assert fits(60), [(key.action, key.region) for key in footer.query("FooterKey")
                          if key.display]
        await pilot.press("escape")
        await pilot.resize_terminal(120, 24)
        await wait_until(pilot, lambda: _whole_keys(footer, 120) >= SHOWN,
                         what="every key back at 120 columns")
