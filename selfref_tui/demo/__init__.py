"""The offline demo model: an OpenAI-compatible server inside the package.

The app and ``selfref-tui ask --demo`` start :func:`demo_server` and talk to it
through the same ``openai`` client path as a real provider.
"""

from __future__ import annotations

from dataclasses import replace

from selfref_tui.config import DEMO_API_KEY, DEMO_MODEL, AppConfig, demo_provider
from selfref_tui.demo.script import (
    DEMO_SCRIPT,
    Drop,
    Echo,
    Events,
    Hang,
    HttpError,
    Malformed,
    Overflow,
    Reply,
    Script,
    Stall,
    Step,
    ToolCall,
)
from selfref_tui.demo.server import DemoServer

#: A realistic pace for people watching; tests pass None (as fast as possible).
DEMO_TOKENS_PER_S = 200.0


def demo_server(tokens_per_s: float | None = DEMO_TOKENS_PER_S) -> DemoServer:
    """The server behind ``--demo``: the scripted demo model at a human pace."""
    return DemoServer(DEMO_SCRIPT, tokens_per_s=tokens_per_s, models=(DEMO_MODEL,),
                      api_key=DEMO_API_KEY)


def with_demo_url(config: AppConfig, base_url: str) -> AppConfig:
    """``config`` pointed at a started demo server (``load_config(demo=True)`` has no URL)."""
    return replace(config, provider=demo_provider(base_url), unconfigured=False)


__all__ = [
    "DEMO_API_KEY", "DEMO_MODEL", "DEMO_SCRIPT", "DEMO_TOKENS_PER_S", "DemoServer", "Drop",
    "Echo", "Events", "Hang", "HttpError", "Malformed", "Overflow", "Reply", "Script", "Stall",
    "Step", "ToolCall",
    "demo_provider", "demo_server", "with_demo_url",
]
