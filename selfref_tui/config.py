"""Configuration values shared by every layer.

Loading (defaults → config.toml → environment → command-line flags) lives in
``config_load.load_config``. The API key itself is never stored on these values'
persisted forms: ``ProviderConfig.api_key`` is read from the environment at
start and is excluded from ``repr`` so it cannot leak into a log or the screen.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_KEY = "main"
#: the windows believed, from a setting or a server: below, not even the tools fit; above,
#: no model has one (a server's absurd answer would turn compaction off in effect)
MIN_WINDOW = 256
MAX_WINDOW = 10_000_000

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
    #: None: not configured; the runtime asks the server (see agent/provider/window.py)
    context_window: int | None = None
    #: where context_window came from: "flag", "env", "profile" or "demo"
    window_source: str = ""
    temperature: float | None = None
    max_output_tokens: int | None = None
    #: the read timeout: how long to wait for the first token and between tokens,
    #: unless first_byte_timeout_s / idle_timeout_s say otherwise
    timeout_s: float = 120.0
    #: how long to wait for the TCP (and TLS) connection
    connect_timeout_s: float = 10.0
    #: how long a server that accepted the request may take to send its first event
    first_byte_timeout_s: float | None = None
    #: how long a stream may go silent between events
    idle_timeout_s: float | None = None
    max_retries: int = 3
    demo: bool = False

    @property
    def first_byte_timeout(self) -> float:
        return self.first_byte_timeout_s if self.first_byte_timeout_s else self.timeout_s

    @property
    def idle_timeout(self) -> float:
        return self.idle_timeout_s if self.idle_timeout_s else self.timeout_s


#: the offline demo model: its name and key (the server itself is ``selfref_tui.demo``)
DEMO_MODEL = "selfref-demo"
DEMO_API_KEY = "demo"


def demo_provider(base_url: str) -> ProviderConfig:
    """The ``--demo`` profile, pointed at a started demo server (``""`` before it starts).

    Here, not in ``demo/``: ``load_config(demo=True)`` returns it, and config imports
    nothing else of the package.
    """
    return ProviderConfig(name="demo", base_url=base_url, api_key=DEMO_API_KEY,
                          api_key_env="", model=DEMO_MODEL, context_window=32_000,
                          window_source="demo", max_retries=0, timeout_s=30.0, demo=True)


#: the values of ``[agent] memory_writes``
MEMORY_WRITES = ("allow", "ask")


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
    #: a run that cannot ask the person (``ask``) may change existing files; the app always asks
    allow_overwrite: bool = False
    #: the app shows the model's compaction summary before it is applied (edit, accept, cancel)
    review_compaction: bool = False
    #: "allow": the model's remember/forget apply at once; "ask": the person says yes first
    #: (a run that cannot ask refuses them unless ``allow_memory``)
    memory_writes: str = "allow"
    #: ``ask --allow-memory``: memory writes go ahead when no one can be asked
    allow_memory: bool = False


@dataclass(frozen=True)
class McpServerConfig:
    """One ``[mcp.servers.NAME]`` table: a stdio command or a streamable HTTP URL.

    ``env`` and ``headers`` keep the values as written; ``${VAR}`` references are
    resolved when the server starts (:meth:`resolved_env`, :meth:`resolved_headers`),
    so a missing variable fails that one server with a notice instead of the app.
    Header values must name an environment variable: a secret never sits in the file.
    """

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    #: tool names (as the server spells them) that run without asking; "*" = all
    trust: tuple[str, ...] = ()
    enabled: bool = True
    start_timeout_s: float = 30.0
    #: a tools/call not answered within this is cancelled and becomes a tool error
    call_timeout_s: float = 300.0
    #: a message from the server larger than this is refused and the connection dropped
    max_message_mb: float = 20.0

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def trusts(self, tool: str) -> bool:
        return "*" in self.trust or tool in self.trust

    def resolved_env(self, env: Mapping[str, str] = os.environ) -> dict[str, str]:
        return {k: expand_env_refs(v, env, f"[mcp.servers.{self.name}] env.{k}")
                for k, v in self.env}

    def resolved_headers(self, env: Mapping[str, str] = os.environ) -> dict[str, str]:
        return {k: expand_env_refs(v, env, f"[mcp.servers.{self.name}] headers.{k}")
                for k, v in self.headers}


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|^\$([A-Za-z_][A-Za-z0-9_]*)$")


def expand_env_refs(value: str, env: Mapping[str, str], where: str) -> str:
    """``${VAR}`` anywhere (or a whole value ``$VAR``) replaced by the variable's value."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in env:
            raise ConfigError(f"{where} names ${name}, which is not set; export it and restart")
        return env[name]

    return _ENV_REF.sub(one, value)


@dataclass(frozen=True)
class AppConfig:
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    agent: AgentSettings = field(default_factory=AgentSettings)
    profiles: dict[str, ProviderConfig] = field(default_factory=dict)
    keymap: dict[str, str] = field(default_factory=dict)
    data_dir: Path | None = None
    #: what chose ``data_dir`` ("--data-dir", "SELFREF_DATA_DIR", …), named in its errors
    data_dir_source: str = "the platform's data dir"
    key: str = DEFAULT_KEY
    #: no --key was given: the app opens the conversation it showed last under this data
    #: dir (``selfref/last_used.py``), ``key`` when there is none; commands use ``key``
    resume: bool = False
    #: True when neither an API key nor a base URL was configured anywhere.
    unconfigured: bool = False
    mcp_servers: tuple[McpServerConfig, ...] = ()
    #: the config.toml this was read from (an "always allow" answer is saved there)
    config_path: Path | None = None
    #: the app's colour theme (a Textual theme name; "": Textual's default), saved there
    #: when the person picks one
    theme: str = ""


APP_NAME = "selfref-tui"


class ConfigError(Exception):
    """A configuration problem, worded as one line naming the file and what to change."""


def default_config_path(env: Mapping[str, str] = os.environ) -> Path:
    if env.get("SELFREF_CONFIG"):
        return Path(env["SELFREF_CONFIG"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_data_dir(env: Mapping[str, str] = os.environ) -> Path:
    if env.get("SELFREF_DATA_DIR"):
        return Path(env["SELFREF_DATA_DIR"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def profile_provider(config: AppConfig, name: str,
                     env: Mapping[str, str] = os.environ) -> ProviderConfig:
    """The ``[providers.NAME]`` profile as ``--profile NAME`` would start it, for a switch
    inside the app (``/profile``); ConfigError names the known profiles."""
    profile = config.profiles.get(name)
    if profile is None:
        known = ", ".join(sorted(config.profiles)) or "none defined"
        where = config.config_path or default_config_path(env)
        raise ConfigError(f"no provider profile named '{name}' in {where} (known: {known}); "
                          f"add a [providers.{name}] table there")
    if profile.context_window is not None:
        profile = replace(profile, window_source="profile")
    api_key = env.get(profile.api_key_env, "") if profile.api_key_env else ""
    return replace(profile, api_key=api_key, base_url=profile.base_url.rstrip("/"))


def with_model(provider: ProviderConfig, model: str) -> ProviderConfig:
    """``provider`` asked for another model. The window configured (or learnt) for the
    old model is dropped: the runtime learns the new model's (agent/provider/window.py)."""
    if model == provider.model:
        return provider
    return replace(provider, model=model, context_window=None, window_source="")


def chosen_provider(config: AppConfig, base: ProviderConfig, profile: str,
                    model: str) -> ProviderConfig:
    """What a conversation that chose ``profile`` and ``model`` ("" each: nothing) runs on,
    ``base`` being the window's own provider (ConfigError: no such profile)."""
    provider = profile_provider(config, profile) if profile else base
    return with_model(provider, model) if model else provider
