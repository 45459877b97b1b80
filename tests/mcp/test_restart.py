"""Starting one MCP server again (a failed or exited one here), from the manager, the
/mcp screen's cursor and r, and the /mcp restart command with its Tab completion.

Real subprocesses: the hostile server (tests/hostile_servers/mcp_stdio.py) is
told to close its stdin or its stdout, which fails it or makes it exit while it
runs on; a restart must stop what is left of it (its helpers too) before the new
one starts, offer its tools again, keep what the person trusted, and say so once.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from dataclasses import replace

import pytest
from textual.widgets import Static

from selfref_tui.agent.mcp.approval import APPROVE_ALWAYS
from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.tools.builtin import ToolError
from selfref_tui.config import McpServerConfig
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.screens.mcp_servers import McpServersScreen
from tests.agent.helpers import wait_until
from tests.hostile_servers import alive, read_pids, wait_gone
from tests.ui.helpers import SIZE, make_app, type_and_send
from tests.ui.helpers import started as app_started
from tests.ui.helpers import wait_until as app_wait_until

from .conftest import SERVER
from .test_hostile_mcp import app_with_hostile, hostile, notices
from .test_manager import Ctx
from .test_stdin_failures import tools_of

CLOSED_STDIN = "stopped accepting requests: writing to its stdin failed (the pipe is closed)"


async def fail(manager: McpManager, server: str = "h") -> None:
    """Make the hostile server close its stdin, call it once more so the write fails, and
    wait until it is marked failed."""
    tools = tools_of(manager, server)
    assert (await manager.call_raw(tools["close_stdin"], {})).text == "closed stdin"
    with pytest.raises(ToolError, match="stopped accepting requests"):
        await manager.call_raw(tools["echo"], {"text": "there?"})
    await wait_until(lambda: manager.status[server].state == "failed", timeout=20,
                     what="the server marked failed")


async def test_a_failed_server_restarts_its_old_processes_gone_its_tools_and_trust_back(
        tmp_path):
    pids = tmp_path / "pids"
    saved: list[tuple[str, str]] = []
    config = replace(hostile("--pids", str(pids), "--helpers", "1"), trust=("big",))
    events: list = []
    manager = McpManager([config, hostile(name="other")], events.append,
                         on_trust=lambda server, tool: saved.append((server, tool)))
    manager.restart_hint = "/mcp restart {server}"
    await manager.wait_started(timeout=60)
    try:
        old = await asyncio.to_thread(read_pids, pids, 2)  # the server and its helper
        # "always allow" during the run: kept by the restart, as config.toml's trust is
        assert await manager.call("mcp__h__echo", {"text": "hi"}, Ctx(answer=APPROVE_ALWAYS)) \
            == "echo: hi"
        assert saved == [("h", "echo")]
        await fail(manager)
        assert notices(events) == [f"MCP server 'h' failed: {CLOSED_STDIN}; it was stopped and "
                                   "its tools are gone until it is restarted (/mcp restart h)"]
        assert not manager.handles("mcp__h__echo")

        assert manager.restart("h") == ""
        assert manager.status["h"].state == "starting"
        assert "h" in manager.starting()  # a turn sent now waits for it
        await manager.wait_started(timeout=60)
        status = manager.status["h"]
        assert (status.state, status.error) == ("ready", ""), status.error
        assert await asyncio.to_thread(wait_gone, old) == []  # the old server and helper
        new = (await asyncio.to_thread(read_pids, pids, 4))[2:]
        assert set(new).isdisjoint(old) and all(alive(p) for p in new)
        assert notices(events)[1:] == [
            f"MCP server 'h' restarted: {len(status.tools)} tools offered again"]
        assert manager.handles("mcp__h__echo")
        assert "mcp__h__echo" in [s["function"]["name"] for s in manager.schemas()]
        # trusted still: neither asks (an ask would fail the check in Ctx)
        assert manager.is_trusted("mcp__h__echo") and manager.is_trusted("mcp__h__big")
        assert not manager.is_trusted("mcp__h__hang")
        asked = Ctx()
        assert await manager.call("mcp__h__echo", {"text": "back"}, asked) == "echo: back"
        assert asked.asked == []
        assert manager.status["other"].state == "ready"  # the other server was not touched
    finally:
        await manager.aclose()
    assert await asyncio.to_thread(wait_gone, new) == []


def switched(tmp_path) -> McpServerConfig:
    """The hostile server behind two files: while ``broken`` exists it fails at its start
    (a restart that fails again); while ``hold`` exists its start waits (a state seen)."""
    wrapper = tmp_path / "server.py"
    broken, hold = tmp_path / "broken", tmp_path / "hold"
    wrapper.write_text(
        "import os, runpy, sys, time\n"
        f"if os.path.exists({str(broken)!r}):\n"
        "    sys.stderr.write('still broken\\n'); sys.exit(3)\n"
        f"while os.path.exists({str(hold)!r}):\n"
        "    time.sleep(0.02)\n"
        f"runpy.run_path({hostile().args[0]!r}, run_name='__main__')\n", encoding="utf-8")
    return McpServerConfig(name="h", command=sys.executable, args=(str(wrapper),),
                           trust=("*",))


async def test_an_exited_server_restarts_and_one_that_fails_again_says_why(tmp_path):
    config, flag = switched(tmp_path), tmp_path / "broken"
    events: list = []
    manager = McpManager([config], events.append)
    await manager.wait_started(timeout=60)
    try:
        assert manager.status["h"].state == "ready", manager.status["h"].error
        with pytest.raises(ToolError, match="closed its connection during the call; its "
                                            "tools are gone for the rest of this run"):
            await manager.call_raw(tools_of(manager)["close_stdout"], {})
        await wait_until(lambda: manager.status["h"].state == "exited", timeout=20,
                         what="the server exited")
        flag.touch()
        assert manager.restart("h") == ""
        await manager.wait_started(timeout=60)
        status = manager.status["h"]
        assert status.state == "failed"
        assert status.error.startswith("still broken (")
        assert notices(events) == [
            "MCP server 'h' stopped: the server closed the connection; its tools are gone "
            "for the rest of this run",
            f"MCP server 'h' did not restart: {status.error}"]
        assert manager.tools() == []
        flag.unlink()
        assert manager.restart("h") == ""  # failed at its start: may be started again
        await manager.wait_started(timeout=60)
        assert manager.status["h"].state == "ready"
        assert (await manager.call_raw(tools_of(manager)["echo"], {"text": "ok"})).text == \
            "echo: ok"
    finally:
        await manager.aclose()


async def test_a_restart_is_refused_for_a_server_starting_disabled_or_unknown():
    manager = McpManager([hostile(), hostile(name="off", enabled=False)])
    await manager.wait_started(timeout=60)
    try:
        assert manager.restart("off") == (
            "MCP server 'off' is disabled in config.toml; set [mcp.servers.off] enabled = "
            "true and start the app again")
        assert manager.restart("nope") == ("no MCP server is named 'nope' (configured: 'h', "
                                           "'off')")
        await fail(manager)
        assert manager.restart("h") == ""
        assert manager.restart("h") == (
            "MCP server 'h' is starting; restart it once it is ready or has failed "
            "([mcp.servers.h] start_timeout_s bounds the wait)")  # pressed twice
        await manager.wait_started(timeout=60)
        assert manager.status["h"].state == "ready"
    finally:
        await manager.aclose()
    assert manager.restart("h") == ("MCP server 'h' is not restarted: the servers are being "
                                    "stopped")


async def test_closing_while_a_restart_waits_stops_both(tmp_path):
    """The app quits right after r: the old run and the new one both end, nothing left."""
    pids = tmp_path / "pids"
    manager = McpManager([hostile("--pids", str(pids))])
    await manager.wait_started(timeout=60)
    [old] = await asyncio.to_thread(read_pids, pids)
    await fail(manager)
    assert manager.restart("h") == ""
    await manager.aclose(quitting=True)
    assert manager.status["h"].state == "stopped"
    every = [int(p) for p in pids.read_text().split()]
    assert old in every
    assert await asyncio.to_thread(wait_gone, every) == []


async def test_r_on_the_mcp_screen_restarts_a_failed_server_and_the_screen_follows(tmp_path):
    config_path, hold = tmp_path / "config.toml", tmp_path / "hold"
    h = switched(tmp_path)
    command, args = h.command, h.args
    config_path.write_text(f'''[mcp.servers.h]
command = {json.dumps(command)}
args = {json.dumps(list(args))}
trust = ["*"]

[mcp.servers.fine]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}]
''', encoding="utf-8")
    server = DemoServer([])
    url = await server.start()
    try:
        app = make_app(tmp_path, url, mcp_config=config_path)
        async with app.run_test(size=SIZE) as pilot:
            await app_started(pilot, app)
            await app_wait_until(pilot, lambda: app.mcp is not None and app.mcp.handles(
                "mcp__h__echo") and app.mcp.handles("mcp__fine__echo"), 60,
                "the MCP servers to be ready")
            await type_and_send(pilot, "/mcp")
            await app_wait_until(pilot, lambda: isinstance(app.screen, McpServersScreen), 10,
                                 "the MCP screen")
            screen = app.screen
            dialog = screen.query_one("#dialog")

            def shown() -> str:
                return "\n".join(screen.server_list.text())

            def said() -> list[str]:
                return [str(n.message) for n in app._notifications]

            line = screen.query_one("#said", Static)
            hint = "↑↓ server · r restart it · esc close"
            assert dialog.border_subtitle == hint and not line.display
            assert screen.server_list.cursor == "h"  # none is down: the first one
            fine_run = app.mcp._runs["fine"]

            await fail(app.mcp)  # a turn's calls, made while the screen is open
            await app_wait_until(pilot, lambda: "h  failed" in shown(), 20,
                                 "the screen to show the server failed")
            assert CLOSED_STDIN in shown()
            # its tools are not offered: not listed as if they were
            count = len(app.mcp.status["h"].tools)
            assert f"{count} tools not offered while it is failed (r restarts it)" in shown()
            assert "mcp__h__echo" not in shown() and re.search(r"mcp__fine__echo +asks", shown())
            gone = (f"MCP server 'h' failed: {CLOSED_STDIN}; it was stopped and its tools are "
                    "gone until it is restarted (/mcp restart h, or r on the /mcp screen)")
            await app_wait_until(pilot, lambda: gone in said(), 10, "the failure notice")

            hold.touch()  # its start waits, so the screen can be seen saying so
            await pilot.press("r")
            assert "h  starting" in shown()
            assert not line.display
            await pilot.press("r")  # pressed twice: said in the dialog
            await app_wait_until(pilot, lambda: line.display, 10, "the refusal")
            assert str(line.render()) == (
                "MCP server 'h' is starting; restart it once it is ready or has failed "
                "([mcp.servers.h] start_timeout_s bounds the wait)")
            hold.unlink()
            await app_wait_until(pilot, lambda: "h  ready" in shown(), 60,
                                 "the screen to show the server ready again")
            assert CLOSED_STDIN not in shown() and re.search(r"mcp__h__echo +trusted", shown())
            assert not line.display  # it spoke of the rows before
            assert "fine  ready" in shown() and app.mcp._runs["fine"] is fine_run
            # the failure notice says "until it is restarted": this one says it was
            await app_wait_until(pilot, lambda: len([m for m in said() if "' restarted:" in m])
                                 == 1, 10, "the notice")
            [restarted] = [m for m in said() if "' restarted:" in m]
            assert restarted == f"MCP server 'h' restarted: {count} tools offered again"
            assert app.mcp.handles("mcp__h__echo")

            await pilot.press("down")  # the other server, ready: restarted all the same
            assert screen.server_list.cursor == "fine"
            h_run = app.mcp._runs["h"]
            await pilot.press("r")
            await app_wait_until(pilot, lambda: app.mcp._runs["fine"] is not fine_run and
                                 "fine  ready" in shown(), 60, "the other server restarted")
            assert app.mcp._runs["h"] is h_run  # the one not picked was left alone
            await pilot.press("up")
            assert screen.server_list.cursor == "h"
            await pilot.press("escape")
    finally:
        await server.stop()


async def test_mcp_restart_name_as_a_command(tmp_path):
    async with app_with_hostile(tmp_path) as (app, pilot):

        def said() -> list[str]:
            return [str(n.message) for n in app._notifications]

        def restarts() -> int:
            return sum("'h' restarted" in m for m in said())

        await type_and_send(pilot, "/mcp restart h")  # ready: restarted all the same
        await app_wait_until(pilot, lambda: restarts() == 1, 60, "the server restarted")
        assert app.chat_input.text == ""  # the name was right: taken
        await type_and_send(pilot, "/mcp restart nope")
        await app_wait_until(pilot, lambda: "no MCP server is named 'nope' (configured: "
                             "'h')" in said(), 10, "the unknown name")
        assert app.chat_input.text == "/mcp restart nope"  # kept, to fix
        app.chat_input.clear()
        await type_and_send(pilot, "/mcp start h")
        await app_wait_until(pilot, lambda: "Usage: /mcp [restart NAME | reload] — /mcp "
                             "lists the servers" in said(), 10, "the usage")
        app.chat_input.clear()

        await fail(app.mcp)
        await type_and_send(pilot, "/mcp restart h")
        await app_wait_until(pilot, lambda: restarts() == 2, 60, "the server back")
        assert app.mcp.status["h"].state == "ready" and app.mcp.handles("mcp__h__echo")
        assert not isinstance(app.screen, McpServersScreen)


async def test_tab_completes_mcp_restart_with_the_servers_names(tmp_path):
    async with app_with_hostile(tmp_path, names=("alpha", "alps")) as (app, pilot):
        box = app.chat_input

        def said() -> list[str]:
            return [str(n.message) for n in app._notifications]

        await pilot.press(*"/mcp r", "tab")  # restart or reload: as far as they agree
        await app_wait_until(pilot, lambda: box.text == "/mcp re", 10, "the agreed start")
        await pilot.press("tab")
        await app_wait_until(pilot, lambda: "/mcp restart  /mcp reload" in said(), 10,
                             "the words")
        await pilot.press(*"s", "tab")
        await app_wait_until(pilot, lambda: box.text == "/mcp restart ", 10, "the word")
        await pilot.press("tab")  # as far as the names agree
        await app_wait_until(pilot, lambda: box.text == "/mcp restart alp", 10, "the start")
        await pilot.press("tab")
        await app_wait_until(pilot, lambda: "alpha  alps" in said(), 10, "the names")
        assert app.focused is box and box.text == "/mcp restart alp"
        await pilot.press(*"h", "tab")
        await app_wait_until(pilot, lambda: box.text == "/mcp restart alpha", 10, "the name")
        await pilot.press("enter")
        await app_wait_until(pilot, lambda: any("'alpha' restarted" in m for m in said()), 60,
                             "the server restarted")
        await pilot.press(*"/mcp restart alp", "tab")  # the same after a restart
        await app_wait_until(pilot, lambda: len([m for m in said() if m == "alpha  alps"])
                             == 2, 10, "the names again")
