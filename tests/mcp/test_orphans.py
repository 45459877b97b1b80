"""No process outlives the app: not a server, not a helper a server started.

The hostile server (tests/hostile_servers/mcp_stdio.py) starts helpers that stay
in its process group, helpers that leave it (``setsid``) and helpers that ignore
SIGTERM, writes every pid to a file, and is then ended every way there is: the
manager stops it, it exits by itself, it breaks the protocol, ``mcp list``
ends, the app quits (ctrl+q), and the process holding the manager is sent
SIGKILL, SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.tools.builtin import ToolError
from selfref_tui.config import McpServerConfig
from tests.agent.helpers import wait_until
from tests.hostile_servers import alive, mcp_stdio_command, read_pids, wait_gone

from .conftest import SERVER

HOLDER = Path(__file__).with_name("holder.py")
ROOT = Path(__file__).resolve().parents[2]
#: two helpers in the server's group, one that leaves it, all deaf to SIGTERM
HELPERS = ("--helpers", "2", "--setsid-helpers", "1", "--stubborn-helpers")
PROCESSES = 4  # the server and its three helpers

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc; the subreaper is Linux's")


def forking(pids: Path, *extra: str) -> McpServerConfig:
    command, args = mcp_stdio_command("--pids", str(pids), *HELPERS, *extra)
    return McpServerConfig(name="forking", command=command, args=args, trust=("*",))


def _all_alive(pids: list[int]) -> None:
    assert len(pids) == PROCESSES and all(alive(p) for p in pids), pids


async def test_the_server_and_its_helpers_go_when_the_manager_stops(tmp_path):
    manager = McpManager([forking(tmp_path / "pids")])
    await manager.wait_started(timeout=60)
    pids = read_pids(tmp_path / "pids", PROCESSES)
    _all_alive(pids)
    await manager.aclose()
    assert wait_gone(pids) == []


async def test_helpers_go_when_their_server_exits_by_itself_or_breaks_the_protocol(tmp_path):
    manager = McpManager([forking(tmp_path / "a"), replace(forking(tmp_path / "b"),
                                                           name="broken")])
    try:
        await manager.wait_started(timeout=60)
        exits, breaks = read_pids(tmp_path / "a", PROCESSES), read_pids(tmp_path / "b", PROCESSES)
        _all_alive(exits)
        _all_alive(breaks)
        tools = {t.exposed: t for t in manager.tools()}
        with pytest.raises(ToolError):
            await manager.call_raw(tools["mcp__forking__exit"], {"code": 0})
        assert await asyncio.to_thread(wait_gone, exits) == []  # while the app runs on
        with pytest.raises(ToolError, match="not UTF-8"):
            await manager.call_raw(tools["mcp__broken__bad_byte"], {})
        assert await asyncio.to_thread(wait_gone, breaks) == []
        await wait_until(lambda: [s.state for s in manager.statuses()] == ["exited", "failed"],
                         timeout=20, what="both servers marked")
    finally:
        await manager.aclose()


def _start_holder(*server: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, str(HOLDER), *server], env=env,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "ready"
    return holder


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_nothing_outlives_a_holder_that_is_killed(tmp_path, sig):
    command, args = mcp_stdio_command("--pids", str(tmp_path / "pids"), *HELPERS)
    holder = _start_holder(command, *args)
    try:
        pids = read_pids(tmp_path / "pids", PROCESSES)
        _all_alive(pids)
        holder.send_signal(sig)
        holder.wait(timeout=30)
        assert wait_gone(pids) == [], f"left running after {sig.name}"
    finally:
        if holder.poll() is None:
            holder.kill()


def test_a_server_that_ignores_its_stdin_closing_goes_when_its_holder_is_killed(tmp_path):
    holder = _start_holder(sys.executable, str(SERVER), "--linger")
    try:
        [supervisor] = _children(holder.pid)
        [server] = _children(supervisor)
        holder.kill()
        holder.wait(timeout=30)
        assert wait_gone([supervisor, server]) == []
    finally:
        if holder.poll() is None:
            holder.kill()


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def test_mcp_list_leaves_nothing_behind(tmp_path):
    from tests.cli.helpers import cli

    command, args = mcp_stdio_command("--pids", str(tmp_path / "pids"), *HELPERS)
    config = tmp_path / "config.toml"
    config.write_text(f"[mcp.servers.forking]\ncommand = {json.dumps(command)}\n"
                      f"args = {json.dumps(list(args))}\n", encoding="utf-8")
    result = cli("mcp", "list", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert "forking  ready" in result.stdout
    pids = read_pids(tmp_path / "pids", PROCESSES)
    assert wait_gone(pids) == []


async def test_the_app_leaves_nothing_behind_on_ctrl_q(tmp_path):
    from selfref_tui.demo.server import DemoServer
    from tests.ui.helpers import SIZE, make_app, started
    from tests.ui.helpers import wait_until as ui_wait_until

    server = DemoServer([])
    url = await server.start()
    try:
        app = make_app(tmp_path, url)
        app.config = replace(app.config, mcp_servers=(forking(tmp_path / "pids"),))
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await ui_wait_until(pilot, lambda: app.mcp is not None and app.mcp.handles(
                "mcp__forking__echo"), 60, "the MCP server to be ready")
            pids = read_pids(tmp_path / "pids", PROCESSES)
            _all_alive(pids)
            await pilot.press("ctrl+q")
        assert app.return_code == 0
        assert wait_gone(pids) == []
    finally:
        await server.stop()
