"""The command line against real stores in tmp dirs, in this process or as a real one.

``ask`` talks to the demo model over real HTTP: ``--demo`` starts the in-package
server inside the command; the provider-failure tests run a DemoServer beside
it and point ``--base-url`` at it. tests/cli/helpers.py says which tests need a
real process (``python -m selfref_tui``) and why.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from selfref_tui.context.mutations import UserMessageMutation
from selfref_tui.demo import DemoServer, HttpError, Reply
from selfref_tui.selfref.reference import SelfReference
from tests.cli.helpers import ROOT, _env, cli, one_line, run


@pytest.mark.parametrize("args", [(), ("ask",), ("refs",), ("refs", "export"),
                                  ("experiences", "add"), ("keys", "list"),
                                  ("context", "show")])
def test_help_everywhere_documents_exit_codes(args):
    result = cli(*args, "--help")
    assert result.returncode == 0 and "usage: selfref-tui" in result.stdout
    assert "130" in result.stdout and "store locked" in result.stdout


def test_usage_errors_are_one_line_exit_2(tmp_path):
    result = run("refs")  # the real entry point: `python -m selfref_tui` exits with main's code
    assert result.returncode == 2 and "ACTION" in one_line(result.stderr)
    result = cli("experiences", "list", "--key", "../evil")
    assert result.returncode == 2 and one_line(result.stderr)
    (tmp_path / "config.toml").write_text("[agent\n")
    result = cli("ask", "hi")
    assert result.returncode == 2 and "config.toml" in one_line(result.stderr)


def test_unconfigured_ask_explains_what_to_do():
    result = cli("ask", "hello")
    assert result.returncode == 1
    assert "OPENAI_API_KEY" in one_line(result.stderr) and "--demo" in result.stderr


def test_ask_demo_then_refs_list_show_export(tmp_path):
    result = cli("ask", "--demo", "show me some code")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("[demo model]") and '<ref id="fib_iterative">' in result.stdout

    listed = cli("refs", "list", "--json")
    rows = json.loads(listed.stdout)
    assert [r["id"] for r in rows] == ["fib_recursive", "fib_iterative", "fib_note"]
    assert set(rows[0]) == {"id", "chars", "lines", "created"}
    assert rows[1]["lines"] > 3 and rows[1]["chars"] > 50
    plain = cli("refs", "list").stdout.splitlines()
    assert "    1 line " in plain[2] and "    8 lines " in plain[1]  # fib_note has one line

    shown = cli("refs", "show", "fib_iterative")
    assert shown.stdout.startswith("```python\ndef fib_iterative")

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    exported = cli("refs", "export", "fib_iterative", str(out_dir))
    target = out_dir / "fib_iterative.py"
    assert exported.returncode == 0 and target.read_text().startswith("def fib_iterative")
    target.write_text("# mine\n")
    refused = cli("refs", "export", "fib_iterative", str(target))
    assert refused.returncode == 1 and "--force" in one_line(refused.stderr)
    assert target.read_text() == "# mine\n"
    appended = cli("refs", "export", "fib_iterative", str(target), "--mode", "append")
    assert appended.returncode == 0
    assert target.read_text().startswith("# mine\ndef fib_iterative")
    forced = cli("refs", "export", "fib_iterative", str(target), "--force")
    assert forced.returncode == 0 and target.read_text().startswith("def fib_iterative")
    link = out_dir / "fib.py"  # a link to nothing yet: asked for --force, not written through
    link.symlink_to(out_dir / "real" / "fib.py")
    refused = cli("refs", "export", "fib_iterative", str(link))
    assert refused.returncode == 1 and "(a link to " in one_line(refused.stderr)
    assert not (out_dir / "real").exists()

    missing = cli("refs", "show", "nope")
    assert missing.returncode == 1 and "fib_note" in one_line(missing.stderr)


def test_ask_reads_stdin_and_keys_list(tmp_path):
    result = cli("ask", "--demo", "--key", "work", "-", stdin="remember that I use vim\n")
    assert result.returncode == 0, result.stderr
    assert "[tool] remember" in result.stderr and "Stored it as exp_001" in result.stdout
    keys = json.loads(cli("keys", "list", "--json").stdout)
    assert [k["key"] for k in keys] == ["work"]
    assert set(keys[0]) == {"key", "messages", "updated"} and keys[0]["messages"] >= 4
    exps = json.loads(cli("experiences", "list", "--key", "work", "--json").stdout)
    assert [(e["id"], e["text"], e["source"]) for e in exps] == [
        ("exp_001", "The person said: I use vim", "agent")]


def test_experiences_add_forget_persisted(tmp_path):
    added = cli("experiences", "add", "prefers short answers")
    assert added.returncode == 0 and added.stdout.strip() == "exp_001"
    assert cli("experiences", "add", "uses Linux").stdout.strip() == "exp_002"
    forgot = cli("experiences", "forget", "exp_001")
    assert forgot.returncode == 0
    assert [(e["id"], e["text"]) for e in json.loads(
        cli("experiences", "list", "--json").stdout)] == [("exp_002", "uses Linux")]
    again = cli("experiences", "forget", "exp_001")
    assert again.returncode == 1 and "exp_001" in one_line(again.stderr)
    # persisted as patches in the store, visible to a fresh reader
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        memory = store.open("main", write=False)
        assert [e["id"] for e in memory.experiences] == ["exp_002"]


def test_context_show_is_the_next_request():
    cli("experiences", "add", "likes tea")
    assert cli("ask", "--demo", "hello").returncode == 0
    shown = cli("context", "show", "--json", "--model", "my-model")
    data = json.loads(shown.stdout)
    assert set(data) == {"model", "messages", "tools", "tokens", "window", "rewound",
                         "instructions", "breakdown", "auto_compaction"}
    assert data["model"] == "my-model" and data["window"] > 0
    names = [t["function"]["name"] for t in data["tools"]]
    assert "remember" in names and "fork_spawn" in names  # the exact list of the next call
    roles = [m["role"] for m in data["messages"]]
    assert roles == ["system", "user", "assistant"]
    assert "likes tea" in data["messages"][0]["content"]
    assert data["messages"][2]["content"].startswith("[demo model]")
    assert data["tokens"] > 50
    text = cli("context", "show")
    assert text.returncode == 0 and "── [2] assistant" in text.stdout


def test_store_locked_exits_3():
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        store.open("main")
        result = run("experiences", "add", "x")
        assert result.returncode == 3 and one_line(result.stderr)
        # said of a conversation, in the words the rest of the command line uses
        assert "Conversation 'main' is open for writing in another selfref-tui (pid " in (
            result.stderr)
        assert "close it there first" in result.stderr
        # readers still work while a writer holds the key
        assert run("experiences", "list").returncode == 0


def test_the_locked_hint_runs_as_copied_for_a_name_with_a_space():
    import shlex

    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        store.open("my chat").commit([UserMessageMutation({"role": "user", "content": "hi"})])
        result = run("--key", "my chat", "experiences", "add", "x")
        assert result.returncode == 3, result.stderr
        hint = one_line(result.stderr).rsplit("`", 2)[-2]
        assert hint == "selfref-tui --read-only --key 'my chat'"
        copied = run(*shlex.split(hint)[1:], "history")  # the person pastes it
        assert copied.returncode == 0, copied.stderr
        assert copied.stdout.splitlines()[1] == "hi"


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143),
                                               (signal.SIGHUP, 129)])
def test_sigint_aborts_keeps_partial_and_exits_130(signum, code):
    """Ctrl+C stops the answer as Esc does. So do a SIGTERM (`timeout`, a cancelled job)
    and a SIGHUP (the terminal closed): their default action ended the process, and the
    answer printed so far was missing from the conversation."""
    proc = subprocess.Popen([sys.executable, "-m", "selfref_tui", "ask", "--demo",
                             "write something long"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(), cwd=ROOT)
    assert proc.stdout is not None
    first = b""
    while len(first) < 40:  # the answer is streaming (raw reads: communicate() skips buffers)
        chunk = os.read(proc.stdout.fileno(), 40)
        assert chunk, proc.stderr.read() if proc.stderr else ""
        first += chunk
    assert first.startswith(b"[demo model]")
    time.sleep(0.3)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "interrupted" in one_line(err.decode())
    streamed = (first + out).decode()
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        last = store.open("main", write=False).messages[-1]
    assert last["role"] == "assistant" and last.get("truncated")
    assert last["content"].startswith(streamed.strip()[:200])
    assert len(last["content"]) < 8_000  # cut well before the end
    again = cli("ask", "--demo", "hi")  # the next turn is a normal one
    assert again.returncode == 0 and "Try one of these" in again.stdout


def test_sigint_before_any_answer_says_there_is_none():
    """Ctrl+C while the model had not answered yet (MCP servers starting, a slow first
    token): "the partial answer was kept" sent the person looking for an answer that
    never came."""
    from selfref_tui.demo.script import Stall

    stall = Stall(event=asyncio.Event())  # holds the answer before its first word
    server = DemoServer([stall], api_key="sk-test", models=("m1",), context_window=32000)
    url = server.start_in_thread()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "selfref_tui", "ask", "hello",
                                 "--base-url", url, "--model", "m1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=_env({"OPENAI_API_KEY": "sk-test"}), cwd=ROOT)
        deadline = time.monotonic() + 60
        while not stall.reached.is_set():  # the request is at the server, unanswered
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        server.stop_thread()
    assert proc.returncode == 130, err
    assert out == b""
    assert one_line(err.decode()) == ("selfref-tui: interrupted before any answer arrived: "
                                      "your message is kept, unanswered")
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        messages = store.open("main", write=False).messages
    # the message, and an empty answer marked interrupted: nothing partial to look for
    assert [(m["role"], m["content"]) for m in messages if m["role"] != "system"] == [
        ("user", "hello"), ("assistant", "")]
    assert messages[-1].get("truncated")


def test_ask_into_a_reader_that_leaves_stops_quietly_and_keeps_the_part(tmp_path):
    """`selfref-tui ask ... | head`: the turn stops as on Ctrl+C, with the reason."""
    proc = subprocess.Popen([sys.executable, "-m", "selfref_tui", "ask", "--demo",
                             "write something long"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(), cwd=ROOT)
    assert proc.stdout is not None
    assert proc.stdout.read(20).startswith(b"[demo model]")
    proc.stdout.close()  # the reader leaves
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert err.decode() == ""  # nothing to report: the person saw what they wanted
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        last = store.open("main", write=False).messages[-1]
    assert last["role"] == "assistant" and last.get("truncated")
    assert last["abort_reason"] == "output closed by its reader"


def test_ask_against_a_server_and_its_failures(tmp_path):
    # a profile with one retry keeps the backoff short (and tests the profile path)
    (tmp_path / "config.toml").write_text(
        'default_provider = "t"\n[providers.t]\nmax_retries = 1\n')
    long = "the cause, at the end of a long report: " + "detail " * 40 + "— tool_call_id missing"
    server = DemoServer([Reply(text="Hello from a real endpoint."),
                         HttpError(500, "kaput"), HttpError(500, "kaput"),
                         HttpError(400, long, type="invalid_request_error")],
                        api_key="sk-test", models=("m1",), context_window=4096)
    url = server.start_in_thread()  # `ask` runs its own event loop in this thread
    try:
        env = {"OPENAI_API_KEY": "sk-test"}
        result = cli("ask", "--base-url", url, "--model", "m1", "hi", env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Hello from a real endpoint.\n"
        assert server.requests[0]["model"] == "m1" and server.requests[0]["stream"] is True

        result = cli("ask", "--base-url", url, "--model", "m1", "again", env=env)
        err = result.stderr
        assert result.returncode == 1 and "500" in err.strip().splitlines()[-1]
        assert err.count("[retry") == 1  # the profile's max_retries, visible
        assert "[retry 1 of 1 in " in err and " s: server error (500)]" in err
        assert "window unknown" not in err  # read off the server's /props

        result = cli("ask", "--base-url", url, "--model", "m1", "-v", "x", env=env)
        err = result.stderr
        assert result.returncode == 1 and long in err  # --verbose: the server's text in full
        assert "tool_call_id missing" not in err.strip().splitlines()[-1]

        result = cli("ask", "--base-url", url, "--model", "m1", "x",
                     env={"OPENAI_API_KEY": "wrong"})
        assert result.returncode == 1 and f"API key rejected by {url}" in one_line(result.stderr)
        assert "wrong" not in result.stderr

        result = cli("ask", "--base-url", url, "--model", "zz", "x", env=env)
        assert result.returncode == 1 and "'zz'" in one_line(result.stderr)
    finally:
        server.stop_thread()

    result = cli("ask", "--base-url", url, "--model", "m1", "x", env=env)
    assert result.returncode == 1
    assert f"cannot reach {url}" in result.stderr.strip().splitlines()[-1]


def test_ask_tells_the_person_what_the_runtime_notices():
    """A Notice (here: a server that refuses stream_options) is a note on stderr."""
    server = DemoServer([Reply(text="answer")], reject_stream_options=True, models=("m1",))
    url = server.start_in_thread()
    try:
        result = cli("ask", "--base-url", url, "--model", "m1", "hi",
                     env={"OPENAI_API_KEY": "sk-test"})
    finally:
        server.stop_thread()
    err = result.stderr
    assert result.returncode == 0, err
    assert result.stdout == "answer\n"
    assert "stream_options" in err, err
    assert "[warning]" in err or "[information]" in err, err


def test_ask_demo_compacts_once_and_stops(tmp_path):
    """After a compaction the request merges the summary and the runtime's note into one
    user message; the demo model must read that as done, not compact again to the step limit."""
    env = {"SELFREF_DATA_DIR": str(tmp_path / "data")}
    cli("ask", "--demo", "remember that I like Python", env=env)
    result = cli("ask", "--demo", "compact the context", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("[tool] compact") == 1, result.stderr
    assert "compacted" in result.stdout


def test_the_program_keeps_its_objects_out_of_pythons_last_collection(tmp_path):
    """``selfref-tui`` (the console script and ``python -m``) is ``cli.run``: after the
    command, Python's final collection at exit walked every object the process made,
    1.3–4.5 s before the shell prompt came back on a loaded machine."""
    import gc
    import io
    from contextlib import redirect_stdout

    from selfref_tui.cli import run

    gc.unfreeze()
    try:
        with redirect_stdout(io.StringIO()):
            assert run(["--data-dir", str(tmp_path / "data"), "keys", "list"]) == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_base_url_without_http_is_a_usage_error_that_says_the_fix(tmp_path):
    """``localhost:11434/v1`` was tried three times and reported as "cannot reach … is the
    server running?" — while the server ran fine and only the scheme was missing."""
    from tests.cli.helpers import cli, one_line

    data = str(tmp_path / "data")
    shown = cli("--data-dir", data, "ask", "--base-url", "localhost:11434/v1", "--model", "m",
                "hi", env={"OPENAI_API_KEY": "sk-test-123456789"})
    assert shown.returncode == 2 and shown.stdout == ""
    assert one_line(shown.stderr) == (
        "selfref-tui: --base-url is 'localhost:11434/v1', not an http(s) URL — "
        "did you mean http://localhost:11434/v1?")
    shown = cli("--data-dir", data, "context", "show",
                env={"OPENAI_BASE_URL": "https://user:secret@/v1"})
    assert shown.returncode == 2 and "secret" not in shown.stderr
    assert one_line(shown.stderr).startswith("selfref-tui: OPENAI_BASE_URL is ")


@pytest.mark.parametrize("name", ["", "a/b"])
def test_the_app_refuses_a_conversation_name_before_its_screen_opens(tmp_path, name):
    """`selfref-tui --key ""` (a script's "$K" unset) opened a screen whose conversation
    never loaded; like every command, the app says what is wrong with the name and exits 2."""
    result = run("--key", name, "--demo", "--data-dir", str(tmp_path / "data"), stdin="",
                 timeout=60)
    assert result.returncode == 2, result
    assert "Conversation name" in result.stderr or "conversation name" in result.stderr
    assert "\x1b[" not in result.stdout  # no screen was drawn


def test_version_prints_the_programs_version():
    """A bug report names the version first; `--version` said "unrecognized arguments"."""
    import selfref_tui

    result = cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"selfref-tui {selfref_tui.__version__}\n"
    import tomllib  # the version said is the one the package is built with

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == selfref_tui.__version__
