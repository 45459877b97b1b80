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
while, in the data directory (each ``ask`` is a new process; the file is the
store's, :mod:`selfref_tui.selfref.window_cache`). Front ends call
:func:`resolve_window` after their first frame, never before it.

A server is input like any other. Asking it is bounded as a whole — all three
questions together get :data:`DISCOVERY_TIMEOUT_S` seconds and each answer at
most :data:`MAX_ANSWER_BYTES` (a body that never ends, or trickles a byte a
second, once made ``ask`` grow 220 MB/s or wait forever) — and a window
outside :data:`~selfref_tui.config.MIN_WINDOW`…:data:`~selfref_tui.config.MAX_WINDOW`
is not believed: it is said in a notice, never cached, never used.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from selfref_tui.agent.provider.probe import (
    MAX_ANSWER_BYTES,
    headers,
    http_client,
    http_errors,
    read_json,
)
from selfref_tui.config import MAX_WINDOW, MIN_WINDOW, ProviderConfig
from selfref_tui.selfref.window_cache import CACHE_FILE, load_entries, save_entries

__all__ = ["ASSUMED_WINDOW", "CACHE_FILE", "CACHE_TTL_S", "DISCOVERY_TIMEOUT_S",
           "MAX_ANSWER_BYTES", "Window", "WindowCache", "ask_server", "known_window",
           "resolve_window", "server_root", "window_from_models", "window_from_ollama",
           "window_from_props"]

ASSUMED_WINDOW = 8_192
#: how long a window read off a server is trusted by a later process (a local
#: server restarted with another ``-c`` must not be believed for long)
CACHE_TTL_S = 600.0
#: the whole look-up: connecting, asking the three places at once and reading the answers
DISCOVERY_TIMEOUT_S = 5.0
#: what a cached entry's ``source`` may say (anything else in the file is not believed)
SOURCES = ("server /v1/models", "server /props", "server /api/show", "known model", "assumed")

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
    ``server /props`` …, ``known model``, ``assumed``).

    ``problems``: what finding it ran into (a window not believed, a cache file
    refused), each one line for the person; they are not part of its value.
    """

    tokens: int
    source: str
    problems: tuple[str, ...] = field(default=(), compare=False)

    @property
    def assumed(self) -> bool:
        return self.source == "assumed"

    def notices(self) -> list[str]:
        """The lines to show: its problems, and that it is a guess when it is one.

        A guess made because the server's windows were not believed is said on the
        same line as they are, with one piece of advice.
        """
        lines = list(self.problems)
        if self.assumed:
            guess = (f"window unknown, assumed {self.tokens // 1024}k — set context_window "
                     "in the profile, SELFREF_CONTEXT_WINDOW or --context-window")
            ignored = next((at for at, line in enumerate(lines)
                            if line.endswith(IGNORED_ADVICE)), None)
            if ignored is None:
                lines.append(guess)
            else:
                lines[ignored] = f"{lines[ignored].removesuffix(IGNORED_ADVICE)}; {guess}"
        return lines


def believable(tokens: int) -> bool:
    """Whether a window is one a model could have (see MIN_WINDOW and MAX_WINDOW)."""
    return MIN_WINDOW <= tokens <= MAX_WINDOW


#: how a line about windows not believed ends (a guess made after them replaces it)
IGNORED_ADVICE = " — set context_window in the profile if the model really has it"


def not_believed(found: list[tuple[int, str]]) -> str:
    """One line for the windows outside the range (``(tokens, place)``), numbers kept short."""

    def amount(tokens: int) -> str:
        digits = len(str(tokens))
        return f"{tokens:,} tokens" if digits <= 12 else f"a {digits}-digit number of tokens"

    (tokens, place), *more = found
    named = "".join(f" and its {where} {amount(value)}" for value, where in more)
    return (f"the server's {place} names a window of {amount(tokens)}{named}, outside "
            f"{MIN_WINDOW:,}–{MAX_WINDOW:,}: ignored{IGNORED_ADVICE}")


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
    """Windows read off servers: in memory, and in ``path`` for ``CACHE_TTL_S`` seconds.

    The file holds no URL userinfo (a ``user:key@`` base URL is keyed without
    it) and only believable entries: anything else read from it is ignored.
    ``problems`` collects what reading or writing the file ran into.
    """

    def __init__(self, path: Path | None = None, *, clock: Any = time.time) -> None:
        self.path = path
        self.clock = clock
        self._memory: dict[str, Window] = {}
        self.problems: list[str] = []

    @staticmethod
    def key(base_url: str, model: str) -> str:
        return f"{public_url(base_url)}|{model}"

    def get(self, base_url: str, model: str) -> Window | None:
        key = self.key(base_url, model)
        if key in self._memory:
            return self._memory[key]
        window = _entry_window(self._read().get(key), self.clock())
        if window is not None:
            self._memory[key] = window
        return window

    def put(self, base_url: str, model: str, window: Window) -> None:
        if not believable(window.tokens) or window.source not in SOURCES:
            return  # never kept: a later process must ask again
        key = self.key(base_url, model)
        self._memory[key] = window
        if self.path is None:
            return
        now = self.clock()
        entries = self._read()
        if self.problems:
            return  # a file that could not be read is not written over either
        entries = {k: v for k, v in entries.items()
                   if k != key and _entry_window(v, now) is not None}
        entries[key] = {"tokens": window.tokens, "source": window.source, "at": now}
        self._problem(save_entries(self.path, entries))

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.path is None:
            return {}
        entries, problem = load_entries(self.path)
        self._problem(problem)
        # entries an older version keyed with a URL's userinfo are dropped (and so not rewritten)
        return {k: v for k, v in entries.items() if k.split("|", 1)[0] == public_url(k)}

    def _problem(self, problem: str | None) -> None:
        if problem and problem not in self.problems:
            self.problems.append(problem)


def public_url(base_url: str) -> str:
    """``base_url`` without userinfo, query or fragment, and without a trailing slash."""
    url = base_url.split("|", 1)[0].rstrip("/")
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", "")).rstrip("/")


def _entry_window(entry: Any, now: float) -> Window | None:
    """A cached entry as a window, or None when it is stale or not believable."""
    if not isinstance(entry, dict):
        return None
    tokens, at, source = _positive(entry.get("tokens")), entry.get("at"), entry.get("source")
    if (not tokens or not believable(tokens) or source not in SOURCES
            or type(at) not in (int, float) or not 0 <= now - at <= CACHE_TTL_S):
        return None
    return Window(tokens, source)


async def ask_server(config: ProviderConfig, *, timeout_s: float = DISCOVERY_TIMEOUT_S,
                     max_bytes: int = MAX_ANSWER_BYTES) -> tuple[Window | None, bool, list[str]]:
    """The window as the server tells it, asking its three places at once.

    Returns (the window or None, whether the server answered at all, problems):
    a server that is down now may tell its window later, so only an answer is
    cached. All of it ends within ``timeout_s``: a place that has not answered
    by then counts as silent, and an answer over ``max_bytes`` is given up on
    without reading the rest.
    """
    root = server_root(config.base_url)
    answered: list[int] = []
    deadline = asyncio.get_running_loop().time() + timeout_s
    # asked directly (provider/probe.py): a body read as a stream can be given up on
    http = await http_client(config, timeout_s)
    failures = (TimeoutError, OSError, ValueError, RecursionError, *http_errors(http))

    async def ask(method: str, url: str, body: Any = None) -> Any:
        try:
            async with asyncio.timeout_at(deadline):
                return await read_json(http, method, url, headers(config), body, max_bytes,
                                        answered)
        except failures:
            return None

    try:
        models, props, show = await asyncio.gather(
            ask("GET", f"{config.base_url.rstrip('/')}/models"),
            ask("GET", f"{root}/props"),
            ask("POST", f"{root}/api/show", {"model": config.model}),
        )
    finally:
        await http.aclose()
    ignored: list[tuple[int, str]] = []
    for tokens, source in ((window_from_models(models, config.model), "server /v1/models"),
                           (window_from_props(props), "server /props"),
                           (window_from_ollama(show), "server /api/show")):
        if tokens and believable(tokens):
            return Window(tokens, source), True, [not_believed(ignored)] if ignored else []
        if tokens:
            ignored.append((tokens, source.split()[-1]))
    return None, bool(answered), [not_believed(ignored)] if ignored else []


async def resolve_window(config: ProviderConfig, cache: WindowCache | None = None) -> Window:
    """The window for ``config``: configured, else the server's (cached), else known, else 8k.

    What went wrong on the way (a window not believed, a cache file refused)
    comes back in the window's ``problems``.
    """
    if config.context_window:
        return Window(config.context_window, config.window_source or "profile")
    cache = cache if cache is not None else WindowCache()
    cached = cache.get(config.base_url, config.model)
    if cached is not None:
        return replace(cached, problems=tuple(cache.problems))
    window, answered, problems = None, False, []
    if config.base_url and not _never_tells(config.base_url):
        window, answered, problems = await ask_server(config)
    if window is None:
        known = known_window(config.model)
        window = Window(known, "known model") if known else Window(ASSUMED_WINDOW, "assumed")
    if (answered and not problems) or not window.assumed:
        cache.put(config.base_url, config.model, window)
    return replace(window, problems=(*problems, *cache.problems))


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
