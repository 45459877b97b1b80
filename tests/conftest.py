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


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """Keep tests away from the person's real store and config."""
    monkeypatch.setenv("SELFREF_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SELFREF_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFREF_MODEL"):
        monkeypatch.delenv(name, raising=False)
