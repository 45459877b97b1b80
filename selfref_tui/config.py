"""Configuration values shared by every layer.

Loading (defaults → config.toml → environment → command-line flags) lives in
:func:`load_config`. The API key itself is never stored on these values'
persisted forms: ``ProviderConfig.api_key`` is read from the environment at
start and is excluded from ``repr`` so it cannot leak into a log or the screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_KEY = "main"

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant in a terminal chat app. You manage your own context: "
    "remember durable facts about the person and the work with `remember`, drop stale ones "
    "with `forget`, call `compact` when the conversation grows long, and delegate independent "
    "sub-tasks to child agents with `fork_spawn` / `fork_gather_all`."
)


@dataclass(frozen=True)
class ProviderConfig:
    """One OpenAI-compatible endpoint and the model to use on it."""

    name: str = "default"
    base_url: str = DEFAULT_BASE_URL
    api_key: str = field(default="", repr=False)
    api_key_env: str = "OPENAI_API_KEY"
    model: str = DEFAULT_MODEL
    context_window: int = 128_000
    temperature: float | None = None
    max_output_tokens: int | None = None
    timeout_s: float = 60.0
    max_retries: int = 3
    demo: bool = False


@dataclass(frozen=True)
class AgentSettings:
    """How the runtime loop behaves, independent of the endpoint."""

    base_system_prompt: str = DEFAULT_SYSTEM_PROMPT
    refs_enabled: bool = True
    step_limit: int = 25
    auto_compact_ratio: float = 0.8
    fork_max_depth: int = 1
    max_concurrent_forks: int = 4
    max_forks_per_turn: int = 10
    fd_threshold_chars: int = 8_000
    allowed_roots: tuple[Path, ...] = ()


@dataclass(frozen=True)
class AppConfig:
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    agent: AgentSettings = field(default_factory=AgentSettings)
    profiles: dict[str, ProviderConfig] = field(default_factory=dict)
    keymap: dict[str, str] = field(default_factory=dict)
    data_dir: Path | None = None
    key: str = DEFAULT_KEY
    #: True when neither an API key nor a base URL was configured anywhere.
    unconfigured: bool = False
