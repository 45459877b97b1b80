"""MCP tools in the runtime loop, over real HTTP (demo server + openai client) and a real
MCP server subprocess: what the model receives for each kind of result."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime

import pytest
import pytest_asyncio

from selfref_tui.agent import events as ev
from selfref_tui.agent.abort import AbortSignal
from selfref_tui.agent.mcp.approval import APPROVE_ALWAYS
from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.mcp.trust import add_trust
from selfref_tui.context.apply import MULTIMODAL_MARK
from selfref_tui.demo.script import Reply, ToolCall
from tests.agent.conftest import Harness
from tests.agent.helpers import wait_until

from .conftest import server_config, time_server
from .server import tiny_png

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def mcp(tmp_path_factory):
    """One test server for the module; echo, long_text, picture and slow are trusted."""
    mark = tmp_path_factory.mktemp("mcp") / "mark"
    config = server_config(trust=("echo", "long_text", "picture", "slow"),
                           env=(("SELFREF_MCP_MARK", str(mark)),))
    manager = McpManager([config])
    await manager.wait_started(timeout=60)
    assert manager.statuses()[0].state == "ready", manager.statuses()[0].error
    manager.mark = mark
    yield manager
    await manager.aclose()


def _with(h: Harness, manager: McpManager) -> Harness:
    h.agent.tool_sources.append(manager)
    return h


def _tool_messages(body):
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_the_model_sees_mcp_tools_and_gets_a_result(tmp_path, mcp):
    script = [Reply(tool_calls=[ToolCall("mcp__test__echo", {"text": "hi"}, id="c1")]),
              Reply(text="It said hi.")]
    async with Harness(tmp_path, script) as h:
        _with(h, mcp)
        assert await h.agent.run_turn("main", "echo hi") == "done"
        tools = {t["function"]["name"]: t for t in h.server.requests[0]["tools"]}
        assert "remember" in tools and "mcp__test__echo" in tools
        assert tools["mcp__test__echo"]["function"]["parameters"]["required"] == ["text"]
        [result] = _tool_messages(h.server.requests[1])
        assert result == {"role": "tool", "tool_call_id": "c1", "content": "echo: hi"}
        [ended] = h.of(ev.ToolCallEnded)
        assert ended.name == "mcp__test__echo" and ended.result == "echo: hi"
        # Forks get the same tools.
        assert "mcp__test__echo" in {t["function"]["name"] for t in
                                     h.agent.tools_for("main::fork::1")}


async def test_a_long_result_becomes_an_fd_the_model_can_read(tmp_path, mcp):
    script = [Reply(tool_calls=[ToolCall("mcp__test__long_text", {}, id="c1")]),
              Reply(text="Long.")]
    async with Harness(tmp_path, script) as h:
        _with(h, mcp)
        assert await h.agent.run_turn("main", "long please") == "done"
        [result] = _tool_messages(h.server.requests[1])
        assert result["content"].startswith("<fd_result") and 'chars="20000"' in result["content"]
        assert len(result["content"]) < 8_000
    stored = h.reload()
    [fd] = stored.fds.values() if isinstance(stored.fds, dict) else stored.fds
    assert "line 00001" in json.dumps(fd)


async def test_an_image_travels_in_a_user_message(tmp_path, mcp):
    script = [Reply(tool_calls=[ToolCall("mcp__test__picture", {}, id="c1")]),
              Reply(text="A red square.")]
    async with Harness(tmp_path, script) as h:
        _with(h, mcp)
        assert await h.agent.run_turn("main", "show me") == "done"
        body = h.server.requests[1]
        assert _tool_messages(body) == []  # the call became a note plus a user message
        users = [m for m in body["messages"] if m["role"] == "user"]
        parts = users[-1]["content"]
        assert parts[0]["type"] == "text" and "a red square" in parts[0]["text"]
        url = parts[1]["image_url"]["url"]
        assert base64.b64decode(url.split(",", 1)[1]) == tiny_png()
        assert all(MULTIMODAL_MARK not in m for m in body["messages"])  # not sent on the wire
    history = h.reload().history
    assert any(isinstance(m.get("content"), list) for m in history if m["role"] == "user")


async def test_esc_cancels_a_running_call_over_the_protocol(tmp_path, mcp):
    mcp.mark.unlink(missing_ok=True)
    script = [Reply(tool_calls=[ToolCall("mcp__test__slow", {"seconds": 30}, id="c1")]),
              Reply(text="after")]
    async with Harness(tmp_path, script) as h:
        _with(h, mcp)
        abort = AbortSignal()
        turn = asyncio.create_task(h.agent.run_turn("main", "wait", abort=abort))
        await wait_until(lambda: mcp.mark.exists(), timeout=20, what="the slow call to start")
        abort.fire("Esc")
        assert await turn == "aborted"
        await wait_until(lambda: mcp.mark.read_text() == "cancelled", timeout=20,
                         what="the server to receive notifications/cancelled")
        assert [a.stage for a in h.of(ev.Aborted)] == ["tools"]
    [tool] = [m for m in h.reload().messages if m["role"] == "tool"]
    assert tool["tool_call_id"] == "c1" and "cancelled" in tool["content"]


async def test_an_untrusted_call_without_a_person_is_not_allowed_and_the_loop_goes_on(
        tmp_path, mcp):
    """Where nobody can be asked (no ``--allow-tools`` either, as in ``compact``), the model
    hears that the tool is not allowed in this run, and the person how to allow it, once."""
    script = [Reply(tool_calls=[ToolCall("mcp__test__fail", {}, id="c1")]),
              Reply(tool_calls=[ToolCall("mcp__test__fail", {}, id="c2")]),
              Reply(text="Fine, I will not.")]
    notices: list = []
    async with Harness(tmp_path, script) as h:
        _with(h, mcp)
        mcp.emit = notices.append
        try:
            assert await h.agent.run_turn("main", "try it") == "done"
        finally:
            mcp.emit = ev.discard
        [result] = _tool_messages(h.server.requests[1])
        assert result["content"].startswith(
            "Error: mcp__test__fail is not allowed in this non-interactive run")
        assert "declined" not in result["content"]
        assert [e.name for e in h.of(ev.ToolCallError)] == ["mcp__test__fail"] * 2
        [hint] = [n.message for n in notices if "mcp__test__fail" in n.message]
        assert hint.endswith('to allow it, trust it in config.toml ([mcp.servers.test] '
                             'trust = ["fail"])')


async def test_trust_this_tool_is_saved_and_an_error_result_reaches_the_model(tmp_path, mcp):
    config = tmp_path / "config.toml"
    config.write_text('# mine\n[mcp.servers.test]\ncommand = "x"\n', encoding="utf-8")
    mcp.on_trust = lambda server, tool: add_trust(config, server, tool)
    script = [Reply(tool_calls=[ToolCall("mcp__test__fail", {"reason": "no disk"}, id="c1")]),
              Reply(tool_calls=[ToolCall("mcp__test__fail", {}, id="c2")]),
              Reply(text="It fails.")]
    try:
        async with Harness(tmp_path, script) as h:
            _with(h, mcp)
            h.agent.interactive = True

            def answer(event):
                h.events.append(event)
                if isinstance(event, ev.QuestionAsked):
                    assert "tool: fail" in event.prompt and "no disk" in event.prompt
                    h.agent.answer_question(event.question_id, APPROVE_ALWAYS)

            h.agent.emit = answer
            assert await h.agent.run_turn("main", "try it") == "done"
            assert len(h.of(ev.QuestionAsked)) == 1  # the second call was trusted
            first = _tool_messages(h.server.requests[1])[0]["content"]
            assert first.startswith("Error: ") and "declined" not in first
        assert config.read_text(encoding="utf-8") == \
            '# mine\n[mcp.servers.test]\ncommand = "x"\ntrust = ["fail"]\n'
    finally:
        mcp.on_trust = None
        mcp._trusted["test"].discard("fail")


async def test_the_pypi_time_server_answers_the_model(tmp_path):
    """Conformance with `mcp-server-time`: its schema reaches the model, its answer too."""
    manager = McpManager([time_server()])
    script = [Reply(tool_calls=[ToolCall("mcp__time__get_current_time", {"timezone": "UTC"},
                                         id="c1")]),
              Reply(text="It is now.")]
    try:
        await manager.wait_started(timeout=60)
        async with Harness(tmp_path, script) as h:
            _with(h, manager)
            assert await h.agent.run_turn("main", "what time is it?") == "done"
            tools = {t["function"]["name"]: t for t in h.server.requests[0]["tools"]}
            schema = tools["mcp__time__get_current_time"]["function"]["parameters"]
            assert "timezone" in schema["properties"]
            [result] = _tool_messages(h.server.requests[1])
            answer = json.loads(result["content"])
            assert answer["timezone"] == "UTC"
            assert answer["datetime"].startswith(str(datetime.now(UTC).year))
    finally:
        await manager.aclose()


async def test_a_turn_waits_for_a_server_still_starting_and_says_so(tmp_path):
    """A message sent while the app starts: the server's tools go with its first request
    (they did not, and the model answered that it had none)."""
    slow = server_config(args=(*server_config().args, "--delay", "1"), trust=("echo",))
    manager = McpManager([slow])
    script = [Reply(tool_calls=[ToolCall("mcp__test__echo", {"text": "hi"}, id="c1")]),
              Reply(text="It said hi.")]
    try:
        async with Harness(tmp_path, script) as h:
            _with(h, manager)
            manager.start()
            assert manager.starting() == ["test"]
            assert await h.agent.run_turn("main", "echo hi") == "done"
            assert "mcp__test__echo" in {t["function"]["name"]
                                         for t in h.server.requests[0]["tools"]}
            assert [n.message for n in h.of(ev.Notice) if "waiting" in n.message] == [
                "waiting for the MCP server test to start, so its tools go with this "
                "message (Esc stops)"]
            assert manager.starting() == []
    finally:
        await manager.aclose()


async def test_esc_ends_the_wait_for_a_server_still_starting(tmp_path):
    """The message waiting for a server is already in the store, and Esc ends the wait."""
    slow = server_config(args=(*server_config().args, "--delay", "30"))
    manager = McpManager([slow])
    try:
        async with Harness(tmp_path, [Reply(text="unused")]) as h:
            _with(h, manager)
            manager.start()
            abort = AbortSignal()
            turn = asyncio.create_task(h.agent.run_turn("main", "hi", abort=abort))
            await wait_until(lambda: any("waiting" in n.message for n in h.of(ev.Notice)))
            # stored before the wait: quitting (or a kill) while it lasts loses nothing
            log = (tmp_path / "data" / "keys" / "main" / "log.jsonl").read_text()
            assert '"hi"' in log
            abort.fire("stopped by the person")
            assert await turn == "aborted"
            assert h.server.requests == []
            assert manager.starting() == ["test"]
    finally:
        await manager.aclose()


async def test_arguments_holding_half_a_surrogate_pair_are_refused_and_the_server_stays(
        tmp_path, mcp):
    """Arguments holding half an emoji's pair (a JSON escape the model wrote) cannot be
    sent: UTF-8 has no bytes for it. The call is refused with why; before, writing it
    stopped the server's connection, and every later call of it failed ("Connection
    closed") while it was still listed as ready."""
    script = [Reply(tool_calls=[ToolCall("mcp__test__echo", {"text": "a \ud83d b"}, id="c1")]),
              Reply(tool_calls=[ToolCall("mcp__test__echo", {"text": "hi"}, id="c2")]),
              Reply(text="Done.")]
    async with Harness(tmp_path, script) as h:
        _with(h, mcp)
        assert await h.agent.run_turn("main", "echo twice") == "done"
        results = {m["tool_call_id"]: m["content"] for m in _tool_messages(h.server.requests[2])}
    assert results["c1"].startswith("Error: ") and "\\ud83d" in results["c1"]
    assert "surrogate" in results["c1"] and "Connection closed" not in results["c1"]
    assert results["c2"] == "echo: hi"
