"""Notices held behind a dialog that a later state makes stale are dropped, not shown
late: "waiting for the MCP server" once the server is ready (a real server process
that starts when the test says), and the older of two notices of one topic."""

from __future__ import annotations

import json
import sys

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.screens.mcp_servers import McpServersScreen
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until

from .conftest import SERVER


def _said(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


def _held(app) -> list[str]:
    return [str(n.message) for n in app._held]


async def test_waiting_for_a_server_is_not_shown_after_the_dialog_once_it_is_ready(tmp_path):
    config_path, gate = tmp_path / "config.toml", tmp_path / "start"
    config_path.write_text(f'''[mcp.servers.slow]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}, "--wait-for", {json.dumps(str(gate))}]
''', encoding="utf-8")
    async with DemoServer([Reply(text="Hello.")]) as url:
        app = make_app(tmp_path, url, mcp_config=config_path)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.mcp is not None and app.mcp.starting(), 30,
                             "the server starting")
            await type_and_send(pilot, "/mcp")  # the person looks at the servers…
            await wait_until(pilot, lambda: isinstance(app.screen, McpServersScreen), 10,
                             "the MCP screen")
            await app._send("hi")  # …with a message on its way (sent as Enter sends it)
            await wait_until(pilot, lambda: any("waiting for the MCP server slow" in text
                                                for text in _held(app)), 20,
                             "the notice held behind the dialog")
            gate.touch()  # the server becomes ready, and the turn goes on
            await turn_done(pilot, app, timeout=30)
            assert not any("waiting" in text for text in _held(app) + _said(app))
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, McpServersScreen), 10,
                             "the dialog closed")
            await pilot.pause()
            assert not any("waiting" in str(toast.render())
                           for toast in app.screen.query("Toast"))


async def test_a_newer_notice_of_a_topic_replaces_the_one_held(tmp_path):
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "/mcp")
            await wait_until(pilot, lambda: isinstance(app.screen, McpServersScreen), 10,
                             "a dialog")
            app.notify("3 of 40 tools are offered", topic="tool-offer", timeout=60)
            app.notify("an unrelated notice", timeout=60)
            app.notify("the full tool set is offered again", topic="tool-offer", timeout=60)
            await wait_until(pilot, lambda: len(_held(app)) == 2, what="the notices taken")
            assert _held(app) == ["an unrelated notice", "the full tool set is offered again"]
            await pilot.press("escape")
            await wait_until(pilot, lambda: len(app.screen.query("Toast")) == 2,
                             what="the notices shown on the chat screen")
            shown = " ".join(str(toast.render()) for toast in app.screen.query("Toast"))
            assert "full tool set" in shown and "3 of 40" not in shown
            app.notify("", topic="tool-offer")  # withdrawn: nothing empty is shown
            await pilot.pause()
            assert len(app.screen.query("Toast")) == 2
