"""The context window: configured, else read off the server (real HTTP), else known, else 8k."""

from __future__ import annotations

import pytest

from selfref_tui.agent.provider.window import (
    ASSUMED_WINDOW,
    CACHE_TTL_S,
    Window,
    WindowCache,
    known_window,
    resolve_window,
    server_root,
    window_from_models,
    window_from_ollama,
    window_from_props,
)
from selfref_tui.config import ProviderConfig
from selfref_tui.config_load import load_config
from selfref_tui.demo import DemoServer


def config(url: str, **kw) -> ProviderConfig:
    return ProviderConfig(base_url=url, api_key="k", model=kw.pop("model", "selfref-demo"), **kw)


@pytest.mark.parametrize(("entry", "expected"), [
    ({"id": "m", "max_model_len": 32768}, 32768),  # vLLM
    ({"id": "m", "context_length": 131072, "top_provider": {"context_length": 65536}}, 131072),
    ({"id": "m", "top_provider": {"context_length": 65536}}, 65536),  # OpenRouter
    ({"id": "m", "meta": {"n_ctx": 2048}}, 2048),  # llama.cpp's own /v1/models
    ({"id": "m", "max_model_len": "big"}, None),
    ({"id": "m"}, None),
])
def test_window_from_a_models_entry(entry, expected):
    assert window_from_models({"data": [entry]}, "m") == expected


def test_models_entry_is_the_models_own_not_another():
    payload = {"data": [{"id": "a", "max_model_len": 1000}, {"id": "b", "max_model_len": 2000}]}
    assert window_from_models(payload, "b") == 2000
    assert window_from_models(payload, "c") is None
    assert window_from_models({"data": [{"id": "only", "context_length": 777}]}, "x") == 777


def test_props_and_ollama_answers():
    assert window_from_props({"default_generation_settings": {"n_ctx": 4096}}) == 4096
    assert window_from_props({"n_ctx": 1024}) == 1024 and window_from_props([]) is None
    show = {"model_info": {"qwen2.context_length": 32768}, "parameters": "num_ctx 8192\nstop x"}
    assert window_from_ollama(show) == 8192  # what it runs with, not what the model could
    assert window_from_ollama({"model_info": {"qwen2.context_length": 32768}}) == 32768


def test_known_hosted_models_by_longest_prefix():
    assert known_window("gpt-4o-mini-2024-07-18") == 128_000
    assert known_window("gpt-4-0613") == 8_192
    assert known_window("openai/gpt-4o") == 128_000
    assert known_window("my-local-model") is None


def test_server_root():
    assert server_root("http://h:8080/v1") == "http://h:8080"
    assert server_root("http://h:11434/v1/") == "http://h:11434"
    assert server_root("http://h/api") == "http://h/api"


@pytest.mark.parametrize(("sources", "source"), [
    (("props",), "server /props"),
    (("ollama",), "server /api/show"),
    (("max_model_len",), "server /v1/models"),
    (("context_length",), "server /v1/models"),
])
async def test_window_read_off_the_server_over_http(sources, source):
    server = DemoServer([], context_window=3000, window_sources=sources)
    async with server as url:
        window = await resolve_window(config(url))
    assert window == Window(3000, source)


async def test_configured_window_beats_the_server_and_asks_nothing():
    server = DemoServer([], context_window=3000)
    async with server as url:
        window = await resolve_window(config(url, context_window=5000, window_source="env"))
    assert window == Window(5000, "env") and server.window_requests == []


async def test_unknown_window_is_8k_assumed_with_a_notice():
    async with DemoServer([]) as url:
        window = await resolve_window(config(url, model="mystery"))
    assert window.tokens == ASSUMED_WINDOW and window.assumed
    assert "window unknown, assumed 8k — set context_window" in " ".join(window.notices())
    async with DemoServer([]) as url:
        known = await resolve_window(config(url, model="gpt-4o"))
    assert known == Window(128_000, "known model") and known.notices() == []


async def test_asked_once_per_server_and_model_then_cached_in_the_data_dir(tmp_path):
    server = DemoServer([], context_window=3000)
    now = [1000.0]
    path = tmp_path / "windows.json"
    async with server as url:
        first = await resolve_window(config(url), WindowCache(path, clock=lambda: now[0]))
        asked = len(server.window_requests)
        # a new process (a new cache object) within the TTL: no request
        again = await resolve_window(config(url), WindowCache(path, clock=lambda: now[0]))
        assert again == first and len(server.window_requests) == asked
        # another model on the same server is asked for
        await resolve_window(config(url, model="other"), WindowCache(path))
        assert len(server.window_requests) > asked
        asked = len(server.window_requests)
        now[0] += CACHE_TTL_S + 1  # a restarted local server may have another window
        await resolve_window(config(url), WindowCache(path, clock=lambda: now[0]))
        assert len(server.window_requests) > asked


async def test_a_server_that_is_down_is_not_cached_as_unknown(tmp_path):
    server = DemoServer([], context_window=3000)
    url = await server.start()
    await server.stop()
    cache = WindowCache(tmp_path / "windows.json")
    assert (await resolve_window(config(url), cache)).assumed
    assert not (tmp_path / "windows.json").exists()


def test_window_priority_flag_env_profile(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('default_provider = "p"\n[providers.p]\ncontext_window = 4096\n')
    assert load_config(config_path=path, env={}).provider.context_window == 4096
    assert load_config(config_path=path, env={}).provider.window_source == "profile"
    env = {"SELFREF_CONTEXT_WINDOW": "16384"}
    by_env = load_config(config_path=path, env=env).provider
    assert (by_env.context_window, by_env.window_source) == (16384, "env")
    by_flag = load_config(config_path=path, env=env, context_window=2048).provider
    assert (by_flag.context_window, by_flag.window_source) == (2048, "flag")
    none = load_config(config_path=tmp_path / "missing.toml", env={}).provider
    assert none.context_window is None


def test_bad_window_and_timeout_values_are_one_line_errors(tmp_path):
    from selfref_tui.config import ConfigError

    missing = tmp_path / "none.toml"
    with pytest.raises(ConfigError, match="SELFREF_CONTEXT_WINDOW"):
        load_config(config_path=missing, env={"SELFREF_CONTEXT_WINDOW": "lots"})
    with pytest.raises(ConfigError, match="--context-window"):
        load_config(config_path=missing, env={}, context_window=10)
    with pytest.raises(ConfigError, match="SELFREF_IDLE_TIMEOUT"):
        load_config(config_path=missing, env={"SELFREF_IDLE_TIMEOUT": "-1"})


@pytest.mark.parametrize("raw", ["nan", "NaN", "0", "-0.0"])
def test_a_timeout_from_the_environment_that_is_not_above_0_is_refused(tmp_path, raw):
    """As in config.toml: "nan" is no number of seconds (it compared as neither above
    nor below 0, and every request then had a timeout of NaN)."""
    from selfref_tui.config import ConfigError

    with pytest.raises(ConfigError, match="SELFREF_CONNECT_TIMEOUT must be above 0"):
        load_config(config_path=tmp_path / "none.toml",
                    env={"SELFREF_CONNECT_TIMEOUT": raw})
