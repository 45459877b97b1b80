"""``/model``, ``/profile`` and ``/instructions``, mixed into the app.

The controller (``agent/conversation_settings.py``) switches and remembers;
this mixin asks (the model picker, the instructions editor) and shows the
outcome: the header names the new model, the window is learnt again, one
notification says what changed and for how long. A choice the disk refused to
save is undone, unless a turn already runs on it: then the header names it all
the same (it is the model in use) and the notification says it is not remembered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work

from selfref_tui.agent.chat.controller import Refused
from selfref_tui.agent.chat.refusals import NotRemembered

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.config import ProviderConfig


class SettingsActions:
    """What a conversation runs on: its model, its profile, its instructions."""

    if TYPE_CHECKING:  # what the app provides
        controller: ChatController
        key: str

        def notify(self, message: str, **kwargs: Any) -> None: ...
        def refused(self, exc: Refused, extra: str = "") -> None: ...
        def provider_switched(self) -> None: ...
        def _refresh_usage(self) -> Any: ...
        async def push_screen_wait(self, screen: Any) -> Any: ...

    async def switch_model(self, name: str) -> bool:
        """``/model NAME``; False (the command stays in the input) when refused."""
        return await self._switch(self.controller.choose_model(name),
                                  lambda provider: f"Model {provider.model}")

    async def switch_profile(self, name: str) -> bool:
        """``/profile NAME``; False when refused (an unknown profile names the known ones)."""
        from selfref_tui.agent.chat.conversation_settings import DEFAULT_PROFILE

        def said(provider: ProviderConfig) -> str:
            if name.strip() == DEFAULT_PROFILE and not self.controller.key_settings().profile:
                return f"The provider the app started with ({provider.model})"
            return f"Profile {provider.name} ({provider.model})"

        return await self._switch(self.controller.choose_profile(name), said)

    def list_profiles(self) -> None:
        """``/profile`` alone: the profiles to switch to, and the way back (it said only
        "Usage: /profile NAME", and nothing named one)."""
        names = self.controller.profile_names()
        current = self.controller.key_settings().profile
        where = "/profile default goes back to the provider the app started with."
        if not names:
            self.notify("config.toml has no [providers.NAME] profile to switch to: add one "
                        f"(see docs/configuration.md), then /profile NAME. {where}", timeout=10)
            return
        from selfref_tui.safety import name_line  # config.toml's names: shown inert

        listed = ", ".join(name_line(n, 60) + (" (in use)" if n == current else "")
                           for n in names)
        self.notify(f"Profiles in config.toml: {listed}. /profile NAME switches this "
                    f"conversation; {where}", timeout=10)

    async def _switch(self, choose: Awaitable[ProviderConfig],
                      what: Callable[[ProviderConfig], str]) -> bool:
        """Await the controller's switch: the refusal said, or the new provider shown and
        ``what`` it is named in one notification; False when refused."""
        try:
            provider = await choose
        except NotRemembered as exc:  # a turn already runs on it: shown as in use, said once
            self.provider_switched()
            self.refused(exc)
            return False
        except Refused as exc:
            self.refused(exc)
            return False
        self.provider_switched()
        self.notify(f"{what(provider)} for the rest of this conversation; it is remembered.",
                    timeout=5)
        return True

    @work(exclusive=True, group="model-picker")
    async def pick_model(self) -> None:
        """``/model`` alone: the server's models (when it answers), or a typed name."""
        from selfref_tui.ui.screens.model_picker import ModelPicker

        try:
            self.controller.check_ready()
        except Refused as exc:
            self.refused(exc)
            return
        models = await self.controller.server_models()
        chosen = await self.push_screen_wait(ModelPicker(models, self.controller.provider.model))
        if chosen:
            await self.switch_model(chosen)

    @work(exclusive=True, group="instructions")
    async def edit_instructions(self) -> None:
        """``/instructions``: the editor, then the text kept for this conversation."""
        from selfref_tui.ui.screens.instructions_editor import InstructionsEditor

        try:
            self.controller.check_ready()
            self.controller.check_writable("change instructions")
        except Refused as exc:
            self.refused(exc)
            return
        key = self.key
        text, error = self.controller.instructions, ""
        while True:
            text = await self.push_screen_wait(InstructionsEditor(text, key, error))
            if text is None or key != self.key:
                return
            try:
                kept = await self.controller.set_instructions(text)
            except Refused as exc:  # too long, or the disk refused: the editor again, with
                error = str(exc)     # what was typed and why (Esc leaves them as they were)
                continue
            break
        self._refresh_usage()
        self.notify("Instructions saved for this conversation." if kept else
                    "This conversation has no instructions now.", timeout=5)
