"""`ask` names every ending on stderr and in its exit code (real subprocess, real server)."""

from __future__ import annotations

from selfref_tui.demo import DemoServer, Reply, ToolCall
from selfref_tui.selfref.reference import SelfReference

from .test_cli import arun


async def test_cut_off_filtered_and_empty_answers(tmp_path):
    data = tmp_path / "data"
    server = DemoServer([Reply(text="Half an ans", finish_reason="length"),
                         Reply(text="Blocked", finish_reason="content_filter"),
                         Reply(text="")], api_key="sk-test", models=("m1",))
    async with server as url:
        env = {"OPENAI_API_KEY": "sk-test", "SELFREF_DATA_DIR": str(data)}
        code, out, err = await arun("ask", "--base-url", url, "--model", "m1", "long", env=env)
        assert (code, out) == (4, "Half an ans\n")
        assert "[warning] the answer was cut off at the output limit" in err

        code, out, err = await arun("ask", "--base-url", url, "--model", "m1", "rude", env=env)
        assert (code, out) == (4, "Blocked\n") and "provider's filter" in err

        code, out, err = await arun("ask", "--base-url", url, "--model", "m1", "quiet", env=env)
        assert (code, out) == (1, "") and "empty answer" in err
    with SelfReference(data) as store:
        stored = store.open("main", write=False).messages
    marks = [(m["role"], m.get("abort_reason"), m.get("failed")) for m in stored]
    assert marks == [
        ("user", None, None), ("assistant", "cut off: output limit", None),
        ("user", None, None), ("assistant", "stopped by the provider's filter", None),
        ("user", None, "empty answer"),
    ]


async def test_compact_command_asks_the_model_and_context_show_counts_tools(tmp_path):
    data = tmp_path / "data"
    summary = {"goal": "g", "instruction": "i", "discoveries": [], "completed": ["chat"],
               "current_status": "summarised", "likely_next_work": "n",
               "relevant_files_directories": []}
    server = DemoServer([Reply(text="First answer."),
                         Reply(tool_calls=[ToolCall("compact", summary, id="k")]),
                         Reply(text="Compacted."), Reply(text="Nothing to compact.")],
                        api_key="sk-test", models=("m1",))
    async with server as url:
        env = {"OPENAI_API_KEY": "sk-test", "SELFREF_DATA_DIR": str(data)}
        base = ("--base-url", url, "--model", "m1")
        assert (await arun("ask", *base, "hello", env=env))[0] == 0
        code, out, err = await arun("compact", *base, env=env)
        assert code == 0, err
        assert out == "Compacted.\n" and "[compacted] 5 messages replaced" in err
        asked = server.requests[1]["messages"][-1]["content"]
        assert "The person asked you to compact" in asked
        code, _, err = await arun("compact", *base, env=env)
        assert code == 1 and "without compacting" in err
        code, out, _ = await arun("context", "show", *base, env=env)
        assert code == 0 and "tools: remember, forget, compact" in out
        assert " tokens of " in out
    with SelfReference(data) as store:
        assert store.open("main", write=False).summary["current_status"] == "summarised"
