"""Servers that hang, flood, lie about their size or break the protocol: bounded, said, stopped.

Each server is the hostile one (tests/hostile_servers/mcp_stdio.py), a real
subprocess speaking the real protocol until it is told to misbehave.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from selfref_tui.agent.events import Notice
from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.mcp.stdio import TAIL_BYTES
from selfref_tui.agent.tools.builtin import ToolError
from selfref_tui.config import McpServerConfig
from tests.agent.helpers import wait_until
from tests.hostile_servers import alive, mcp_stdio_command, read_pids, wait_gone

MB = 2**20


def hostile(*args: str, name: str = "h", **changes) -> McpServerConfig:
    command, argv = mcp_stdio_command(*args)
    return McpServerConfig(name=name, command=command, args=argv, trust=("*",), **changes)


@asynccontextmanager
async def app_with_hostile(tmp_path: Path, script: list | None = None,
                           names: tuple[str, ...] = ("h",)) -> AsyncIterator[Any]:
    """The real app, over HTTP to the demo server (answering ``script``), with the hostile
    MCP server 'h' (or one of each of ``names``) configured and ready: yields
    ``(app, pilot)``."""
    from dataclasses import replace

    from selfref_tui.demo.server import DemoServer
    from tests.ui.helpers import SIZE, make_app
    from tests.ui.helpers import started as app_started
    from tests.ui.helpers import wait_until as app_wait_until

    server = DemoServer(script or [])
    url = await server.start()
    try:
        app = make_app(tmp_path, url)
        app.config = replace(app.config, mcp_servers=tuple(hostile(name=n) for n in names))
        async with app.run_test(size=SIZE) as pilot:
            await app_started(pilot, app)
            await app_wait_until(pilot, lambda: app.mcp is not None and all(
                s.state == "ready" for s in app.mcp.statuses()), 60,
                "the MCP servers to be ready")
            yield app, pilot
    finally:
        await server.stop()


async def started(*configs: McpServerConfig) -> tuple[McpManager, list]:
    events: list = []
    manager = McpManager(configs, events.append)
    await manager.wait_started(timeout=60)
    return manager, events


def tool(manager: McpManager, name: str, server: str = "h"):
    """A tool as its server listed it: kept in the server's status, since a server whose
    connection breaks takes its tools off the manager's list at once."""
    return next(t for t in manager.status[server].tools if t.exposed == f"mcp__{server}__{name}")


def notices(events: list) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


async def test_a_call_never_answered_times_out_with_the_protocols_cancellation(tmp_path):
    mark = tmp_path / "mark"
    manager, _ = await started(hostile("--mark", str(mark), call_timeout_s=0.5))
    try:
        with pytest.raises(ToolError, match=r"did not answer hang within 0.5 s "
                                            r"\(\[mcp.servers.h\] call_timeout_s\); the call "
                                            "was cancelled"):
            await manager.call_raw(tool(manager, "hang"), {})
        await wait_until(lambda: mark.exists() and mark.read_text() == "cancelled", timeout=20,
                         what="notifications/cancelled to reach the server")
        result = await manager.call_raw(tool(manager, "echo"), {"text": "still here"})
        assert result.text == "echo: still here"  # a slow call does not fail the server
    finally:
        await manager.aclose()


async def test_one_invalid_byte_fails_the_server_and_every_call_at_once(tmp_path):
    manager, events = await started(hostile("--pids", str(tmp_path / "pids")))
    try:
        [pid] = await asyncio.to_thread(read_pids, tmp_path / "pids")
        waiting = asyncio.create_task(manager.call_raw(tool(manager, "hang"), {}))
        await asyncio.sleep(0)
        with pytest.raises(ToolError, match=r"wrote bytes that are not UTF-8 on stdout \(byte "
                                            r"73 of a 83-byte line\); the connection was "
                                            "dropped and the server stopped"):
            await manager.call_raw(tool(manager, "bad_byte"), {})
        with pytest.raises(ToolError, match="not UTF-8"):
            await waiting  # the call already waiting ends too, without its timeout
        [status] = manager.statuses()
        await wait_until(lambda: status.state == "failed", timeout=20, what="the server failed")
        assert "not UTF-8" in status.error
        assert any("MCP server 'h' failed: wrote bytes that are not UTF-8" in m
                   for m in notices(events))
        assert manager.tools() == []
        assert await asyncio.to_thread(wait_gone, [pid]) == []
    finally:
        await manager.aclose()


async def test_lines_that_are_not_json_fail_the_server_without_a_traceback(capfd):
    manager, events = await started(hostile("--garbage", "1000", name="at_start"),
                                    hostile(name="in_call"))
    try:
        states = {s.name: s for s in manager.statuses()}
        assert states["at_start"].state == "failed"
        assert states["at_start"].error == ("wrote a line that is not JSON on stdout: "
                                            "'garbage line 0: not json {'")
        assert any("MCP server 'at_start' did not start: wrote a line that is not JSON" in m
                   for m in notices(events))
        with pytest.raises(ToolError, match="not JSON"):
            await manager.call_raw(tool(manager, "garbage", "in_call"), {"lines": 1000})
        with pytest.raises(ToolError, match="'in_call' wrote a line that is not JSON"):
            await manager.call_raw(tool(manager, "garbage", "in_call"), {"lines": 1})
    finally:
        await manager.aclose()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "garbage" not in err


async def test_a_message_over_the_cap_is_refused_and_the_connection_dropped():
    manager, events = await started(hostile(name="small", max_message_mb=1),
                                    hostile(name="endless", max_message_mb=1),
                                    hostile(name="roomy", max_message_mb=8))
    try:
        for server, args in (("small", {"mb": 2}), ("small", {"mb": 2, "kind": "image"})):
            with pytest.raises(ToolError, match=rf"'{server}' sent a message over the 1 MB limit "
                                                rf"\(\[mcp.servers.{server}\] max_message_mb\)"):
                await manager.call_raw(tool(manager, "big", server), args)
        with pytest.raises(ToolError, match="over the 1 MB limit"):  # a line that never ends
            await manager.call_raw(tool(manager, "endless", "endless"), {"mb": 0})
        whole = await manager.call_raw(tool(manager, "big", "roomy"), {"mb": 4})
        assert whole.text == "x" * (4 * MB)
        states = {s.name: s.state for s in manager.statuses()}
        assert states == {"small": "failed", "endless": "failed", "roomy": "ready"}
        assert sum("over the 1 MB limit" in m for m in notices(events)) == 2
    finally:
        await manager.aclose()


async def test_a_stderr_flood_keeps_only_a_bounded_tail():
    manager, _ = await started(hostile("--stderr-mb", "64", "--crash", name="start"),
                               hostile(name="call"))
    try:
        status = {s.name: s for s in manager.statuses()}
        assert status["start"].state == "failed"
        assert status["start"].error.startswith("the last stderr line (")
        result = await manager.call_raw(tool(manager, "stderr", "call"), {"mb": 64})
        assert result.text == "flooded"
        for name in ("start", "call"):
            link = manager._runs[name].link
            await wait_until(lambda link=link: link.stderr.total > 64 * MB, timeout=30,
                             what="the whole flood read")
            assert len(link.stderr.text()) <= TAIL_BYTES
            assert link.stderr.last_line() == "the last stderr line"
    finally:
        await manager.aclose()


async def test_a_server_that_exits_silently_at_start_is_named_with_its_status():
    manager, events = await started(hostile("--crash", name="quiet"))
    try:
        [status] = manager.statuses()
        assert status.state == "failed"
        assert status.error.startswith("it exited with status 3 before it was ready and said "
                                       "nothing on stderr (")
        assert status.error.endswith("); run the command in a terminal to see why")
        assert any("MCP server 'quiet' did not start: it exited with status 3" in m
                   for m in notices(events))
    finally:
        await manager.aclose()


async def test_ten_thousand_tools_are_listed():
    manager, _ = await started(hostile("--tools", "10000"))
    try:
        names = [t.name for t in manager.tools()]
        assert len(names) == 10_011 and names[-1] == "tool_10000"
    finally:
        await manager.aclose()


async def test_a_schema_nested_150_deep_leaves_that_tool_out_and_says_so():
    manager, events = await started(hostile("--deep", "150"))
    try:
        [status] = manager.statuses()
        assert status.state == "ready"
        assert status.error == 'left out "deep": schema nested more than 64 levels deep'
        assert any("MCP server 'h' left out \"deep\"" in m for m in notices(events))
        assert "deep" not in [t.name for t in manager.tools()]
        assert (await manager.call_raw(tool(manager, "echo"), {"text": "ok"})).text == "echo: ok"
    finally:
        await manager.aclose()


@pytest.mark.parametrize("wedge", ["--wedge-start", "--wedge"])
async def test_a_wedged_server_is_stopped_at_exit_without_being_called_a_failure(tmp_path, wedge):
    events: list = []
    manager = McpManager([hostile("--pids", str(tmp_path / "pids"), wedge)], events.append)
    manager.start()
    [pid] = await asyncio.to_thread(read_pids, tmp_path / "pids")
    if wedge == "--wedge":
        await manager.wait_started(timeout=60)
        assert manager.statuses()[0].state == "ready"
    await manager.aclose()
    assert manager.statuses()[0].state == "stopped"
    assert notices(events) == []
    assert not alive(pid) or await asyncio.to_thread(wait_gone, [pid]) == []


async def test_quitting_ends_a_wedged_server_without_the_grace_a_stop_gives_it(
        tmp_path, monkeypatch):
    """The protocol's grace (time to exit once its stdin closes) is for a stop nobody waits
    on; when the app quits a person waits, so a wedged server (deaf to its stdin closing
    and to SIGTERM, with helpers deaf to SIGTERM too) is ended without it. The grace is an
    hour here: a quit that waited for it would not finish within the bound below."""
    from selfref_tui.agent.mcp import stdio

    monkeypatch.setattr(stdio, "GRACE_S", 3600.0)
    manager = McpManager([hostile("--pids", str(tmp_path / "pids"), "--wedge", "--helpers",
                                  "1", "--setsid-helpers", "1", "--stubborn-helpers")])
    await manager.wait_started(timeout=60)
    assert manager.statuses()[0].state == "ready"
    pids = await asyncio.to_thread(read_pids, tmp_path / "pids", 3)
    async with asyncio.timeout(120):  # a hang bound, far below the grace
        await manager.aclose(quitting=True)
    assert manager.statuses()[0].state == "stopped"
    assert await asyncio.to_thread(wait_gone, pids) == []


def ask_hostile(tmp_path: Path, script: list) -> tuple[Any, Any]:
    """``selfref-tui ask go`` as a process, the hostile server configured as 'h' (trusted,
    a call's timeout 1 s), the model's replies ``script``: (its result, the demo server)."""
    import json

    from selfref_tui.demo import DemoServer
    from tests.cli.helpers import cli

    command, args = mcp_stdio_command()
    config = tmp_path / "config.toml"
    config.write_text(f'''[mcp.servers.h]
command = {json.dumps(command)}
args = {json.dumps(list(args))}
trust = ["*"]
call_timeout_s = 1
''', encoding="utf-8")
    server = DemoServer(script)
    url = server.start_in_thread()
    try:
        result = cli("ask", "go", "--base-url", url, "--config", str(config), "--data-dir",
                     str(tmp_path / "data"), env={"OPENAI_API_KEY": "sk-test"})
    finally:
        server.stop_thread()
    return result, server


def test_ask_does_not_wait_forever_for_a_call_and_prints_no_traceback(tmp_path):
    from selfref_tui.demo import Reply
    from selfref_tui.demo.script import ToolCall

    result, server = ask_hostile(tmp_path, [
        Reply(tool_calls=[ToolCall("mcp__h__hang", {}, id="c1")]),
        Reply(tool_calls=[ToolCall("mcp__h__garbage", {"lines": 1000}, id="c2")]),
        Reply(text="Done.")])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done.\n"
    first, second = (m["content"] for r in server.requests[1:3] for m in r["messages"][-1:])
    assert "did not answer hang within 1 s" in first
    assert "wrote a line that is not JSON" in second
    assert "Traceback" not in result.stderr and "garbage line" not in result.stderr.replace(
        "'garbage line 0: not json {'", "")


async def test_a_real_third_party_server_runs_supervised_and_leaves_nothing():
    from .conftest import time_server

    manager, _ = await started(time_server())
    supervisor = manager._runs["time"].link.pid
    with open(f"/proc/{supervisor}/task/{supervisor}/children") as f:
        [server] = [int(p) for p in f.read().split()]
    try:
        result = await manager.call_raw(tool(manager, "get_current_time", "time"),
                                        {"timezone": "UTC"})
        assert '"timezone": "UTC"' in result.text or "UTC" in result.text
    finally:
        await manager.aclose()
    assert await asyncio.to_thread(wait_gone, [supervisor, server]) == []


def test_the_supervisor_is_a_standard_library_script():
    from selfref_tui.agent.mcp import supervisor

    source = Path(supervisor.__file__).read_text(encoding="utf-8")
    assert "selfref_tui" not in source.split('"""', 2)[2]  # runs with python -I -S
