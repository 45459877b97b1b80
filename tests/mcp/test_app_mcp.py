"""The app with an MCP server: started after the first frame, asks before an untrusted
tool, saves "trust this tool" into config.toml, stops the server on exit."""

from __future__ import annotations

import json
import re
import sys

from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.screens import question
from selfref_tui.ui.screens.approval import ApprovalScreen
from selfref_tui.ui.screens.mcp_servers import McpServersScreen
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until

from .conftest import SERVER


async def test_approval_in_the_app_runs_the_tool_and_trusts_it(tmp_path):
    config_path = tmp_path / "config.toml"
    config_path.write_text(f'''# my config
[mcp.servers.test]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}]
''', encoding="utf-8")
    script = [Reply(tool_calls=[ToolCall("mcp__test__echo", {"text": "[@click=app.quit]"},
                                         id="c1")]),
              Reply(text="It echoed.")]
    server = DemoServer(script)
    url = await server.start()
    try:
        app = make_app(tmp_path, url, mcp_config=config_path)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.mcp is not None and app.mcp.handles(
                "mcp__test__echo"), 60, "the MCP server to be ready")
            await type_and_send(pilot, "echo something")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), 20,
                             "the approval dialog")
            assert app.screen.approval.tool == "echo"
            assert "[@click=app.quit]" in app.screen.approval.arguments
            await pilot.pause(question.GRACE_S + 0.1)  # keys before that are ignored
            await pilot.press("left", "enter")  # from "deny" to "trust this tool"
            await turn_done(pilot, app, timeout=30)
            tool = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
            assert tool[0]["content"] == "echo: [@click=app.quit]"
            assert app.is_running
            await type_and_send(pilot, "/mcp")
            await wait_until(pilot, lambda: isinstance(app.screen, McpServersScreen), 10,
                             "the MCP screen")
            [row] = app.screen.rows
            assert row["state"] == "ready"
            assert {t["name"]: t["trusted"] for t in row["tools"]}["mcp__test__echo"] is True
            await pilot.press("escape")
            manager = app.mcp
        assert manager.statuses()[0].state == "stopped"  # the app stopped it on exit
        text = config_path.read_text(encoding="utf-8")
        assert text.startswith("# my config\n[mcp.servers.test]\ncommand = ")
        assert text.endswith(f"\nargs = [{json.dumps(str(SERVER))}]\ntrust = [\"echo\"]\n")
    finally:
        await server.stop()


async def test_the_mcp_screen_follows_a_server_that_becomes_ready_while_it_is_open(tmp_path):
    # the server starts once the screen has said "starting": a fixed delay ran out
    # before the screen opened on a loaded machine
    config_path, gate = tmp_path / "config.toml", tmp_path / "start"
    config_path.write_text(f'''[mcp.servers.slow]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}, "--wait-for", {json.dumps(str(gate))}]
''', encoding="utf-8")
    server = DemoServer([])
    url = await server.start()
    try:
        app = make_app(tmp_path, url, mcp_config=config_path)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.mcp is not None, 30, "the MCP manager")
            await type_and_send(pilot, "/mcp")
            await wait_until(pilot, lambda: isinstance(app.screen, McpServersScreen), 10,
                             "the MCP screen")
            screen = app.screen
            assert "slow  starting" in "\n".join(screen.server_list.text())
            gate.touch()
            await wait_until(pilot, lambda: "slow  ready" in "\n".join(
                screen.server_list.text()), 20, "the open screen to show the server ready")
            assert re.search(r"mcp__slow__echo +asks", "\n".join(screen.server_list.text()))
    finally:
        await server.stop()
