"""Modal screens: each returns its result through ``dismiss``."""

from __future__ import annotations

from selfref_tui.ui.screens.confirm import ConfirmScreen
from selfref_tui.ui.screens.context_view import ContextView
from selfref_tui.ui.screens.export_dialog import ExportDialog
from selfref_tui.ui.screens.help import SLASH_COMMANDS, HelpScreen, keys_from_app
from selfref_tui.ui.screens.key_switcher import KeySwitcher
from selfref_tui.ui.screens.overwrite_prompt import OverwritePrompt
from selfref_tui.ui.screens.welcome import WelcomeScreen

__all__ = [
    "SLASH_COMMANDS",
    "ConfirmScreen",
    "ContextView",
    "ExportDialog",
    "HelpScreen",
    "KeySwitcher",
    "OverwritePrompt",
    "WelcomeScreen",
    "keys_from_app",
]
