"""A stdio server whose pipes break while it runs: failed, said once, and no call waits on it.

Each server is the hostile one (tests/hostile_servers/mcp_stdio.py), a real
subprocess, told by a tool to close its stdin, close its stdout, or stop reading
its stdin, while it keeps running. A write that fails, or waits on a full pipe
longer than a call may take, fails the server as a protocol break does: its
state and error say so, the person gets one notice, the calls waiting on it end
with a line for the model, and the process is stopped.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.mcp.server_state import McpTool
from selfref_tui.agent.tools.builtin import ToolError
from tests.agent.helpers import wait_until
from tests.hostile_servers import read_pids, wait_gone

from .test_hostile_mcp import app_with_hostile, ask_hostile, hostile, notices, started

#: larger than a pipe's buffer (64 KiB) and asyncio's high-water mark, so the write waits
LARGE = "x" * (256 * 1024)


def tools_of(manager: McpManager, server: str = "h") -> dict[str, McpTool]:
    """A server's tools by its own names for them, as it listed them."""
    return {t.name: t for t in manager.status[server].tools}


async def test_a_server_that_closes_its_stdin_fails_with_the_calls_waiting_on_it(tmp_path):
    mark = tmp_path / "mark"
    manager, events = await started(hostile("--pids", str(tmp_path / "pids"), "--mark",
                                            str(mark)), hostile(name="other"))
    try:
        [pid] = await asyncio.to_thread(read_pids, tmp_path / "pids")
        tools = tools_of(manager)
        waiting = asyncio.create_task(manager.call_raw(tools["hang"], {}))
        await wait_until(mark.exists, timeout=20, what="the server to take the first call")
        assert (await manager.call_raw(tools["close_stdin"], {})).text == "closed stdin"
        said = ("the MCP server 'h' stopped accepting requests: writing to its stdin failed "
                "(the pipe is closed); the connection was dropped and the server stopped")
        with pytest.raises(ToolError) as failed:
            await manager.call_raw(tools["echo"], {"text": "anyone there?"})
        assert str(failed.value) == said
        with pytest.raises(ToolError) as also:
            await waiting  # the call already waiting ends with it, not at its timeout
        assert str(also.value) == said
        status = {s.name: s for s in manager.statuses()}
        await wait_until(lambda: status["h"].state == "failed", timeout=20,
                         what="the server marked failed")
        assert status["h"].error == ("stopped accepting requests: writing to its stdin "
                                     "failed (the pipe is closed)")
        assert [t.server for t in manager.tools()] == ["other"] * len(manager.tools())
        assert notices(events) == [
            "MCP server 'h' failed: stopped accepting requests: writing to its stdin failed "
            "(the pipe is closed); it was stopped and its tools are gone for the rest of this "
            "run"]
        assert await asyncio.to_thread(wait_gone, [pid]) == []  # stopped, though it ran on
        with pytest.raises(ToolError) as later:
            await manager.call_raw(tools["echo"], {"text": "again"})
        assert str(later.value) == said
        other = tools_of(manager, "other")["echo"]
        assert (await manager.call_raw(other, {"text": "fine"})).text == "echo: fine"
    finally:
        await manager.aclose()


async def test_a_server_that_stops_reading_fails_a_large_call_at_the_call_timeout(
        tmp_path, caplog):
    """The request is written until the call's timeout, then the connection is dropped.

    The SDK, cancelling a call, sends the protocol's cancellation through the same
    write and gives up on it only after 5 s of its own, logging that it did: a
    call that ended by that road would have outlived its timeout.
    """
    manager, events = await started(hostile("--pids", str(tmp_path / "pids"),
                                            call_timeout_s=1))
    try:
        [pid] = await asyncio.to_thread(read_pids, tmp_path / "pids")
        tools = tools_of(manager)
        assert (await manager.call_raw(tools["stop_reading"], {})).text == "stopped reading"
        with caplog.at_level(logging.WARNING, logger="mcp"), \
                pytest.raises(ToolError) as failed:
            async with asyncio.timeout(120):  # a hang bound only
                await manager.call_raw(tools["echo"], {"text": LARGE})
        assert not [r for r in caplog.records if "transport write blocked" in r.getMessage()]
        size = len(f'{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo",'
                   f'"arguments":{{"text":"{LARGE}"}}}}}}\n')
        why = (f"stopped accepting requests: a {size:,}-byte request found its stdin full for "
               "1 s: it stopped reading ([mcp.servers.h] call_timeout_s)")
        assert str(failed.value) == (f"the MCP server 'h' {why}; the connection was dropped "
                                     "and the server stopped")
        [status] = manager.statuses()
        await wait_until(lambda: status.state == "failed", timeout=20, what="the server failed")
        assert status.error == why
        assert notices(events) == [f"MCP server 'h' failed: {why}; it was stopped and its "
                                   "tools are gone for the rest of this run"]
        assert await asyncio.to_thread(wait_gone, [pid]) == []
    finally:
        await manager.aclose()


async def test_a_small_call_to_a_server_that_stops_reading_only_times_out():
    """A request that fits the pipe is written whole: the server may still read it, so
    the call times out as an unanswered one does and the server stays."""
    manager, events = await started(hostile(call_timeout_s=0.5))
    try:
        tools = tools_of(manager)
        await manager.call_raw(tools["stop_reading"], {})
        with pytest.raises(ToolError, match=r"did not answer echo within 0.5 s"):
            await manager.call_raw(tools["echo"], {"text": "small"})
        assert manager.statuses()[0].state == "ready"
        assert notices(events) == []
    finally:
        await manager.aclose()


async def test_a_server_that_closes_its_stdout_but_runs_on_is_stopped(tmp_path):
    manager, events = await started(hostile("--pids", str(tmp_path / "pids")))
    try:
        [pid] = await asyncio.to_thread(read_pids, tmp_path / "pids")
        tools = tools_of(manager)
        with pytest.raises(ToolError) as failed:
            async with asyncio.timeout(120):  # a hang bound only
                await manager.call_raw(tools["close_stdout"], {})
        assert str(failed.value) == ("the MCP server 'h' closed its connection during the "
                                     "call; its tools are gone for the rest of this run")
        [status] = manager.statuses()
        await wait_until(lambda: status.state == "exited", timeout=20, what="the server gone")
        assert notices(events) == ["MCP server 'h' stopped: the server closed the connection; "
                                   "its tools are gone for the rest of this run"]
        assert await asyncio.to_thread(wait_gone, [pid]) == []  # it would have run on
    finally:
        await manager.aclose()


def test_ask_ends_each_call_and_says_once_that_the_server_stopped(tmp_path):
    from selfref_tui.demo import Reply
    from selfref_tui.demo.script import ToolCall

    result, server = ask_hostile(tmp_path, [
        Reply(tool_calls=[ToolCall("mcp__h__stop_reading", {}, id="c1")]),
        Reply(tool_calls=[ToolCall("mcp__h__echo", {"text": LARGE}, id="c2")]),
        Reply(tool_calls=[ToolCall("mcp__h__echo", {"text": "again"}, id="c3")]),
        Reply(text="Done.")])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done.\n"
    first, second, third = (r["messages"][-1]["content"] for r in server.requests[1:4])
    assert first == "stopped reading"
    assert second.startswith("Error: the MCP server 'h' stopped accepting requests: a ")
    assert "found its stdin full for 1 s" in second
    # the server's tools left the request that followed the failure
    assert not [t for t in server.requests[2].get("tools", [])
                if t["function"]["name"].startswith("mcp__h__")]
    assert third.startswith("Error: unknown tool 'mcp__h__echo'")
    assert result.stderr.count("stopped accepting requests") == 1, result.stderr
    assert "Traceback" not in result.stderr


async def test_the_app_says_so_once_and_its_mcp_screen_shows_the_server_failed(tmp_path):
    from selfref_tui.demo.script import Reply, ToolCall
    from selfref_tui.ui.screens.mcp_servers import McpServersScreen
    from tests.ui.helpers import turn_done, type_and_send
    from tests.ui.helpers import wait_until as app_wait_until

    script = [Reply(tool_calls=[ToolCall("mcp__h__close_stdin", {}, id="c1")]),
              Reply(tool_calls=[ToolCall("mcp__h__echo", {"text": "there?"}, id="c2")]),
              Reply(text="It stopped.")]
    async with app_with_hostile(tmp_path, script) as (app, pilot):
        await type_and_send(pilot, "close it")
        await turn_done(pilot, app, timeout=30)
        cards = {c.tool_name: (c.status, c.result) for c in app.transcript.items_of("tool")}
        why = ("stopped accepting requests: writing to its stdin failed (the pipe is "
               "closed)")
        assert cards["mcp__h__close_stdin"] == ("done", "closed stdin")
        assert cards["mcp__h__echo"] == (
            "error", f"the MCP server 'h' {why}; the connection was dropped and the "
            "server stopped")
        await app_wait_until(pilot, lambda: any(
            why in str(n.message) for n in app._notifications), 20, "the notice")
        await type_and_send(pilot, "/mcp")
        await app_wait_until(pilot, lambda: isinstance(app.screen, McpServersScreen), 10,
                             "the MCP screen")
        shown = "\n".join(app.screen.server_list.text())
        assert "h  failed" in shown and why in shown


async def test_a_cancelled_call_does_not_wait_for_a_full_pipe_to_take_its_cancellation():
    """Esc (or a quit) during a call whose request the server stopped reading: the call
    ends, and the protocol's cancellation, which cannot be written until the pipe has
    room, is left to finish (or be given up) behind it; the server stays, since it may
    still read, until it has not for the call's timeout."""
    manager, events = await started(hostile(call_timeout_s=3600))
    try:
        tools = tools_of(manager)
        await manager.call_raw(tools["stop_reading"], {})
        link = manager._runs["h"].link
        call = asyncio.create_task(manager.call_raw(tools["echo"], {"text": LARGE}))
        await wait_until(lambda: link.writing, timeout=20, what="the request being written")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        [leaving] = manager._leaving
        assert not leaving.done()  # its cancellation still waits for room in the pipe
        assert link.writing and manager.statuses()[0].state == "ready"
        assert notices(events) == []
    finally:
        await manager.aclose()
    assert manager._leaving == set()


async def test_an_open_mcp_screen_shows_the_server_fail(tmp_path):
    from selfref_tui.ui.screens.mcp_servers import McpServersScreen
    from tests.ui.helpers import type_and_send
    from tests.ui.helpers import wait_until as app_wait_until

    async with app_with_hostile(tmp_path) as (app, pilot):
        await type_and_send(pilot, "/mcp")
        await app_wait_until(pilot, lambda: isinstance(app.screen, McpServersScreen), 10,
                             "the MCP screen")
        screen = app.screen

        def shown() -> str:
            return "\n".join(screen.server_list.text())

        assert "h  ready" in shown()
        tools = tools_of(app.mcp)  # a turn's calls, made while the screen is open
        await app.mcp.call_raw(tools["close_stdin"], {})
        with pytest.raises(ToolError, match="stopped accepting requests"):
            await app.mcp.call_raw(tools["echo"], {"text": "there?"})
        await app_wait_until(pilot, lambda: "h  failed" in shown(), 20,
                             "the open screen to show the server failed")
        assert ("stopped accepting requests: writing to its stdin failed (the pipe is "
                "closed)") in shown()
