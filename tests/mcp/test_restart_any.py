"""Restarting any MCP server, with its table read again from config.toml.

Real subprocesses: the hostile server (tests/hostile_servers/mcp_stdio.py) that
stops reading its stdin stays "ready" while each call times out; the person
restarts it. A server whose table was wrong is fixed in the file and restarted.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import anyio
import pytest

from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.mcp.stdio import Link, stdio_transport
from selfref_tui.agent.tools.builtin import ToolError
from selfref_tui.config_load import load_config
from tests.agent.helpers import wait_until
from tests.hostile_servers import alive, mcp_stdio_command, read_pids, wait_gone

from .test_hostile_mcp import hostile, notices
from .test_stdin_failures import tools_of


async def test_a_ready_server_that_stopped_answering_is_restarted_and_its_call_says_so(
        tmp_path):
    pids, mark = tmp_path / "pids", tmp_path / "mark"
    events: list = []
    manager = McpManager([hostile("--pids", str(pids), "--helpers", "1", "--mark", str(mark),
                                  call_timeout_s=3600)], events.append)
    manager.restart_hint = "/mcp restart {server}"
    await manager.wait_started(timeout=60)
    try:
        old = await asyncio.to_thread(read_pids, pids, 2)  # the server and its helper
        tools = tools_of(manager)
        waiting = asyncio.create_task(manager.call_raw(tools["hang"], {}))
        await wait_until(lambda: mark.exists() and mark.read_text() == "started", timeout=20,
                         what="the call to reach the server")
        assert not waiting.done() and manager.status["h"].state == "ready"  # deaf, not down

        assert manager.restart("h") == ""
        with pytest.raises(ToolError) as caught:
            await waiting
        assert str(caught.value) == (
            "the MCP server 'h' was restarted by the person while hang ran, so the call was "
            "dropped and its result is lost; call it again once the server is back, if it is "
            "still needed")
        assert not manager.handles("mcp__h__echo")  # not offered while it starts again
        await manager.wait_started(timeout=60)
        status = manager.status["h"]
        assert (status.state, status.error) == ("ready", ""), status.error
        assert await asyncio.to_thread(wait_gone, old) == []  # the old group, helper and all
        new = (await asyncio.to_thread(read_pids, pids, 4))[2:]
        assert set(new).isdisjoint(old) and all(alive(p) for p in new)
        assert notices(events) == [  # one, and no "failed" or "stopped" for the old run
            f"MCP server 'h' restarted: {len(status.tools)} tools offered again"]
        assert (await manager.call_raw(tools_of(manager)["echo"], {"text": "back"})).text == \
            "echo: back"
    finally:
        await manager.aclose()
    assert await asyncio.to_thread(wait_gone, new) == []


async def test_a_late_end_of_an_old_runs_call_leaves_the_new_runs_tools():
    """A call on the run before a restart that fails after the new run is ready (its
    cancellation was still being written) takes nothing of the new run's."""
    manager = McpManager([hostile()])
    await manager.wait_started(timeout=60)
    try:
        old = manager._runs["h"]
        assert manager.restart("h") == ""
        await manager.wait_started(timeout=60)
        assert manager.status["h"].state == "ready" and manager._runs["h"] is not old
        old.link.failure = "stopped accepting requests: a test"  # as the old call then sees
        assert "stopped accepting requests: a test" in str(manager._lost(old))
        assert manager.handles("mcp__h__echo")
        before = manager.changes()
        assert manager.restart("h") == ""
        assert manager.changes() != before  # a screen following the servers sees it
        await manager.wait_started(timeout=60)
        assert manager.changes()[0][2:] == before[0][2:]  # the same state, another run
    finally:
        await manager.aclose()


def write_config(path: Path, wrapper: Path, env: str = "", *other: str) -> None:
    path.write_text(f'''[mcp.servers.h]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(wrapper))}]
trust = ["echo"]
{env}

[mcp.servers.other]
command = {json.dumps(sys.executable)}
args = {json.dumps([*mcp_stdio_command()[1], *other])}
''', encoding="utf-8")


async def from_file(config_path: Path) -> tuple[McpManager, list]:
    """The servers of ``config_path`` started as the app starts them (a restart reads the
    file again), and the list their events go to."""
    events: list = []
    manager = McpManager(load_config(config_path=config_path, env={}).mcp_servers,
                         events.append)
    manager.config_path = config_path
    await manager.wait_started(timeout=60)
    return manager, events


async def test_a_restart_reads_the_servers_table_again(tmp_path):
    """A wrong env fixed in config.toml is what the restart starts; a file that is not
    right leaves the server as it is; a table gone stops it; another table's change waits."""
    wrapper, config_path = tmp_path / "server.py", tmp_path / "config.toml"
    wrapper.write_text(
        "import os, runpy, sys\n"
        "if os.environ.get('READY') != 'yes':\n"
        "    sys.stderr.write('READY is not yes\\n'); sys.exit(3)\n"
        f"runpy.run_path({mcp_stdio_command()[1][0]!r}, run_name='__main__')\n",
        encoding="utf-8")
    write_config(config_path, wrapper)
    manager, events = await from_file(config_path)
    try:
        status = manager.status["h"]
        assert status.state == "failed" and status.error.startswith("READY is not yes")

        config_path.write_text("[mcp.servers.h\n", encoding="utf-8")  # half-saved
        refused = manager.restart("h")
        assert refused.startswith(f"MCP server 'h' was not restarted: {config_path} is not "
                                  "valid TOML")
        assert manager.status["h"] is status and status.state == "failed"  # as it was

        write_config(config_path, wrapper, 'env = { READY = "yes" }', "--crash")
        assert manager.restart("h") == ""
        await manager.wait_started(timeout=60)
        assert manager.status["h"].state == "ready", manager.status["h"].error
        assert manager.configs["h"].env == (("READY", "yes"),)
        assert "--crash" not in manager.configs["other"].args  # its own restart takes it
        assert manager.is_trusted("mcp__h__echo") and not manager.is_trusted("mcp__h__hang")

        assert notices(events)[1:] == ["MCP server 'h' restarted: 11 tools offered again"]
        config_path.write_text(config_path.read_text(encoding="utf-8").replace(
            "[mcp.servers.h]", "[mcp.servers.renamed]"), encoding="utf-8")
        assert manager.restart("h") == ""  # what the file says: h is gone (and stopped)
        assert "h" not in manager.status and "renamed" not in manager.status
    finally:
        await manager.aclose()


async def test_a_disabled_server_enabled_in_the_file_starts_on_restart(tmp_path):
    config_path = tmp_path / "config.toml"
    command, args = mcp_stdio_command()
    table = f'[mcp.servers.h]\ncommand = {json.dumps(command)}\nargs = {json.dumps(list(args))}\n'
    config_path.write_text(table + "enabled = false\n", encoding="utf-8")
    manager, events = await from_file(config_path)
    try:
        assert manager.restart("h") == ("MCP server 'h' is disabled in config.toml; set "
                                        "[mcp.servers.h] enabled = true and then restart it")
        config_path.write_text(table, encoding="utf-8")
        assert manager.restart("h") == ""
        await manager.wait_started(timeout=60)
        assert manager.status["h"].state == "ready"
        assert notices(events) == ["MCP server 'h' started: 11 tools offered"]
    finally:
        await manager.aclose()


async def test_a_stop_while_a_failed_write_is_checked_is_no_failure(tmp_path):
    """The server closed its stdin; our write fails, and for LEFT_S we wait to see if
    it exited. Stopping it then is ours to cause: no "stopped accepting requests",
    and the write is not left marked as under way."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    script = tmp_path / "deaf.py"
    script.write_text("import os, sys, time\nos.close(0)\nsys.stderr.write('closed\\n')\n"
                      "sys.stderr.flush()\ntime.sleep(600)\n", encoding="utf-8")
    note = SessionMessage(jsonrpc_message_adapter.validate_python(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}, by_name=False))
    link = Link()
    async with stdio_transport([sys.executable, str(script)], {}, None, link,
                               max_bytes=2**20) as (_read, write):
        await wait_until(lambda: "closed" in link.stderr.text(), timeout=20,
                         what="the server to close its stdin")
        await write.send(note)  # taken by the writer, whose write then fails
        with pytest.raises((anyio.BrokenResourceError, anyio.ClosedResourceError)):
            await write.send(note)  # the writer has left: it now waits LEFT_S
        assert not link.writing
    assert link.failure == ""
