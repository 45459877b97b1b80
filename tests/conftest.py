"""Shared test set-up: every test gets its own data dir, config and tiktoken cache.

The whole suite runs on one pytest-xdist worker per core (``-n auto`` in
pyproject.toml); a run of chosen files or tests stays in one process, where
starting workers would cost more than it saves (see
:func:`pytest_xdist_auto_num_workers`). Tests must therefore be safe to run in
parallel: their own tmp dirs and ports (0: the system picks), no fixed names
in shared places.
"""

from __future__ import annotations

import os

import pytest


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker per usable core for the suite, none for chosen tests.

    Each worker collects the whole suite and imports Textual and the runtime
    (seconds on a busy machine), which a run of one file never wins back. An
    explicit ``-n N`` on the command line is obeyed as it is; ``-n auto`` typed
    there means a worker per core whatever the arguments.
    """
    typed = any(arg == "-n" or arg.startswith(("-n", "--numprocesses"))
                for arg in config.invocation_params.args)
    if not typed and config.args_source == pytest.Config.ArgsSource.ARGS:
        return 0
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


#: how long Textual's Pilot sleeps between checks for an idle app while it types a string
TYPING_IDLE_SLICE_S = 0.002


def pytest_configure(config: pytest.Config) -> None:
    """Let Pilot type all but the last key of a ``press`` with a 2 ms idle check.

    ``Pilot.press`` waits twice per key for a slice in which the process used
    (nearly) no CPU, and each wait sleeps at least one 20 ms slice: typing
    ``/rewind 3`` cost half a second of sleep, most of the UI tests' time. The
    keys before the last are still sent one at a time, each once the app has
    handled the one before it (the same idle share of a shorter slice). The
    last key, and ``Pilot.pause``, keep Textual's 20 ms slice: longer than a
    frame, so what a test reads next has been laid out and drawn.
    """
    from textual import _wait
    from textual.app import App

    press_keys = getattr(App, "_press_keys", None)
    if press_keys is None or not all(
            hasattr(_wait, name) for name in ("SLEEP_GRANULARITY", "SLEEP_IDLE")):
        return  # a Textual laid out otherwise: its own pace, slower but the same tests

    async def typing_press_keys(self: App, keys) -> None:
        if not keys:
            return await press_keys(self, keys)
        *head, last = keys
        if head:
            normal = _wait.SLEEP_GRANULARITY, _wait.SLEEP_IDLE
            _wait.SLEEP_GRANULARITY = TYPING_IDLE_SLICE_S
            _wait.SLEEP_IDLE = TYPING_IDLE_SLICE_S / 20
            try:
                await press_keys(self, head)
            finally:
                _wait.SLEEP_GRANULARITY, _wait.SLEEP_IDLE = normal
        await press_keys(self, [last])

    App._press_keys = typing_press_keys


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """Keep tests away from the person's real store and config."""
    monkeypatch.setenv("SELFREF_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SELFREF_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFREF_MODEL"):
        monkeypatch.delenv(name, raising=False)
