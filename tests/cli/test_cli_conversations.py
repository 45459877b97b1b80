"""A conversation's own settings on the command line: instructions, the model it chose,
and which conversation each front end opens by default."""

from __future__ import annotations

import json
import os

from selfref_tui.context.compile import INSTRUCTIONS_HEADING
from selfref_tui.demo import DemoServer, Reply
from selfref_tui.selfref.key_settings import KeySettings
from selfref_tui.selfref.reference import SelfReference
from tests.cli.helpers import cli, one_line, run
from tests.selfref.helpers import turn


def test_help_says_the_app_opens_the_last_conversation_and_commands_use_main():
    top = " ".join(cli("--help").stdout.split())
    assert "the app opens the one it showed last in this data dir (main the first time)" in top
    assert "commands use main" in top
    sub = " ".join(cli("refs", "list", "--help").stdout.split())
    assert "the conversation (memory key); default: main" in sub


def test_every_help_speaks_of_conversations_and_search_of_every_one():
    """--key and keys stay on the command line; what they name is a conversation."""
    import re

    commands = [["--help"], ["ask"], ["compact"], ["history"], ["rewind"], ["branch"],
                ["pin"], ["unpin"], ["search"], ["export"], ["refs", "list"], ["refs", "show"],
                ["refs", "export"], ["experiences", "list"], ["experiences", "add"],
                ["keys", "list"], ["keys", "instructions"], ["context", "show"],
                ["mcp", "list"]]
    for command in commands:
        text = " ".join(cli(*command, "--help").stdout.split())
        # the flag, the command, a JSON field and "memory key" (what --key is called) aside
        words = re.sub(r"--key|`?keys (list|instructions)`?|\"key\"|memory keys?|"
                       r"selfref-tui keys|\bkeys ACTION|conversation-KEY|"
                       r"\bkeys +conversations", "", text)
        assert not re.search(r"\bkeys?\b", words), (command, words)
    search = " ".join(cli("search", "--help").stdout.split())
    assert "--key K search only this conversation (default: every one)" in search


def test_instructions_are_set_printed_sent_shown_and_cleared():
    assert cli("keys", "instructions", "main", "Answer in French.").returncode == 0
    assert cli("keys", "instructions", "main").stdout == "Answer in French.\n"
    shown = json.loads(cli("context", "show", "--demo", "--json").stdout)
    assert shown["instructions"] == "Answer in French."
    assert f"{INSTRUCTIONS_HEADING}\nAnswer in French." in shown["messages"][0]["content"]
    assert "instructions (this conversation's" in cli("context", "show", "--demo").stdout
    # stdin, and a refusal that changes nothing
    assert cli("keys", "instructions", "main", "-", stdin="Be brief.\n").returncode == 0
    refused = cli("keys", "instructions", "main", "x", "--read-only")
    assert refused.returncode == 2 and "--read-only" in one_line(refused.stderr)
    both = cli("keys", "instructions", "main", "x", "--clear")
    assert both.returncode == 2
    assert cli("keys", "instructions", "main").stdout == "Be brief.\n"
    assert cli("keys", "instructions", "main", "--clear").returncode == 0
    assert "no instructions" in cli("keys", "instructions", "main").stdout
    missing = cli("keys", "instructions", "nowhere")
    assert missing.returncode == 1 and "keys list" in one_line(missing.stderr)


def test_the_command_offered_to_set_instructions_names_the_conversation_as_one_word():
    """"set them with `selfref-tui keys instructions my chat TEXT`" made "chat" the text."""
    import shlex

    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        store.open("my chat").commit(turn(1))
    said = cli("keys", "instructions", "my chat").stdout
    command = said.split("`")[1]
    assert command == "selfref-tui keys instructions 'my chat' TEXT"
    assert shlex.split(command)[3:] == ["my chat", "TEXT"]


def test_changing_instructions_takes_the_conversations_lock():
    cli("keys", "instructions", "main", "Say only yes.")
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        store.open("main")  # another window writes the conversation
        locked = run("keys", "instructions", "main", "changed")
        assert locked.returncode == 3 and one_line(locked.stderr)
        assert run("keys", "instructions", "main").stdout == "Say only yes.\n"  # reading works


def test_ask_runs_the_model_the_conversation_chose_unless_a_flag_says_otherwise():
    server = DemoServer([Reply(text="one"), Reply(text="two")], models=("m1", "m2"),
                        context_window=4096)
    url = server.start_in_thread()
    try:
        with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
            store.open("main").save_settings(KeySettings(model="m2"))
        env = {"OPENAI_BASE_URL": url, "SELFREF_MODEL": "m1"}
        assert cli("ask", "hello", env=env).returncode == 0
        assert server.requests[-1]["model"] == "m2"  # what /model chose in the app
        assert cli("ask", "--model", "m1", "again", env=env).returncode == 0
        assert server.requests[-1]["model"] == "m1"  # the flag wins
        shown = json.loads(cli("context", "show", "--json", env=env).stdout)
        assert shown["model"] == "m2"
    finally:
        server.stop_thread()


def test_a_branch_runs_with_its_origins_model_and_instructions():
    server = DemoServer([Reply(text="one"), Reply(text="two"), Reply(text="three")],
                        models=("m1", "m2"), context_window=4096)
    url = server.start_in_thread()
    try:
        env = {"OPENAI_BASE_URL": url, "SELFREF_MODEL": "m1"}
        with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
            store.open("main").save_settings(KeySettings(model="m2"))
        assert cli("keys", "instructions", "main", "Answer in French.").returncode == 0
        assert cli("ask", "hello", env=env).returncode == 0
        assert cli("ask", "again", env=env).returncode == 0
        branched = cli("branch", "3", "--name", "side")
        assert branched.returncode == 0, branched.stderr
        assert cli("keys", "instructions", "side").stdout == "Answer in French.\n"
        assert cli("ask", "--key", "side", "on the branch", env=env).returncode == 0
        sent = server.requests[-1]
        assert sent["model"] == "m2"  # the model the origin chose, not the window's m1
        assert f"{INSTRUCTIONS_HEADING}\nAnswer in French." in sent["messages"][0]["content"]
        assert [m["content"] for m in sent["messages"][1:]] == ["hello", "one", "on the branch"]
        # the branch's own settings from now on: the origin's are not changed by them
        assert cli("keys", "instructions", "side", "--clear").returncode == 0
        assert cli("keys", "instructions", "main").stdout == "Answer in French.\n"
    finally:
        server.stop_thread()
