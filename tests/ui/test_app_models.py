"""/model, /profile and /instructions in the whole app, over real HTTP to the demo server."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import TextArea

from selfref_tui.config import ProviderConfig
from selfref_tui.context.compile import INSTRUCTIONS_HEADING
from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until

MODELS = ("small-model", "big-model")
WINDOWS = {"small-model": 4096, "big-model": 65536}


def _local_profile(url: str) -> dict[str, ProviderConfig]:
    """config.toml's profiles: "local", on the same server with a model of its own."""
    return {"local": ProviderConfig(name="local", base_url=url + "/", api_key_env="",
                                    model="local-model", context_window=2048)}


def _app(tmp_path, url, **config):
    app = make_app(tmp_path, url, context_window=None)  # the window is asked of the server
    app.config = replace(app.config, provider=replace(app.config.provider, model="small-model"),
                         **config)
    return app


def _screen(app) -> str:
    return type(app.screen).__name__


async def _open_instructions(pilot, app) -> None:
    await type_and_send(pilot, "/instructions")
    await wait_until(pilot, lambda: _screen(app) == "InstructionsEditor", what="editor")


async def test_model_picker_switches_the_conversation_and_it_is_remembered(tmp_path):
    server = DemoServer([Reply(text="from big"), Reply(text="still big")], models=MODELS,
                        model_windows=WINDOWS, window_sources=("max_model_len",))
    async with server as url:
        app = _app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.agent.context_window == 4096, what="window")
            assert app.header.model == "small-model"
            await type_and_send(pilot, "/model")
            await wait_until(pilot, lambda: _screen(app) == "ModelPicker", what="the picker")
            assert app.screen.shown == ["model:big-model", "model:small-model"]
            await pilot.press(*"big")
            assert app.screen.shown == ["model:big-model", "typed:big"]  # the match first
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.header.model == "big-model", what="header")
            # the new model's window is learnt again, and the meter shows it
            await wait_until(pilot, lambda: app.agent.context_window == 65536,
                             what="big-model's window")
            await wait_until(pilot, lambda: app.sidebar.meter.window == 65536, what="meter")
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app)
            assert server.requests[-1]["model"] == "big-model"
            await pilot.press("ctrl+q")
        # the conversation remembers it: the next start runs it on big-model
        again = _app(tmp_path, url)
        async with again.run_test(size=SIZE) as pilot:
            await started(pilot, again)
            assert again.header.model == "big-model"
            await type_and_send(pilot, "again")
            await turn_done(pilot, again)
            assert server.requests[-1]["model"] == "big-model"
            # another conversation chose nothing: it runs on the window's model
            await type_and_send(pilot, "/key other")
            await wait_until(pilot, lambda: again.key == "other"
                             and again.header.status == "ready", what="other open")
            assert again.header.model == "small-model"
            assert again.agent.model == "small-model"


async def test_a_typed_model_and_a_profile_switch_and_refusals(tmp_path):
    server = DemoServer([Reply(text="ok")])
    async with server as url:
        app = _app(tmp_path, url, profiles=_local_profile(url))
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "/model my-own:7b")
            await wait_until(pilot, lambda: app.header.model == "my-own:7b", what="typed model")
            assert app.controller.key_settings().model == "my-own:7b"
            await type_and_send(pilot, "/model small-model")  # the window's own model again
            await wait_until(pilot, lambda: app.header.model == "small-model", what="back")
            assert app.controller.key_settings().model == ""  # nothing left to remember
            await type_and_send(pilot, "/profile nowhere")
            await wait_until(pilot, lambda: any("nowhere" in n.message and "local" in n.message
                                                for n in app._notifications), what="refusal")
            assert app.chat_input.text == "/profile nowhere"  # kept to fix
            app.chat_input.clear()
            await type_and_send(pilot, "/profile local")
            await wait_until(pilot, lambda: app.header.model == "local-model", what="profile")
            assert app.header.provider == "local"
            assert app.agent.context_window == 2048  # the profile's own window
            await type_and_send(pilot, "hi")
            await turn_done(pilot, app)
            assert server.requests[-1]["model"] == "local-model"
    with SelfReference(tmp_path / "data") as store:
        settings = store.open("main", write=False).settings
    assert (settings.profile, settings.model) == ("local", "")


async def test_instructions_are_edited_kept_and_sent_in_the_system_prompt(tmp_path):
    server = DemoServer([Reply(text="ok"), Reply(text="ok again")])
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await _open_instructions(pilot, app)
            app.screen.query_one(TextArea).insert("Answer in French. [@click=app.quit]")
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: _screen(app) != "InstructionsEditor", what="saved")
            await wait_until(pilot, lambda: app.controller.instructions.startswith("Answer"),
                             what="kept")
            await type_and_send(pilot, "bonjour")
            await turn_done(pilot, app)
            system = server.requests[-1]["messages"][0]
            assert system["role"] == "system"
            assert f"{INSTRUCTIONS_HEADING}\nAnswer in French. [@click=app.quit]" in (
                system["content"])
            # the editor opens with them; emptied, the next request has none
            await _open_instructions(pilot, app)
            area = app.screen.query_one(TextArea)
            assert area.text == "Answer in French. [@click=app.quit]"
            area.clear()
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: not app.controller.instructions, what="cleared")
            await type_and_send(pilot, "plain")
            await turn_done(pilot, app)
            assert INSTRUCTIONS_HEADING not in server.requests[-1]["messages"][0]["content"]


async def test_keys_typed_just_before_ctrl_s_are_saved_with_the_instructions(tmp_path):
    """A terminal delivers a burst of keys at once (a fast typist, a paste without
    brackets): ctrl+s at its end saves every character typed before it."""
    from textual import events

    server = DemoServer([Reply(text="ok")])
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await _open_instructions(pilot, app)
            for key in [*"Use tu.", "ctrl+s"]:
                app.post_message(events.Key(key, key if len(key) == 1 else None))
            await wait_until(pilot, lambda: _screen(app) != "InstructionsEditor", what="saved")
            await wait_until(pilot, lambda: bool(app.controller.instructions), what="kept")
            assert app.controller.instructions == "Use tu."


def _burst(app, keys) -> None:
    """Keys as a terminal delivers a fast burst: all at once, before the app acts on any."""
    from textual import events

    for key in keys:
        name = {" ": "space"}.get(key, key)
        app.post_message(events.Key(name, key if len(key) == 1 else None))


async def test_keys_typed_right_after_choosing_a_model_go_to_the_input(tmp_path):
    """Enter in the picker, then the next message at once: the model is the one highlighted
    when Enter came, and the keys after it are the next message, not the picker's filter
    (they once changed the choice to a model named after them, and their Enter closed the
    picker a second time, which stopped the app)."""
    server = DemoServer([Reply(text="on big")], models=MODELS, model_windows=WINDOWS,
                        window_sources=("max_model_len",))
    async with server as url:
        app = _app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "/model")
            await wait_until(pilot, lambda: _screen(app) == "ModelPicker", what="the picker")
            _burst(app, [*"big", "enter", *"hi there", "enter"])
            await wait_until(pilot, lambda: app.header.model == "big-model", what="header")
            await wait_until(pilot, lambda: len(server.requests) == 1, what="the message sent")
            await turn_done(pilot, app)
            assert _screen(app) == "Screen"
            assert server.requests[-1]["model"] == "big-model"
            assert server.requests[-1]["messages"][-1]["content"] == "hi there"
            assert app.chat_input.text == ""


async def test_a_model_choice_not_saved_while_a_turn_runs_on_it_is_said_and_kept(tmp_path):
    """The picker's choice, then a message at once: the turn starts on the new model while
    the choice is being saved. When the save then fails, the turn keeps the model it runs
    on: the header names it, the old client is closed, and one line says it is not
    remembered and what to do. Before, the header named the old model (which no longer
    answered) and the old client stayed open."""
    import threading

    answered = threading.Event()

    def answer_once_the_notice_is_shown(body, index):
        # the server (on its own thread) holds the answer: the turn still runs when the
        # save fails, however slowly the machine gets there
        answered.wait(60)
        return Reply(text="on big")

    server = DemoServer(answer_once_the_notice_is_shown, models=MODELS, model_windows=WINDOWS,
                        window_sources=("max_model_len",))
    url = server.start_in_thread()
    try:
        app = _app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            memory = app.agent.memory("main")
            old = app.agent.provider
            # the settings file cannot be replaced: a folder of that name, not empty
            (memory.key_dir / "settings.json" / "in-the-way").mkdir(parents=True)
            turn_began = threading.Event()
            save = memory.save_settings

            def save_once_the_turn_runs(settings):
                turn_began.wait(10)  # the disk is slow: the message is sent meanwhile
                save(settings)

            memory.save_settings = save_once_the_turn_runs
            await type_and_send(pilot, "/model")
            await wait_until(pilot, lambda: _screen(app) == "ModelPicker", what="the picker")
            _burst(app, [*"big", "enter", *"hi there", "enter"])
            await wait_until(pilot, lambda: app.controller.busy, what="the turn")
            turn_began.set()
            await wait_until(pilot, lambda: any("not remembered" in n.message
                                                for n in app._notifications), what="the notice")
            notice = next(n for n in app._notifications if "not remembered" in n.message)
            assert "/model big-model again" in notice.message and "Is a directory" in notice.message
            assert "\n" not in notice.message
            assert notice.severity == "error"
            answered.set()
            await turn_done(pilot, app)
            assert server.requests[-1]["model"] == "big-model"
            assert app.header.model == "big-model" == app.agent.model
            assert old._client.is_closed() and not app.agent.provider._client.is_closed()
            assert app.controller.key_settings().model == ""
    finally:
        answered.set()
        server.stop_thread()


async def test_a_model_choice_not_saved_while_idle_is_undone_and_said(tmp_path):
    """No turn runs on the new model yet: a choice the disk refuses is undone (the old
    client still answers, the new one is closed) and the command stays to try again."""
    server = DemoServer([Reply(text="still small")])
    async with server as url:
        app = _app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            old = app.agent.provider
            (app.agent.memory("main").key_dir / "settings.json" / "in-the-way").mkdir(
                parents=True)
            await type_and_send(pilot, "/model big-model")
            await wait_until(pilot, lambda: any("Still on small-model" in n.message
                                                for n in app._notifications), what="the notice")
            assert app.chat_input.text == "/model big-model"
            assert app.header.model == "small-model" == app.agent.model
            assert app.agent.provider is old and not old._client.is_closed()
            app.chat_input.clear()
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app)
            assert server.requests[-1]["model"] == "small-model"


async def test_instructions_the_disk_refuses_are_said_and_kept_for_another_try(tmp_path):
    """Instructions that cannot be saved: the editor opens again with the text typed
    (nothing is lost) and says why in it (a notice would wait until it closes). Before,
    the store's error ended the app."""
    server = DemoServer([Reply(text="ok")])
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            (app.agent.memory("main").key_dir / "settings.json" / "in-the-way").mkdir(
                parents=True)
            await _open_instructions(pilot, app)
            app.screen.query_one(TextArea).insert("Answer in French.")
            first = app.screen
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: _screen(app) == "InstructionsEditor"
                             and app.screen is not first, what="the editor again")
            assert app.is_running and not app.controller.instructions
            assert app.screen.query_one(TextArea).text == "Answer in French."
            said = str(app.screen.query_one("#error").render())
            assert "Is a directory" in said and "try again" in said
            await pilot.press("escape")  # left as they were
            await wait_until(pilot, lambda: _screen(app) != "InstructionsEditor", what="closed")
            assert not app.controller.instructions and app.is_running


async def test_a_model_the_server_lacks_says_to_choose_another_with_model(tmp_path):
    """In the app the way out is /model: the conversation remembers its model, so the
    `--model` flag and config.toml's `model` the message named did not change it."""
    server = DemoServer([Reply(text="ok")], models=MODELS)
    async with server as url:
        app = _app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "/model no-such-model")
            await wait_until(pilot, lambda: app.header.model == "no-such-model", what="typed")
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app, status="error")
            model = app.transcript.model
            await wait_until(pilot, lambda: model.of_kind("error"), what="the error block")
            shown = "\n".join(app.transcript.visible_text())
            assert "model 'no-such-model' not found" in shown
            assert "/model NAME in the app" in shown and "config.toml" not in shown


async def test_profile_alone_lists_the_profiles_and_default_goes_back(tmp_path):
    """`/profile` alone said "Usage: /profile NAME" and named none; and once a
    conversation took a profile, nothing brought it back to the provider it began on."""
    server = DemoServer([Reply(text="ok"), Reply(text="ok again")], models=MODELS)
    async with server as url:
        app = _app(tmp_path, url, profiles=_local_profile(url))
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "/profile local")
            await wait_until(pilot, lambda: app.header.model == "local-model", what="profile")
            await type_and_send(pilot, "/profile")
            await wait_until(pilot, lambda: any(
                "Profiles in config.toml: local (in use)" in n.message
                and "/profile default" in n.message for n in app._notifications),
                what="the profiles listed")
            assert app.chat_input.text == ""
            await type_and_send(pilot, "/profile default")
            await wait_until(pilot, lambda: app.header.model == "small-model", what="back")
            assert app.header.provider != "local"
            assert (app.controller.key_settings().profile,
                    app.controller.key_settings().model) == ("", "")
            await type_and_send(pilot, "hi")
            await turn_done(pilot, app)
            assert server.requests[-1]["model"] == "small-model"
