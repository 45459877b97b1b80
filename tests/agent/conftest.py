"""A harness: the in-package demo server, the real provider, a real store under tmp_path."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from selfref_tui.config import AgentSettings, ProviderConfig
from selfref_tui.selfref import SelfReference
from tests.agent.helpers import STALL_PATIENCE_S


class Harness:
    def __init__(self, tmp_path, script, *, settings: AgentSettings | None = None,
                 context_window: int = 128_000, max_retries: int = 2, base_url: str | None = None,
                 tokens_per_s: float | None = None,
                 server_options: dict[str, Any] | None = None) -> None:
        self.tmp_path = tmp_path
        self.script = script
        self.settings = settings or AgentSettings(base_system_prompt="You are a test agent.")
        self.context_window = context_window
        self.max_retries = max_retries
        self.base_url = base_url
        self.tokens_per_s = tokens_per_s
        self.server_options = server_options or {}
        self.events: list[Any] = []

    async def __aenter__(self) -> Harness:
        from selfref_tui.agent.provider.client import Provider
        from selfref_tui.agent.turn.loop import Agent
        from selfref_tui.demo.server import DemoServer

        self.server = DemoServer(self.script, tokens_per_s=self.tokens_per_s,
                                 **self.server_options)
        url = await self.server.start()
        config = ProviderConfig(base_url=self.base_url or url, api_key="sk-test",
                                model="selfref-demo", max_retries=self.max_retries,
                                timeout_s=STALL_PATIENCE_S)
        self.provider = Provider(config)
        self.selfref = SelfReference(self.tmp_path / "data")
        self.agent = Agent(self.selfref, self.provider, self.settings, self.events.append,
                           model="selfref-demo", context_window=self.context_window)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.agent.aclose()
        await self.server.stop()
        self.selfref.close()

    def of(self, cls: type, key: str | None = None) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls) and (key is None or e.key == key)]

    def reload(self, key: str = "main"):
        """The key as a fresh process would read it from disk."""
        return SelfReference(self.tmp_path / "data").open(key, write=False)

    def with_settings(self, **changes: Any) -> Harness:
        self.settings = replace(self.settings, **changes)
        return self


@pytest.fixture
def harness(tmp_path):
    def make(script, **kwargs: Any) -> Harness:
        return Harness(tmp_path, script, **kwargs)

    return make
