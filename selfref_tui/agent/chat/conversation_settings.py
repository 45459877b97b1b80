"""The model, profile and instructions of the conversation on screen.

``/model`` and ``/profile`` switch the endpoint and model for the rest of the
conversation, ``/instructions`` sets text the system prompt carries; the key
remembers all three (``selfref/key_settings.py``), so opening it again — in
this window after a switch, or in the next start — runs it the way it was
left. A key that chose nothing runs on the window's provider (the config's,
or the demo server's).

The demo model is never remembered: ``--demo`` (or the welcome screen's
"try the demo") is how this window runs, not a conversation's choice. A
conversation begun in the demo goes on with the configured model in a window
without it, and one that chose a model or profile runs on the demo here
(the demo server answers as one model) and on its choice again elsewhere.

They are invocation configuration, not history: a switch writes the key's
settings file, never a patch, and the next compile renders with them. The
model's window is learnt again after a switch (the app asks, as at start-up).
A mixin of :class:`~selfref_tui.agent.chat.controller.ChatController`.
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from selfref_tui.config import ConfigError, ProviderConfig, chosen_provider

from .refusals import NotRemembered, Refused

if TYPE_CHECKING:
    from selfref_tui.agent.protocols import MemoryLike
    from selfref_tui.agent.turn.loop import Agent
    from selfref_tui.config import AppConfig
    from selfref_tui.selfref.key_settings import KeySettings

T = TypeVar("T")

#: how long the model picker waits for the server's list before offering a typed name only
MODELS_WAIT_S = 5.0
MAX_MODEL_NAME = 200
#: ``/profile default``: back to the window's own provider (unless a profile has the name)
DEFAULT_PROFILE = "default"


class ConversationSettings:
    """What the key on screen remembers of how it is run, and the switches that change it."""

    if TYPE_CHECKING:  # from Startup and KeyLifecycle
        config: AppConfig
        key: str
        agent: Agent | None
        _demo_provider: ProviderConfig | None
        _chosen: ProviderConfig | None

        @property
        def busy(self) -> bool: ...
        def _agent(self) -> Agent: ...
        def check_ready(self) -> None: ...
        def check_writable(self, what: str) -> None: ...
        async def _in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    # ------------------------------------------------------------ reading

    @property
    def base_provider(self) -> ProviderConfig:
        """The window's provider: the config's, or the demo server's once it runs."""
        return self._demo_provider or self.config.provider

    def key_settings(self) -> KeySettings:
        """The settings of the key on screen (defaults while none is open)."""
        from selfref_tui.selfref.key_settings import KeySettings

        if self.agent is None:
            return KeySettings()
        try:
            settings = getattr(self.agent.memory(self.key), "settings", None)
        except Exception:
            return KeySettings()
        return settings if settings is not None else KeySettings()

    @property
    def instructions(self) -> str:
        return self.key_settings().instructions

    def provider_for(self, settings: KeySettings) -> ProviderConfig:
        """The endpoint and model a key with ``settings`` runs on (ConfigError: the profile
        it names is not in config.toml)."""
        return chosen_provider(self.config, self.base_provider, settings.profile,
                               settings.model)

    async def server_models(self) -> list[str] | None:
        """The server's models (``/v1/models``), sorted; None when it does not answer."""
        try:
            names = await asyncio.wait_for(self._agent().provider.list_models(), MODELS_WAIT_S)
        except Exception:  # down, refused, not listing: the picker takes a typed name
            return None
        return sorted({str(n) for n in names if n})

    # ------------------------------------------------------------ opening a key

    async def use_key_settings(self, memory: MemoryLike) -> tuple[bool, list[str]]:
        """Run the key just opened the way it remembers: (provider changed, warnings)."""
        from selfref_tui.selfref.key_settings import KeySettings

        settings = getattr(memory, "settings", None) or KeySettings()
        if self.base_provider.demo and (settings.model or settings.profile):
            # --demo is for this window: its server answers as one model, so a model or
            # profile the conversation chose is left for the next window without --demo
            # (a chosen model failed every turn here: "model not found").
            return await self._use_provider(self.base_provider), []
        warnings: list[str] = []
        try:
            provider = self.provider_for(settings)
        except ConfigError:
            warnings.append(
                f"This conversation last used the profile {settings.profile!r}, which "
                "config.toml no longer has; it runs on the default provider — /profile "
                "picks another."
            )
            provider = self.provider_for(replace(settings, profile=""))
        return await self._use_provider(provider), warnings

    # ------------------------------------------------------------ switching

    async def choose_model(self, name: str) -> ProviderConfig:
        """``/model NAME``: this conversation runs on ``name`` from now on."""
        name = _model_name(name)
        settings = self._check_switch("switch models")
        again = f"/model {name}"
        if not settings.profile and name == self.base_provider.model:
            name = ""  # back to the window's own model: nothing left to remember
        return await self._switch(replace(settings, model=name), again)

    async def choose_profile(self, name: str) -> ProviderConfig:
        """``/profile NAME``: the ``[providers.NAME]`` endpoint, with its own model.

        ``/profile default`` (when no profile has that name): the window's own provider
        again, nothing chosen left to remember; without it a conversation that once
        took a profile could never go back to the one it started on.
        """
        settings = self._check_switch("switch profiles")
        name = name.strip()
        if name == DEFAULT_PROFILE and name not in self.config.profiles:
            return await self._switch(replace(settings, profile="", model=""),
                                      f"/profile {name}")
        return await self._switch(replace(settings, profile=name, model=""), f"/profile {name}")

    def profile_names(self) -> list[str]:
        """The ``[providers.NAME]`` profiles of config.toml, sorted."""
        return sorted(self.config.profiles)

    async def set_instructions(self, text: str) -> str:
        """``/instructions``: the conversation's own instructions (empty: none); the text
        kept, trimmed."""
        from selfref_tui.selfref.key_settings import check_instructions

        self.check_ready()
        self.check_writable("change instructions")
        try:
            text = check_instructions(text)
        except ValueError as exc:
            raise Refused(str(exc)) from None
        from selfref_tui.selfref.errors import StoreError

        memory = self._agent().memory(self.key)
        try:
            await self._in_thread(memory.save_settings,
                                  replace(memory.settings, instructions=text))
        except StoreError as exc:  # the disk's refusal, said; the caller keeps the text
            raise Refused(str(exc), "error") from None
        return text

    def _check_switch(self, what: str) -> KeySettings:
        self.check_ready()
        self.check_writable(what)
        if self.busy:
            raise Refused(f"A turn is running; press Esc first, then {what.split()[0]}.")
        return self.key_settings()

    async def _switch(self, settings: KeySettings, again: str) -> ProviderConfig:
        """Run on ``settings`` from now on and remember them; ``again`` is the command that
        asks once more (said when the disk refuses)."""
        try:
            provider = self.provider_for(settings)
        except ConfigError as exc:
            raise Refused(str(exc), "error") from None
        from selfref_tui.selfref.errors import StoreError

        memory = self._agent().memory(self.key)
        # The agent talks to the new provider before anything is awaited: a message sent
        # while the choice is saved goes to it. Swapped after the save, that message's
        # turn started on the old client, which the swap then closed under it. So when
        # the save fails after such a turn began, the new provider is the one in use.
        before = self._swap_provider(provider)
        try:
            await self._in_thread(memory.save_settings, settings)
        except BaseException as exc:
            if before is None:
                pass
            elif not self.busy:  # not remembered: back as it was
                await self._put_back(before)
                if isinstance(exc, StoreError):
                    raise Refused(f"Still on {before[1]}: {exc}", "error") from None
            else:  # a turn already runs on the new client: it stays, the old one goes
                await before[0].aclose()
                if isinstance(exc, StoreError):
                    raise NotRemembered(
                        f"{provider.model} runs this conversation for now but is not "
                        f"remembered ({again} again once saving works): {exc}", provider,
                    ) from None
            if isinstance(exc, StoreError):
                raise Refused(str(exc), "error") from None
            raise
        if before is not None:
            await before[0].aclose()
        return provider

    async def _use_provider(self, provider: ProviderConfig) -> bool:
        """Make the agent talk to ``provider``; False when it already does."""
        before = self._swap_provider(provider)
        if before is None:
            return False
        await before[0].aclose()
        return True

    def _swap_provider(self, provider: ProviderConfig) -> tuple[Any, ...] | None:
        """The agent on ``provider`` at once; what it ran on before (its client first:
        the caller closes it), or None when it already runs on ``provider``."""
        agent = self._agent()
        if getattr(agent.provider, "config", None) == provider:
            return None
        from selfref_tui.agent.provider.client import Provider
        from selfref_tui.context.tokens import Calibration

        before = (agent.provider, agent.model, agent.context_window, agent.calibration,
                  self._chosen)
        agent.provider = Provider(provider)
        agent.model = provider.model
        if provider.context_window:
            agent.context_window = provider.context_window
        # counts were calibrated against the old server's usage reports
        agent.calibration = Calibration()
        self._chosen = provider if provider != self.base_provider else None
        return before

    async def _put_back(self, before: tuple[Any, ...]) -> None:
        """Undo :meth:`_swap_provider` (while no turn runs): the new client closed."""
        agent = self._agent()
        new = agent.provider
        agent.provider, agent.model, agent.context_window, agent.calibration, self._chosen = (
            before)
        await new.aclose()


def _model_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise Refused("Give a model name, for example /model gpt-4o; /model alone lists them.")
    if len(name) > MAX_MODEL_NAME or any(
        ch.isspace() or unicodedata.category(ch).startswith("C") for ch in name
    ):
        raise Refused("A model name is one word without spaces or control characters; "
                      "/model alone lists the server's models.")
    return name


__all__ = ["ConversationSettings"]
