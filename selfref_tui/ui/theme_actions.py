"""The theme: kept in config.toml when the person picks one, its text colours readable.

Mixed into the app. A theme chosen in the palette is written to config.toml
(off the loop, a failure said in one notification), so the next start opens
in it; a read-only app, or a theme set before the app runs (a test, a
benchmark), writes nothing. Every theme's text colours are raised to a
contrast floor before any widget reads them (:mod:`selfref_tui.ui.theme_colors`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work

from selfref_tui.ui.theme_colors import readable_variables

if TYPE_CHECKING:
    from selfref_tui.agent.chat.controller import ChatController


class ThemeActions:
    """The theme saved when it changes, and its variables made readable."""

    if TYPE_CHECKING:  # what the app provides
        controller: ChatController
        read_only: bool
        is_running: bool
        theme_variables: dict[str, str]
        #: the theme config.toml holds: a change to another is saved there
        _theme_saved: str

        def notify(self, message: str, **kwargs: Any) -> None: ...

    def watch_theme(self, name: str) -> None:
        """The person picked a theme (ctrl+p → Theme): keep it for the next start.

        Set before the app runs (a test, a benchmark), it is that run's, not a choice.
        """
        if name != self._theme_saved and not self.read_only and self.is_running:
            self._theme_saved = name
            self._save_theme(name)

    @work(exclusive=True, group="theme", exit_on_error=False)
    async def _save_theme(self, name: str) -> None:
        import asyncio

        from selfref_tui.config import ConfigError

        try:
            await asyncio.to_thread(self.controller.save_theme, name)
        except (ConfigError, OSError) as exc:
            self.notify(f"The theme {name} is used now but was not saved: {exc}",
                        severity="warning", timeout=10)

    def get_css_variables(self) -> dict[str, str]:
        """The theme's variables, every text colour readable on its background.

        See :mod:`selfref_tui.ui.theme_colors`: the transcript, the sidebar, the
        dialogs and Textual's own footer and code highlighting take their text
        colours from these variables.
        """
        variables = readable_variables(super().get_css_variables())
        self.theme_variables = variables
        return variables
