"""config.toml decides which MCP servers run, read again while the app runs.

``/mcp restart NAME`` (or ``r`` on /mcp) starts a table added since the app
started and stops one removed; ``/mcp reload`` reads the whole ``[mcp]`` table:
new tables start, removed ones stop, changed ones restart, the others are left
running. Real subprocesses (the hostile server writes its pid and its helper's),
a real config file, the real app through Pilot.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from selfref_tui.agent.mcp.approval import APPROVE_ALWAYS, APPROVE_ONCE
from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.mcp.trust import add_trust
from selfref_tui.agent.tools.builtin import ToolError
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.screens.mcp_servers import McpServersScreen
from tests.hostile_servers import alive, mcp_stdio_command, read_pids, wait_gone
from tests.ui.helpers import SIZE, make_app, type_and_send
from tests.ui.helpers import started as app_started
from tests.ui.helpers import wait_until as app_wait_until

from .test_hostile_mcp import notices
from .test_manager import Ctx, SlowPerson
from .test_restart_any import from_file


def table(name: str, pids: Path | None = None, *extra: str) -> str:
    """A ``[mcp.servers.NAME]`` table of the hostile server (its pids written to ``pids``,
    with one helper in its process group); ``extra``: lines added to the table."""
    command, args = mcp_stdio_command(*(("--pids", str(pids), "--helpers", "1") if pids
                                        else ()))
    return "\n".join([f"[mcp.servers.{json.dumps(name)}]", f"command = {json.dumps(command)}",
                      f"args = {json.dumps(list(args))}", *extra, ""]) + "\n"


async def said(events: list, text: str) -> list[str]:
    """The notices once one holds ``text`` (a stopped server's comes when it is gone)."""
    from tests.agent.helpers import wait_until

    await wait_until(lambda: any(text in n for n in notices(events)), timeout=30,
                     what=f"a notice with {text!r}")
    return notices(events)


async def test_a_table_added_starts_and_a_table_removed_stops_on_restart(tmp_path):
    config_path, pids = tmp_path / "config.toml", tmp_path / "pids"
    config_path.write_text(table("h", pids), encoding="utf-8")
    manager, events = await from_file(config_path)
    try:
        assert manager.status["h"].state == "ready"
        old = await asyncio.to_thread(read_pids, pids, 2)  # the server and its helper
        assert manager.restart("added") == (  # not in the file yet
            f"no MCP server is named 'added' in {config_path} (configured: 'h')")

        config_path.write_text(table("h", pids) + table("added", None, 'trust = ["echo"]'),
                               encoding="utf-8")
        assert manager.restart("added") == ""
        assert manager.status["added"].state == "starting"
        await manager.wait_started(timeout=60)
        assert manager.status["added"].state == "ready", manager.status["added"].error
        assert manager.handles("mcp__added__echo") and manager.is_trusted("mcp__added__echo")
        assert not manager.is_trusted("mcp__added__hang")
        count = len(manager.status["h"].tools)
        assert notices(events) == [f"MCP server 'added' started: {count} tools offered"]

        config_path.write_text(table("added", None, 'trust = ["echo"]'), encoding="utf-8")
        assert manager.restart("h") == ""
        assert "h" not in manager.status and not manager.handles("mcp__h__echo")
        assert [row["name"] for row in manager.overview()] == ["added"]
        assert await asyncio.to_thread(wait_gone, old) == []  # the group, helper and all
        removed = (f"MCP server 'h' was removed from {config_path}, so it was stopped and its "
                   f"{count} tools are no longer offered")
        assert (await said(events, "was removed"))[1:] == [removed]  # one notice
        assert manager.status["added"].state == "ready"  # the other one untouched
        assert manager.restart("h") == (
            f"no MCP server is named 'h' in {config_path} (configured: 'added')")

        config_path.write_text(table("added") + table("h", pids), encoding="utf-8")
        assert manager.restart("h") == ""  # back, under the same tool names
        await manager.wait_started(timeout=60)
        assert manager.handles("mcp__h__echo") and manager.status["h"].state == "ready"
    finally:
        await manager.aclose()


async def test_reload_starts_new_stops_removed_restarts_changed_and_leaves_the_rest(tmp_path):
    config_path = tmp_path / "config.toml"
    pids = {name: tmp_path / f"{name}.pids" for name in ("gone", "changed", "same", "new")}
    config_path.write_text(table("gone", pids["gone"]) + table("changed", pids["changed"]) +
                           table("same", pids["same"]) + table("off", None, "enabled = false"),
                           encoding="utf-8")
    manager, events = await from_file(config_path)
    try:
        before = {n: await asyncio.to_thread(read_pids, pids[n], 2)
                  for n in ("gone", "changed", "same")}
        run = manager.changes()

        config_path.write_text("[mcp.servers.same\n", encoding="utf-8")  # half-saved
        refused, done = manager.reload()
        assert not done and refused.startswith(
            f"MCP servers were not reloaded, none changed: {config_path} is not valid TOML")
        assert manager.changes() == run  # nothing stopped or started

        config_path.write_text(
            table("same", pids["same"]) + table("changed", pids["changed"], 'env = { X = "1" }')
            + table("off", None, "enabled = false") + table("new", pids["new"]),
            encoding="utf-8")
        assert manager.reload() == (
            f"MCP servers reloaded from {config_path}: started 'new'; restarted 'changed'; "
            "removed 'gone'; unchanged 'same', 'off'", True)
        await manager.wait_started(timeout=60)
        assert {n: s.state for n, s in manager.status.items()} == {
            "changed": "ready", "same": "ready", "off": "disabled", "new": "ready"}
        assert await asyncio.to_thread(wait_gone, before["gone"] + before["changed"]) == []
        assert all(alive(p) for p in before["same"])  # left running
        assert [r for r in manager.changes() if r[0] == "same"] == \
            [r for r in run if r[0] == "same"]  # the same run
        changed = (await asyncio.to_thread(read_pids, pids["changed"], 4))[2:]
        assert all(alive(p) for p in changed) and manager.configs["changed"].env == (("X", "1"),)
        assert sorted(await said(events, "was removed")) == sorted([
            "MCP server 'new' started: 11 tools offered",
            "MCP server 'changed' restarted: 11 tools offered again",
            f"MCP server 'gone' was removed from {config_path}, so it was stopped and its 11 "
            "tools are no longer offered"])

        config_path.write_text(table("same", pids["same"], "enabled = false"), encoding="utf-8")
        line, done = manager.reload()
        assert done and line.endswith("stopped 'same'; removed 'changed', 'off', 'new'")
        await said(events, "'same' is disabled")
        assert manager.status["same"].state == "disabled" and not manager.tools()
        assert await asyncio.to_thread(wait_gone, before["same"]) == []
        assert "MCP server 'same' is disabled in config.toml now, so it was stopped and its 11 " \
            "tools are no longer offered" in notices(events)
        assert f"MCP server 'off' was removed from {config_path}; it was not running" in \
            await said(events, "'off' was removed")
    finally:
        await manager.aclose()


async def test_a_trust_list_changed_is_taken_without_a_restart(tmp_path):
    """"Always allow" writes the tool into its server's trust list in the file, which then
    differs from the table the server started with: a reload restarted that server (its
    process, and any call on it, dropped) though the person changed nothing. A change to
    the trust list alone is taken as it is, the server left running."""
    config_path, pids = tmp_path / "config.toml", tmp_path / "pids"
    config_path.write_text(table("h", pids), encoding="utf-8")
    manager, events = await from_file(config_path)
    manager.on_trust = lambda server, tool: add_trust(config_path, server, tool)  # the app's
    try:
        run = manager.changes()
        old = await asyncio.to_thread(read_pids, pids, 2)
        assert await manager.call("mcp__h__echo", {"text": "hi"},
                                  Ctx(answer=APPROVE_ALWAYS)) == "echo: hi"
        assert 'trust = ["echo"]' in config_path.read_text(encoding="utf-8")
        assert manager.reload() == (
            f"MCP servers reloaded from {config_path}: trust updated 'h'", True)
        assert manager.changes() == run and all(alive(p) for p in old)
        assert manager.is_trusted("mcp__h__echo") and not manager.is_trusted("mcp__h__hang")

        config_path.write_text(table("h", pids, 'trust = ["echo", "hang"]'), encoding="utf-8")
        assert manager.reload()[1] and manager.is_trusted("mcp__h__hang")  # by hand: the same
        assert manager.reload() == (f"MCP servers reloaded from {config_path}: unchanged 'h'",
                                    True)
        assert manager.changes() == run and all(alive(p) for p in old)
        assert notices(events) == []  # nothing started or stopped
    finally:
        await manager.aclose()


async def test_a_server_removed_while_it_starts_is_stopped(tmp_path):
    """A start still under way (a server that never answers, nor leaves on SIGTERM)
    waits for nothing a restart sets: it is cancelled, and its process is gone all the
    same."""
    config_path, pids = tmp_path / "config.toml", tmp_path / "pids"
    command, args = mcp_stdio_command("--pids", str(pids), "--wedge-start")
    config_path.write_text(table("ok") + f"[mcp.servers.slow]\ncommand = {json.dumps(command)}\n"
                           f"args = {json.dumps(list(args))}\n", encoding="utf-8")
    events: list = []
    from selfref_tui.config_load import load_config

    manager = McpManager(load_config(config_path=config_path, env={}).mcp_servers,
                         events.append)
    manager.config_path = config_path
    manager.start()
    try:
        slow = await asyncio.to_thread(read_pids, pids, 1)
        assert manager.status["slow"].state == "starting"
        config_path.write_text(table("ok"), encoding="utf-8")
        line, done = manager.reload()
        assert done and "removed 'slow'" in line
        assert await asyncio.to_thread(wait_gone, slow) == []
        await said(events, "'slow' was removed")
        await manager.wait_started(timeout=60)
        assert list(manager.status) == ["ok"] and manager.status["ok"].state == "ready"
    finally:
        await manager.aclose()


async def test_a_server_removed_while_the_person_is_asked_runs_no_call(tmp_path):
    """The approval question stays up while the table is removed and the servers are
    reloaded; allowing the call then is told the server is gone (it raised KeyError, which
    the model read as "the tool failed: 'h'")."""
    config_path = tmp_path / "config.toml"
    config_path.write_text(table("h"), encoding="utf-8")
    manager, _events = await from_file(config_path)
    person = SlowPerson(APPROVE_ONCE)
    try:
        call = asyncio.create_task(manager.call("mcp__h__echo", {"text": "hi"}, person))
        await asyncio.wait_for(person.asked.wait(), 30)
        config_path.write_text("", encoding="utf-8")
        assert manager.reload()[1] and "h" not in manager.status
        person.answered.set()
        with pytest.raises(ToolError) as error:
            await call
        assert str(error.value) == (
            "the MCP server 'h' was removed from the config by the person, so this tool did "
            "not run; its tools are no longer offered")
    finally:
        await manager.aclose()


async def test_the_app_starts_a_table_added_and_stops_one_removed(tmp_path):
    """Through the app: /mcp restart NEW with no server at the start, r on /mcp for a
    removed table, /mcp reload, and Tab completing it."""
    config_path, pids = tmp_path / "config.toml", tmp_path / "pids"
    config_path.write_text("", encoding="utf-8")
    server = DemoServer([])
    url = await server.start()
    try:
        app = make_app(tmp_path, url, mcp_config=config_path)
        async with app.run_test(size=SIZE) as pilot:
            await app_started(pilot, app)
            assert app.mcp is None  # nothing configured at the start

            def notes() -> list[str]:
                return [str(n.message) for n in app._notifications]

            config_path.write_text(table("h", pids), encoding="utf-8")
            await type_and_send(pilot, "/mcp restart h")
            await app_wait_until(pilot, lambda: "MCP server 'h' started: 11 tools offered" in
                                 notes(), 60, "the added server started")
            assert app.mcp.handles("mcp__h__echo") and app.chat_input.text == ""
            old = await asyncio.to_thread(read_pids, pids, 2)

            config_path.write_text(table("other"), encoding="utf-8")
            await type_and_send(pilot, "/mcp")
            screen = app.screen
            assert isinstance(screen, McpServersScreen) and screen.server_list.cursor == "h"
            await pilot.press("r")
            await app_wait_until(pilot, lambda: [r["name"] for r in screen.rows] == [], 10,
                                 "the removed server off the list")
            assert not app.mcp.handles("mcp__h__echo")
            assert await asyncio.to_thread(wait_gone, old) == []
            await pilot.press("escape")
            await app_wait_until(pilot, lambda: any("'h' was removed" in n for n in notes()),
                                 30, "the notice")
            assert [n for n in notes() if "'h' was removed" in n] == [
                f"MCP server 'h' was removed from {config_path}, so it was stopped and its 11 "
                "tools are no longer offered"]

            await pilot.press(*"/mcp rel", "tab")
            await app_wait_until(pilot, lambda: app.chat_input.text == "/mcp reload", 10,
                                 "the word completed")
            await pilot.press("enter")
            await app_wait_until(pilot, lambda: "MCP server 'other' started: 11 tools offered"
                                 in notes(), 60, "the reload's start")
            assert f"MCP servers reloaded from {config_path}: started 'other'" in notes()
            assert list(app.mcp.status) == ["other"]
    finally:
        await server.stop()
