"""`ask` names every ending on stderr and in its exit code (real server, real store)."""

from __future__ import annotations

from selfref_tui.demo import DemoServer, Reply, ToolCall
from selfref_tui.selfref.reference import SelfReference

from .helpers import cli


def test_cut_off_filtered_and_empty_answers(tmp_path):
    data = tmp_path / "data"
    server = DemoServer([Reply(text="Half an ans", finish_reason="length"),
                         Reply(text="Blocked", finish_reason="content_filter"),
                         Reply(text="")], api_key="sk-test", models=("m1",))
    url = server.start_in_thread()
    try:
        env = {"OPENAI_API_KEY": "sk-test", "SELFREF_DATA_DIR": str(data)}
        result = cli("ask", "--base-url", url, "--model", "m1", "long", env=env)
        assert (result.returncode, result.stdout) == (4, "Half an ans\n")
        assert "[warning] the answer was cut off at the output limit" in result.stderr

        result = cli("ask", "--base-url", url, "--model", "m1", "rude", env=env)
        assert (result.returncode, result.stdout) == (4, "Blocked\n")
        assert "provider's filter" in result.stderr

        result = cli("ask", "--base-url", url, "--model", "m1", "quiet", env=env)
        assert (result.returncode, result.stdout) == (1, "") and "empty answer" in result.stderr
    finally:
        server.stop_thread()
    with SelfReference(data) as store:
        stored = store.open("main", write=False).messages
    marks = [(m["role"], m.get("abort_reason"), m.get("failed")) for m in stored]
    assert marks == [
        ("user", None, None), ("assistant", "cut off: output limit", None),
        ("user", None, None), ("assistant", "stopped by the provider's filter", None),
        ("user", None, "empty answer"),
    ]


def test_compact_command_asks_the_model_and_context_show_counts_tools(tmp_path):
    data = tmp_path / "data"
    summary = {"goal": "g", "instruction": "i", "discoveries": [], "completed": ["chat"],
               "current_status": "summarised", "likely_next_work": "n",
               "relevant_files_directories": []}
    server = DemoServer([Reply(text="First answer."),
                         Reply(tool_calls=[ToolCall("compact", summary, id="k")]),
                         Reply(text="Compacted."), Reply(text="Nothing to compact.")],
                        api_key="sk-test", models=("m1",))
    url = server.start_in_thread()
    try:
        env = {"OPENAI_API_KEY": "sk-test", "SELFREF_DATA_DIR": str(data)}
        base = ("--base-url", url, "--model", "m1")
        assert cli("ask", *base, "hello", env=env).returncode == 0
        result = cli("compact", *base, env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Compacted.\n"
        assert "[compacted] 5 messages replaced" in result.stderr
        asked = server.requests[1]["messages"][-1]["content"]
        assert "The person asked you to compact" in asked
        result = cli("compact", *base, "--focus", "the exit codes", env=env)
        assert result.returncode == 1
        # said once, as the command's error, with what to do
        assert result.stderr.count("without compacting") == 1
        assert "run `selfref-tui compact` again" in result.stderr
        asked = server.requests[3]["messages"][-1]["content"]
        assert asked.endswith("The person asked the summary to focus on: the exit codes")
        result = cli("context", "show", *base, env=env)
        assert result.returncode == 0 and "tools: remember, forget, compact" in result.stdout
        assert " tokens of " in result.stdout
    finally:
        server.stop_thread()
    with SelfReference(data) as store:
        assert store.open("main", write=False).summary["current_status"] == "summarised"


def test_compact_command_on_a_window_too_small_for_the_compact_tool_calls_no_model(tmp_path):
    """No compact tool on offer: the command says so and sends nothing (no answer again)."""
    data = tmp_path / "data"
    server = DemoServer([Reply(text="hi there"), Reply(text="answered again")],
                        api_key="sk-test", models=("m1",))
    url = server.start_in_thread()
    try:
        env = {"OPENAI_API_KEY": "sk-test", "SELFREF_DATA_DIR": str(data)}
        base = ("--base-url", url, "--model", "m1", "--context-window", "600")
        assert cli("ask", *base, "hello", env=env).returncode == 0
        result = cli("compact", *base, env=env)
        assert result.returncode == 1
        assert "cannot compact: the window is too small" in result.stderr
        assert len(server.requests) == 1
    finally:
        server.stop_thread()
    with SelfReference(data) as store:
        stored = store.open("main", write=False).messages
    assert [m["content"] for m in stored] == ["hello", "hi there"]


def test_compact_is_refused_under_read_only_and_changes_nothing(tmp_path):
    """`compact` commits a summary: like `ask`, it is a write that --read-only refuses."""
    data = tmp_path / "data"
    server = DemoServer([Reply(text="hi there")], api_key="sk-test", models=("m1",))
    url = server.start_in_thread()
    try:
        env = {"OPENAI_API_KEY": "sk-test", "SELFREF_DATA_DIR": str(data)}
        base = ("--base-url", url, "--model", "m1")
        assert cli("ask", *base, "hello", env=env).returncode == 0
        result = cli("compact", "--read-only", *base, env=env)
        assert result.returncode == 2
        assert "`compact` changes the conversation, and --read-only was given" in result.stderr
        assert len(server.requests) == 1
    finally:
        server.stop_thread()
    with SelfReference(data) as store:
        stored = store.open("main", write=False).messages
    assert [m["content"] for m in stored] == ["hello", "hi there"]
