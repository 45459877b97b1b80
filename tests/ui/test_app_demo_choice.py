"""--demo runs a conversation on the demo model whatever the conversation chose, and
the choice waits for the next window without --demo.

A conversation that had chosen a model with /model, opened with ``--demo``, sent
that model's name to the demo server, and every turn failed "model not found".
"""

from __future__ import annotations

from selfref_tui.config import AppConfig, demo_provider
from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.key_settings import KeySettings
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.app import SelfRefApp
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send


async def test_the_demo_window_answers_from_the_demo_and_keeps_the_conversations_choice(
        tmp_path):
    with SelfReference(tmp_path / "data") as store:
        store.open("main").save_settings(KeySettings(model="big-model"))
    demo = SelfRefApp(AppConfig(provider=demo_provider(""), data_dir=tmp_path / "data"))
    async with demo.run_test(size=SIZE) as pilot:
        await started(pilot, demo)
        assert demo.header.model == "selfref-demo"
        await type_and_send(pilot, "hello")
        await turn_done(pilot, demo, timeout=20)  # "ready", not "error": model not found
        assert demo.transcript.items_of("answer") and not demo.transcript.items_of("error")
    with SelfReference(tmp_path / "data") as store:
        assert store.open("main").settings == KeySettings(model="big-model")

    server = DemoServer([Reply(text="from big")], models=("test-model", "big-model"))
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            assert app.header.model == "big-model"  # the conversation's choice, again
            await type_and_send(pilot, "and now?")
            await turn_done(pilot, app)
            assert server.requests[-1]["model"] == "big-model"
