"""The model's context window, known instead of guessed.

A meter that says 128k on a 4,096-token llama.cpp server compacts too late
and lets requests overflow. The window comes from, highest first: the
``--context-window`` flag, ``SELFREF_CONTEXT_WINDOW``, the profile's
``context_window`` (all three resolved by ``load_config``), then the server
itself — its ``/v1/models`` entry (vLLM's ``max_model_len``, OpenRouter's and
LM Studio's ``context_length`` and similar names), llama.cpp's ``GET /props``
at the server root (``default_generation_settings.n_ctx``), Ollama's
``POST /api/show`` (``num_ctx`` if set, else ``model_info.*.context_length``)
— then a small table of well-known hosted models; otherwise 8,192, said in a
notice. Asking the server costs up to three small HTTP requests, so it is done
once per server and model: the answer is kept in memory and, for a short
while, in the data directory (each ``ask`` is a new process). Front ends call
:func:`resolve_window` after their first frame, never before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfref_tui.config import ProviderConfig

ASSUMED_WINDOW = 8_192
#: how long a window read off a server is trusted by a later process (a local
#: server restarted with another ``-c`` must not be believed for long)
CACHE_TTL_S = 600.0
DISCOVERY_TIMEOUT_S = 5.0
CACHE_FILE = "windows.json"

#: names servers give the window in a ``/v1/models`` entry, most specific first
MODEL_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length",
                "loaded_context_length", "n_ctx", "max_seq_len", "max_input_tokens")

#: well-known hosted models (prefix → window); the longest matching prefix wins
KNOWN_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000, "gpt-4o-mini": 128_000, "gpt-4-turbo": 128_000, "gpt-4": 8_192,
    "gpt-4.1": 1_047_576, "gpt-3.5-turbo": 16_385, "o1": 200_000, "o3": 200_000,
    "o4-mini": 200_000, "gpt-5": 400_000, "claude-": 200_000, "deepseek-chat": 64_000,
    "deepseek-reasoner": 64_000, "gemini-1.5": 1_048_576, "gemini-2": 1_048_576,
    "mistral-large": 128_000, "llama-3.1": 131_072, "llama-3.3": 131_072,
}


@dataclass(frozen=True)
class Window:
    """A window size and where it came from (``flag``, ``env``, ``profile``,
    ``server /props`` …, ``known model``, ``assumed``)."""

    tokens: int
    source: str

    @property
    def assumed(self) -> bool:
        return self.source == "assumed"

    def notice(self) -> str | None:
        """The line to show when the window is a guess; None when it is known."""
        if not self.assumed:
            return None
        return (f"window unknown, assumed {self.tokens // 1024}k — set context_window in the "
                "profile, SELFREF_CONTEXT_WINDOW or --context-window")


def known_window(model: str) -> int | None:
    """The window of a well-known hosted model, by the longest matching name prefix."""
    name = model.rsplit("/", 1)[-1].lower()  # OpenRouter-style "openai/gpt-4o"
    best = max((p for p in KNOWN_WINDOWS if name.startswith(p)), key=len, default=None)
    return KNOWN_WINDOWS[best] if best else None


def server_root(base_url: str) -> str:
    """``http://host:8080/v1`` → ``http://host:8080`` (where /props and /api live)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def window_from_models(payload: Any, model: str) -> int | None:
    """The window in a ``/v1/models`` answer, from the entry for ``model`` (or the only one)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    entry = next((e for e in entries if e.get("id") == model), None)
    if entry is None and len(entries) == 1:
        entry = entries[0]
    if entry is None:
        return None
    for where in (entry, entry.get("top_provider"), entry.get("meta")):
        if isinstance(where, dict):
            for name in MODEL_FIELDS:
                value = _positive(where.get(name))
                if value:
                    return value
    return None


def window_from_props(payload: Any) -> int | None:
    """llama.cpp's ``/props``: ``default_generation_settings.n_ctx`` (or a top-level n_ctx)."""
    if not isinstance(payload, dict):
        return None
    settings = payload.get("default_generation_settings")
    if isinstance(settings, dict) and _positive(settings.get("n_ctx")):
        return _positive(settings.get("n_ctx"))
    return _positive(payload.get("n_ctx"))


def window_from_ollama(payload: Any) -> int | None:
    """Ollama's ``/api/show``: ``num_ctx`` when set (what it runs with), else the model's."""
    if not isinstance(payload, dict):
        return None
    parameters = payload.get("parameters")
    if isinstance(parameters, str):
        for line in parameters.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "num_ctx" and _positive(_int(parts[1])):
                return _positive(_int(parts[1]))
    info = payload.get("model_info")
    if isinstance(info, dict):
        for name, value in info.items():
            if isinstance(name, str) and name.endswith(".context_length") and _positive(value):
                return _positive(value)
    return None


class WindowCache:
    """Windows read off servers: in memory, and in ``path`` for ``CACHE_TTL_S`` seconds."""

    def __init__(self, path: Path | None = None, *, clock: Any = time.time) -> None:
        self.path = path
        self.clock = clock
        self._memory: dict[str, Window] = {}

    @staticmethod
    def key(base_url: str, model: str) -> str:
        return f"{base_url.rstrip('/')}|{model}"

    def get(self, base_url: str, model: str) -> Window | None:
        key = self.key(base_url, model)
        if key in self._memory:
            return self._memory[key]
        entry = self._read().get(key)
        if not isinstance(entry, dict):
            return None
        tokens, at = _positive(entry.get("tokens")), entry.get("at")
        if not tokens or not isinstance(at, int | float) or self.clock() - at > CACHE_TTL_S:
            return None
        window = Window(tokens, str(entry.get("source") or "server"))
        self._memory[key] = window
        return window

    def put(self, base_url: str, model: str, window: Window) -> None:
        key = self.key(base_url, model)
        self._memory[key] = window
        if self.path is None:
            return
        entries = self._read()
        entries[key] = {"tokens": window.tokens, "source": window.source, "at": self.clock()}
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(entries), encoding="utf-8")
            os.replace(tmp, self.path)

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}


async def ask_server(config: ProviderConfig, *,
                     timeout_s: float = DISCOVERY_TIMEOUT_S) -> tuple[Window | None, bool]:
    """The window as the server tells it, asking its three places at once.

    Returns (the window or None, whether the server answered at all): a server
    that is down now may tell its window later, so only an answer is cached.
    """
    import openai

    root = server_root(config.base_url)
    answered: list[bool] = []
    # The openai client (whatever HTTP library it carries) with its auth and
    # headers; absolute URLs reach the server root, where /props and /api live.
    client = openai.AsyncOpenAI(
        base_url=config.base_url, api_key=config.api_key or "not-needed", max_retries=0,
        timeout=openai.Timeout(timeout_s, connect=min(timeout_s, config.connect_timeout_s)))

    async def ask(method: str, path: str, body: Any = None) -> Any:
        try:
            if method == "GET":
                answer = await client.get(path, cast_to=object)
            else:
                answer = await client.post(path, body=body, cast_to=object)
        except openai.APIStatusError:
            answered.append(True)
            return None
        except (openai.APIError, ValueError):
            return None
        answered.append(True)
        return answer

    try:
        models, props, show = await asyncio.gather(
            ask("GET", "/models"),
            ask("GET", f"{root}/props"),
            ask("POST", f"{root}/api/show", {"model": config.model}),
        )
    finally:
        await client.close()
    for tokens, source in ((window_from_models(models, config.model), "server /v1/models"),
                           (window_from_props(props), "server /props"),
                           (window_from_ollama(show), "server /api/show")):
        if tokens:
            return Window(tokens, source), True
    return None, bool(answered)


async def resolve_window(config: ProviderConfig, cache: WindowCache | None = None) -> Window:
    """The window for ``config``: configured, else the server's (cached), else known, else 8k."""
    if config.context_window:
        return Window(config.context_window, config.window_source or "profile")
    cache = cache if cache is not None else WindowCache()
    cached = cache.get(config.base_url, config.model)
    if cached is not None:
        return cached
    window, answered = None, False
    if config.base_url and not _never_tells(config.base_url):
        window, answered = await ask_server(config)
    if window is None:
        known = known_window(config.model)
        window = Window(known, "known model") if known else Window(ASSUMED_WINDOW, "assumed")
    if answered or not window.assumed:
        cache.put(config.base_url, config.model, window)
    return window


def _never_tells(base_url: str) -> bool:
    """OpenAI's own API lists models without their windows: the table knows them."""
    return "://api.openai.com" in base_url


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _positive(value: Any) -> int | None:
    return value if type(value) is int and value > 0 else None
