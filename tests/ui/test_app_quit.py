"""Quitting: from ctrl+q to the shell prompt."""

from __future__ import annotations

import gc

from selfref_tui.config import AppConfig, ProviderConfig
from selfref_tui.demo.script import Reply
from selfref_tui.ui.app import run_app

from .helpers import SIZE, started, thread_server


def test_quitting_keeps_the_sessions_objects_out_of_pythons_last_collection(tmp_path):
    """After the app has closed everything, Python's final garbage collection at exit
    walked every object the session made: 1.3–1.6 s between ctrl+q and the prompt
    (measured in tmux). ``run_app`` freezes them first, so the process ends at once."""
    with thread_server([Reply(text="hi")]) as url:
        provider = ProviderConfig(base_url=url, api_key="test", model="test-model",
                                  max_retries=0, timeout_s=5, context_window=128_000)
        config = AppConfig(provider=provider, data_dir=tmp_path / "data", key="main")

        async def quit_when_ready(pilot) -> None:
            await started(pilot, pilot.app)
            await pilot.press("ctrl+q")

        gc.unfreeze()
        try:
            assert run_app(config, headless=True, size=SIZE, auto_pilot=quit_when_ready) == 0
            assert gc.get_freeze_count() > 0
        finally:
            gc.unfreeze()
