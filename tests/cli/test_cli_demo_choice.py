"""Which model a conversation's next request goes to, from the command line.

``context show`` without flags once named ``gpt-4o-mini … of 128000`` for a
conversation made with ``--demo`` while no provider was configured: a model
nobody had set up and a window from a table. The demo is never a conversation's
choice (``--demo`` is for one run); with nothing configured ``context show``
shows the demo model's request, as the app offers it, and once a provider is
configured the conversation goes on with it. A profile the conversation chose
is its provider even when nothing else is configured.
"""

from __future__ import annotations

import json
import os

from selfref_tui.demo import DemoServer, Reply
from selfref_tui.selfref.key_settings import SETTINGS_NAME, KeySettings
from selfref_tui.selfref.reference import SelfReference
from tests.cli.helpers import cli, one_line


def _key_dir():
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        return store.key_dir("main")


def test_a_conversation_begun_in_the_demo_shows_the_demo_model_while_nothing_is_configured():
    assert cli("ask", "--demo", "hello").returncode == 0  # the demo server, over HTTP
    assert not (_key_dir() / SETTINGS_NAME).exists()  # the demo is not remembered

    shown = cli("context", "show", "--json")
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    request = json.loads(shown.stdout)
    assert (request["model"], request["window"]) == ("selfref-demo", 32_000)
    text = cli("context", "show").stdout
    first, second = text.splitlines()[:2]
    assert first.startswith("model selfref-demo · ") and " of 32000" in first
    assert second.startswith("no model provider is configured: this is the request the "
                             "offline demo model would get")
    assert "gpt-4o-mini" not in text and "128000" not in text
    # a --context-window still holds (it names a window, not a provider)
    small = json.loads(cli("context", "show", "--json", "--context-window", "4096").stdout)
    assert (small["model"], small["window"]) == ("selfref-demo", 4096)

    refused = cli("ask", "again")  # nothing configured: the command line does not guess
    assert refused.returncode == 1 and "--demo" in one_line(refused.stderr)
    assert not (_key_dir() / SETTINGS_NAME).exists()


def test_once_a_provider_is_configured_the_demo_conversation_goes_on_with_it():
    assert cli("ask", "--demo", "hello").returncode == 0
    server = DemoServer([Reply(text="from the local model")], models=("local-model",),
                        context_window=4096)
    url = server.start_in_thread()
    try:
        env = {"OPENAI_BASE_URL": url, "SELFREF_MODEL": "local-model"}
        shown = cli("context", "show", "--json", env=env)
        request = json.loads(shown.stdout)
        assert (request["model"], request["window"]) == ("local-model", 4096)
        assert shown.stderr == ""
        assert cli("ask", "go on", env=env).returncode == 0
        assert server.requests[-1]["model"] == "local-model"
        # --demo still shows the demo's request for this conversation
        demo = json.loads(cli("context", "show", "--demo", "--json", env=env).stdout)
        assert (demo["model"], demo["window"]) == ("selfref-demo", 32_000)
    finally:
        server.stop_thread()


def test_a_profile_the_conversation_chose_runs_it_when_nothing_else_is_configured():
    server = DemoServer([Reply(text="from the profile")], models=("m1",), context_window=4096)
    url = server.start_in_thread()
    try:
        with open(os.environ["SELFREF_CONFIG"], "w", encoding="utf-8") as config:
            config.write(f'[providers.local]\nbase_url = "{url}"\nmodel = "m1"\n')
        with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
            store.open("main").save_settings(KeySettings(profile="local"))
        asked = cli("ask", "hello")
        assert asked.returncode == 0, asked.stderr
        assert asked.stdout.strip() == "from the profile"
        assert server.requests[-1]["model"] == "m1"
        shown = cli("context", "show", "--json")
        request = json.loads(shown.stdout)
        assert (request["model"], request["window"]) == ("m1", 4096) and shown.stderr == ""
    finally:
        server.stop_thread()


def test_help_says_the_demo_is_for_one_run():
    top = " ".join(cli("--help").stdout.split())
    assert "use the offline demo model, for this run only: a conversation does not " \
           "remember it" in top
    show = " ".join(cli("context", "show", "--help").stdout.split())
    assert "with none configured, the offline demo model's" in show
