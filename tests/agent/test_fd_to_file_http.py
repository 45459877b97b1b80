"""fd_to_file over real HTTP: the person, not the model, decides about existing files.

The demo server plays a model that asks to write a ref to a file; the real
provider, loop, tools and store run as in the app (``interactive``, answered
through the router) and as in ``ask`` (nobody to ask, with and without
``--allow-overwrite``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from selfref_tui.agent import events as ev
from selfref_tui.agent.turn.router import AgentInputRouter
from selfref_tui.demo import DemoServer
from selfref_tui.demo.script import Reply, ToolCall

from .helpers import wait_until

FENCED = "```python\ndef add(a, b):\n    return a + b\n```"


def writing(args: dict, text: str = '<ref id="note">new text</ref>') -> list[Reply]:
    return [Reply(text=text, tool_calls=[ToolCall("fd_to_file", args, id="w")]),
            Reply(text="Finished.")]


def tool_result(h) -> str:
    """What the model was told: the tool message of the second request."""
    return next(m["content"] for m in h.server.requests[1]["messages"] if m["role"] == "tool")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    w = tmp_path / "work"
    w.mkdir()
    (w / "exists.txt").write_text("old\n")
    return w


async def run(h, work: Path, *, interactive: bool, answer: str | None = None,
              allow_overwrite: bool = False) -> None:
    h.agent.settings = h.with_settings(allowed_roots=(work,),
                                       allow_overwrite=allow_overwrite).settings
    h.agent.interactive = interactive
    router = AgentInputRouter(h.agent)
    router.submit("save it")
    if answer is not None:
        await wait_until(lambda: h.of(ev.QuestionAsked), what="the question")
        router.answer(h.of(ev.QuestionAsked)[0].question_id, answer)
    await router.wait_idle()
    assert router.outcomes == ["done"]


@pytest.mark.parametrize("mode,yes", [("write", "overwrite"), ("append", "append"),
                                      ("insert", "insert")])
async def test_changing_an_existing_file_asks_the_person_whatever_exist_ok_says(
        harness, work, mode, yes):
    args = {"fd": "ref:note", "file_path": "exists.txt", "mode": mode, "exist_ok": True}
    if mode == "insert":
        args["insert_at_line"] = 1
    async with harness(writing(args)) as h:
        await run(h, work, interactive=True, answer="keep")
        question = h.of(ev.QuestionAsked)[0]
        assert question.choices == (yes, "keep") and "exists.txt" in question.prompt
        assert "chose to keep it" in tool_result(h)
    assert (work / "exists.txt").read_text() == "old\n"


async def test_the_persons_yes_lets_the_write_happen(harness, work):
    args = {"fd": "ref:note", "file_path": "exists.txt", "mode": "append", "exist_ok": True}
    async with harness(writing(args)) as h:
        await run(h, work, interactive=True, answer="append")
        assert "<fd_to_file_result" in tool_result(h)
    assert (work / "exists.txt").read_text() == "old\nnew text"


async def test_exist_ok_false_refuses_without_asking(harness, work):
    args = {"fd": "ref:note", "file_path": "exists.txt", "exist_ok": False}
    async with harness(writing(args)) as h:
        await run(h, work, interactive=True)
        assert h.of(ev.QuestionAsked) == []
        assert "already exists" in tool_result(h)
    assert (work / "exists.txt").read_text() == "old\n"


async def test_the_question_names_the_file_a_link_would_change(harness, work):
    """notes.txt links to src/config.py inside the root: the person is asked about config.py."""
    (work / "src").mkdir()
    (work / "src" / "config.py").write_text("SETTING = 1\n")
    (work / "notes.txt").symlink_to(work / "src" / "config.py")
    args = {"fd": "ref:note", "file_path": "notes.txt"}
    async with harness(writing(args)) as h:
        await run(h, work, interactive=True, answer="keep")
        prompt = h.of(ev.QuestionAsked)[0].prompt
        assert str(work / "src" / "config.py") in prompt and "notes.txt" in prompt
    assert (work / "src" / "config.py").read_text() == "SETTING = 1\n"


@pytest.mark.parametrize("swap", ["the-link-retargeted", "the-file-made-a-link"])
async def test_a_path_that_leads_elsewhere_after_the_yes_is_not_written(harness, work, swap):
    """The person says yes to changing one file; while they read the question, the path
    is made to lead to another file inside the allowed folder (a link retargeted, or
    the file swapped for a link). The write went to that other file, which nobody said
    yes to: it is refused now, and both files are as they were."""
    (work / "src").mkdir()
    asked = work / "src" / "config.py"
    asked.write_text("SETTING = 1\n")
    other = work / "src" / "secret.py"
    other.write_text("KEY = 'mine'\n")
    named = work / "notes.txt"
    if swap == "the-link-retargeted":
        named.symlink_to(asked)
    else:
        named = asked
    args = {"fd": "ref:note", "file_path": str(named.relative_to(work))}
    async with harness(writing(args)) as h:
        h.agent.settings = h.with_settings(allowed_roots=(work,)).settings
        h.agent.interactive = True
        router = AgentInputRouter(h.agent)
        router.submit("save it")
        await wait_until(lambda: h.of(ev.QuestionAsked), what="the question")
        assert str(asked.relative_to(work)) in h.of(ev.QuestionAsked)[0].prompt
        if swap == "the-link-retargeted":
            named.unlink()
        else:
            asked.rename(work / "src" / "config.py.moved")
        named.symlink_to(other)
        router.answer(h.of(ev.QuestionAsked)[0].question_id, "overwrite")
        await router.wait_idle()
        result = tool_result(h)
        assert "<fd_error" in result and "the person said yes to changing" in result
    assert other.read_text() == "KEY = 'mine'\n"
    kept = asked if swap == "the-link-retargeted" else work / "src" / "config.py.moved"
    assert kept.read_text() == "SETTING = 1\n"


@pytest.mark.parametrize("args", [
    {"fd": "ref:nowhere", "file_path": "exists.txt"},
    {"fd": "ref:note", "file_path": "exists.txt", "mode": "replace-all"},
])
async def test_a_write_that_would_fail_anyway_is_not_asked_about(harness, work, args):
    async with harness(writing(args)) as h:
        await run(h, work, interactive=True)
        assert h.of(ev.QuestionAsked) == []
        result = tool_result(h)
        assert "nowhere" in result or "replace-all" in result
    assert (work / "exists.txt").read_text() == "old\n"


@pytest.mark.parametrize("mode", ["write", "append", "insert"])
async def test_a_read_only_file_is_refused_before_the_person_is_asked(harness, work, mode):
    """The person made the file read-only (for root: immutable): no mode changes it, so
    nobody is asked to allow a change that would not happen; the model is told why."""
    from tests.selfref.test_store_cli import denied

    args = {"fd": "ref:note", "file_path": "exists.txt", "mode": mode}
    if mode == "insert":
        args["insert_at_line"] = 1
    async with harness(writing(args)) as h:
        h.agent.settings = h.with_settings(allowed_roots=(work,)).settings
        h.agent.interactive = True
        router = AgentInputRouter(h.agent)
        with denied(work / "exists.txt", 0o444):
            router.submit("save it")
            await wait_until(lambda: h.of(ev.QuestionAsked) or h.of(ev.ToolCallEnded),
                             what="the question or the tool's result")
            asked = h.of(ev.QuestionAsked)
            if asked:  # answered, so that a failing check does not leave the turn waiting
                router.answer(asked[0].question_id, "keep")
            await router.wait_idle()
        assert asked == []
        assert "exists.txt is read-only; nothing was changed" in tool_result(h)
    assert (work / "exists.txt").read_text() == "old\n"


async def test_a_new_file_needs_no_question(harness, work):
    async with harness(writing({"fd": "ref:note", "file_path": "new.txt"})) as h:
        await run(h, work, interactive=True)
        assert h.of(ev.QuestionAsked) == []
    assert (work / "new.txt").read_text() == "new text"


async def test_without_anyone_to_ask_the_file_is_kept_and_the_model_told_why(harness, work):
    args = {"fd": "ref:note", "file_path": "exists.txt", "exist_ok": True}
    async with harness(writing(args)) as h:
        await run(h, work, interactive=False)
        said = tool_result(h)
        assert "could not be asked" in said and "--allow-overwrite" in said
        assert "new path" in said
    assert (work / "exists.txt").read_text() == "old\n"


async def test_allow_overwrite_lets_a_non_interactive_run_change_it(harness, work):
    args = {"fd": "ref:note", "file_path": "exists.txt"}
    async with harness(writing(args)) as h:
        await run(h, work, interactive=False, allow_overwrite=True)
    assert (work / "exists.txt").read_text() == "new text"


async def test_a_lone_fenced_ref_is_written_without_its_fence_raw_keeps_it(harness, work):
    text = f'<ref id="add">\n{FENCED}\n</ref>'
    script = [Reply(text=text, tool_calls=[
        ToolCall("fd_to_file", {"fd": "ref:add", "file_path": "add.py"}, id="a"),
        ToolCall("fd_to_file", {"fd": "ref:add", "file_path": "add.md", "raw": True}, id="b"),
    ]), Reply(text="Both saved.")]
    async with harness(script) as h:
        await run(h, work, interactive=False)
        tools = {m["tool_call_id"]: m["content"] for m in h.server.requests[1]["messages"]
                 if m["role"] == "tool"}
        assert 'fence="removed"' in tools["a"] and "fence=" not in tools["b"]
        schema = next(t for t in h.server.requests[0]["tools"]
                      if t["function"]["name"] == "fd_to_file")["function"]
        assert "raw" in schema["parameters"]["properties"] and "fence" in schema["description"]
    code = (work / "add.py").read_text()
    assert code == "def add(a, b):\n    return a + b\n"
    compile(code, "add.py", "exec")
    assert (work / "add.md").read_text().strip() == FENCED


@pytest.mark.parametrize("flag,expected", [((), "old\n"), (("--allow-overwrite",), "new text")])
def test_ask_on_the_command_line_keeps_files_unless_allowed(tmp_path, work, flag, expected,
                                                           monkeypatch):
    from tests.cli.helpers import cli

    server = DemoServer(writing({"fd": "ref:note", "file_path": "exists.txt", "exist_ok": True}),
                        api_key="sk-test", models=("m1",))
    url = server.start_in_thread()
    monkeypatch.chdir(work)
    try:
        result = cli("ask", *flag, "--base-url", url, "--model", "m1", "save it",
                     env={"OPENAI_API_KEY": "sk-test"})
        assert result.returncode == 0, result.stderr
        told = next(m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool")
    finally:
        server.stop_thread()
    assert (work / "exists.txt").read_text() == expected
    if not flag:
        assert "--allow-overwrite" in told


async def test_two_calls_sharing_an_id_get_their_own_results(harness):
    script = [Reply(tool_calls=[ToolCall("remember", {"text": "one"}, id="dup"),
                                ToolCall("remember", {"text": "two"}, id="dup")]),
              Reply(text="Both kept.")]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "remember both") == "done"
        sent = h.server.requests[1]["messages"]
        calls = next(m for m in sent if m.get("tool_calls"))["tool_calls"]
        assert [c["id"] for c in calls] == ["dup", "dup_2"]
        results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
        assert sorted(results) == ["dup", "dup_2"]
        assert {'"exp_001"' in r or '"exp_002"' in r for r in results.values()} == {True}
        assert results["dup"] != results["dup_2"]
        names = [c["function"]["name"] for m in sent for c in m.get("tool_calls", [])]
        assert names == ["remember", "remember"]  # no invented unknown_tool
    stored = h.reload()
    assert [(e["id"], e["text"], e["source"]) for e in stored.experiences] == [
        ("exp_001", "one", "agent"), ("exp_002", "two", "agent")]
