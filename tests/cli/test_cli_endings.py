"""`ask` names every ending on stderr and in its exit code (real subprocess, real server)."""

from __future__ import annotations

from selfref_tui.demo import DemoServer, Reply
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
