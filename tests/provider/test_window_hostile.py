"""Window discovery against hostile servers and a hostile ``windows.json``.

The servers are real processes on 127.0.0.1 (``tests/hostile_servers``); the
commands run as real processes where a hang or a flood could take the test
run down with them (a FIFO's open blocks the thread, ``/dev/zero`` is read to
the end of memory), under a memory limit and a generous timeout that only a
broken build reaches.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import stat
import subprocess
import sys

import pytest

from selfref_tui.agent.provider.window import (
    CACHE_TTL_S,
    Window,
    WindowCache,
    ask_server,
    public_url,
    resolve_window,
)
from selfref_tui.config import ConfigError, ProviderConfig
from selfref_tui.config_load import load_config
from selfref_tui.demo import DemoServer
from tests.cli.helpers import ROOT, _env, cli
from tests.hostile_servers import spawn, stats, wait_done

#: a guard, not a goal: only a look-up without a total bound gets near it
GUARD_S = 60


def config(url: str, **kw) -> ProviderConfig:
    return ProviderConfig(base_url=url, api_key="k", model=kw.pop("model", "hostile"), **kw)


async def test_a_models_body_that_never_ends_is_given_up_on_past_the_size_limit():
    with spawn("http_window", "--models", "endless", "--stop-after-mb", "64") as url:
        window, answered, problems = await asyncio.wait_for(
            ask_server(config(url), max_bytes=256 * 1024), GUARD_S)
        sent = (await asyncio.wait_for(wait_done(url, "/v1/models"), GUARD_S))["sent"]
    assert window is None and answered and problems == []
    # the client stopped reading near the limit: what the server wrote beyond it
    # sat in socket buffers (a few MB at most), not 64 MB read and parsed
    assert sent < 16 * 1024 * 1024


async def test_a_redirect_is_followed_without_reading_its_own_endless_body():
    """The HTTP client, left to follow a redirect, reads the redirect's body whole first
    (and decodes it: a gzip bomb there would inflate); the 302's body is never read."""
    with spawn("http_window", "--models", "redirect", "--n-ctx", "4096",
               "--stop-after-mb", "64") as url:
        window, answered, problems = await asyncio.wait_for(ask_server(config(url)), GUARD_S)
        sent = (await asyncio.wait_for(wait_done(url, "/v1/models"), GUARD_S))["sent"]
    assert window == Window(4096, "server /v1/models") and answered and problems == []
    assert sent < 16 * 1024 * 1024


async def test_a_trickling_answer_ends_at_the_total_deadline_and_is_not_cached(tmp_path):
    cache = WindowCache(tmp_path / "windows.json")
    with spawn("http_window", "--models", "trickle", "--props", "trickle", "--show", "trickle",
               "--interval", "0.05") as url:
        window, answered, _ = await asyncio.wait_for(
            ask_server(config(url), timeout_s=1.0), GUARD_S)
        assert window is None and not answered  # still arriving: not an answer
        resolved = await asyncio.wait_for(resolve_window(config(url), cache), GUARD_S)
        trickled = stats(url)["/v1/models"]["sent"]
    assert resolved.assumed and not (tmp_path / "windows.json").exists()
    assert trickled > 0  # it did trickle: every read was quick, the answer never came


async def test_an_absurd_window_is_ignored_with_a_notice_and_never_cached(tmp_path):
    path = tmp_path / "windows.json"
    with spawn("http_window", "--props", "absurd", "--n-ctx", "9" * 400) as url:
        window = await asyncio.wait_for(resolve_window(config(url), WindowCache(path)), GUARD_S)
    assert window.assumed and window.tokens == 8192
    said = " ".join(window.notices())
    assert "/props names a window of a 400-digit number of tokens" in said
    assert "9999" not in said and not path.exists()
    with spawn("http_window", "--models", "absurd", "--n-ctx", str(10**30)) as url:
        window = await asyncio.wait_for(resolve_window(config(url), WindowCache(path)), GUARD_S)
    assert window.assumed and "outside 256–10,000,000" in window.notices()[0]
    assert not path.exists()
    with spawn("http_window", "--show", "absurd", "--n-ctx", "100") as url:
        window = await asyncio.wait_for(resolve_window(config(url), WindowCache(path)), GUARD_S)
    assert window.assumed and "names a window of 100 tokens" in window.notices()[0]


async def test_windows_not_believed_and_the_guess_are_said_in_one_line(tmp_path):
    """Two places naming absurd windows, then the 8k guess: one notice, one piece of advice
    (three toasts each saying "set context_window" covered the app's screen)."""
    with spawn("http_window", "--models", "absurd", "--props", "absurd",
               "--n-ctx", "9" * 400) as url:
        window = await asyncio.wait_for(
            resolve_window(config(url), WindowCache(tmp_path / "windows.json")), GUARD_S)
    [line] = window.notices()
    assert "/v1/models names a window of a 400-digit number of tokens" in line
    assert "/props" in line and "assumed 8k" in line
    assert line.count("set context_window") == 1 and "\n" not in line


def test_context_show_with_a_400_digit_window_shows_the_context_not_a_traceback(tmp_path):
    with spawn("http_window", "--props", "absurd", "--n-ctx", "9" * 400) as url:
        result = cli("context", "show", "--base-url", url, "--model", "hostile",
                     "--data-dir", str(tmp_path / "data"), env={"OPENAI_API_KEY": "sk-t"})
    assert result.returncode == 0, result.stderr
    assert "tokens of 8192" in result.stdout
    assert "400-digit number of tokens, outside 256–10,000,000: ignored" in result.stderr


def test_absurd_windows_in_the_cache_file_are_not_believed(tmp_path):
    path = tmp_path / "windows.json"
    now = 1000.0
    key = WindowCache.key("http://h/v1", "m")
    for tokens, source in ((10**400, "server /props"), (10**30, "server /props"),
                           (100, "server /props"), (4096, "[@click=app.quit]"),
                           (4096.5, "server /props"), (True, "server /props")):
        path.write_text(json.dumps({key: {"tokens": tokens, "source": source, "at": now}}))
        assert WindowCache(path, clock=lambda: now).get("http://h/v1", "m") is None, tokens
    path.write_text(json.dumps({key: {"tokens": 4096, "source": "server /props", "at": now}}))
    believed = WindowCache(path, clock=lambda: now).get("http://h/v1", "m")
    assert believed == Window(4096, "server /props")
    future = now + CACHE_TTL_S  # an entry from the future is not believed either
    path.write_text(json.dumps({key: {"tokens": 4096, "source": "server /props", "at": future}}))
    assert WindowCache(path, clock=lambda: now).get("http://h/v1", "m") is None
    cache = WindowCache(path, clock=lambda: now)
    cache.put("http://h/v1", "m", Window(10**30, "server /props"))
    assert cache.get("http://h/v1", "m") is None


def test_configured_windows_outside_the_range_are_one_line_errors(tmp_path):
    missing = tmp_path / "none.toml"
    with pytest.raises(ConfigError, match="from 256 to 10,000,000, not a 31-digit number"):
        load_config(config_path=missing, env={}, context_window=10**30)
    with pytest.raises(ConfigError, match="SELFREF_CONTEXT_WINDOW must be a number of tokens"):
        load_config(config_path=missing, env={"SELFREF_CONTEXT_WINDOW": "100000000"})
    profile = tmp_path / "config.toml"
    profile.write_text('default_provider = "p"\n[providers.p]\ncontext_window = 100\n')
    with pytest.raises(ConfigError, match="context_window of the profile 'p'"):
        load_config(config_path=profile, env={})
    assert load_config(config_path=missing, env={}, context_window=2_000_000).provider \
        .context_window == 2_000_000


async def test_the_cache_file_is_private_and_holds_no_userinfo(tmp_path):
    path = tmp_path / "data" / "windows.json"
    path.parent.mkdir(mode=0o755)
    async with DemoServer([], context_window=3000) as url:
        secret_url = url.replace("http://", "http://person:hunter2@")
        # an entry an older version wrote with userinfo is dropped when the file is rewritten
        path.write_text(json.dumps({f"{secret_url}|old": {
            "tokens": 4096, "source": "server /props", "at": 1e12}}))
        os.chmod(path, 0o644)
        window = await resolve_window(config(secret_url), WindowCache(path))
    assert window.tokens == 3000
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert "hunter2" not in text and "person" not in text
    assert list(json.loads(text)) == [f"{url}|hostile"]
    assert public_url("https://u:p@h:8/v1/?key=s#f") == "https://h:8/v1"


def _limited() -> None:
    """The child's memory: enough for an ``ask``, far less than /dev/zero can fill."""
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero link", "huge file"])
def test_a_hostile_windows_json_is_refused_and_ask_answers(tmp_path, kind):
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    cache = data / "windows.json"
    if kind == "fifo":
        os.mkfifo(cache)
    elif kind == "dev-zero link":
        cache.symlink_to("/dev/zero")
    else:
        cache.write_bytes(b'{"x": "' + b"y" * (8 << 20) + b'"}')
    with spawn("http_window") as url:
        result = subprocess.run(
            [sys.executable, "-m", "selfref_tui", "ask", "hi", "--base-url", url, "--model",
             "hostile", "--data-dir", str(data)], capture_output=True, text=True,
            env=_env({"OPENAI_API_KEY": "sk-t"}), cwd=ROOT, timeout=GUARD_S,
            preexec_fn=_limited)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"
    if kind == "huge file":
        assert "windows.json is over 65,536 bytes" in result.stderr
        assert cache.stat().st_size > 8 << 20  # not written over either
    else:
        assert "windows.json is a " in result.stderr and "window cache is not used" in result.stderr
        assert (stat.S_ISFIFO if kind == "fifo" else stat.S_ISLNK)(os.lstat(cache).st_mode)


async def test_the_provider_check_reads_the_status_not_an_endless_model_list():
    """The app's "is the server there?" asks GET /models: the status is all it reads."""
    from selfref_tui.agent.provider.probe import status_of

    with spawn("http_window", "--models", "endless", "--stop-after-mb", "64") as url:
        status = await asyncio.wait_for(status_of(config(url), 5.0), GUARD_S)
        sent = (await asyncio.wait_for(wait_done(url, "/v1/models"), GUARD_S))["sent"]
    assert status == 200 and sent < 16 * 1024 * 1024
    with spawn("http_window", "--models", "trickle", "--interval", "0.05") as url:
        assert await asyncio.wait_for(status_of(config(url), 1.0), GUARD_S) == 200
    with spawn("http_window", "--models", "redirect", "--stop-after-mb", "64") as url:
        status = await asyncio.wait_for(status_of(config(url), 5.0), GUARD_S)
        sent = (await asyncio.wait_for(wait_done(url, "/v1/models"), GUARD_S))["sent"]
    assert status == 200 and sent < 16 * 1024 * 1024  # followed, its body unread
    assert await status_of(config("http://127.0.0.1:9/v1"), 1.0) == "connection"


async def test_the_model_pickers_list_is_read_with_the_same_bounds():
    """/model without a name lists GET /models: a list that never ends is given up on
    past the answer cap (the openai client read it whole until its wait ran out)."""
    from selfref_tui.agent.provider.client import Provider
    from selfref_tui.agent.provider.errors import ProviderError

    with spawn("http_window", "--models", "endless", "--stop-after-mb", "64") as url:
        provider = Provider(config(url))
        try:
            with pytest.raises(ProviderError, match="did not list its models"):
                await asyncio.wait_for(provider.list_models(), GUARD_S)
        finally:
            await provider.aclose()
        sent = (await asyncio.wait_for(wait_done(url, "/v1/models"), GUARD_S))["sent"]
    assert sent < 16 * 1024 * 1024
