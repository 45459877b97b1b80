"""Shared test set-up: every test gets its own data dir, config and tiktoken cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """Keep tests away from the person's real store and config."""
    monkeypatch.setenv("SELFREF_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SELFREF_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFREF_MODEL"):
        monkeypatch.delenv(name, raising=False)
