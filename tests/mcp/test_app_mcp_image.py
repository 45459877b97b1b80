"""An MCP tool's picture in the app: an image block under its call, stored once, reloaded."""

from __future__ import annotations

import json
import sys
from dataclasses import replace

from selfref_tui.config_load import load_config
from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until

from .conftest import SERVER
from .server import tiny_png


async def test_a_tools_picture_is_an_image_block_live_and_after_a_reload(tmp_path):
    config_path = tmp_path / "config.toml"
    config_path.write_text(f'''[mcp.servers.test]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}]
trust = ["picture"]
''', encoding="utf-8")
    script = [Reply(tool_calls=[ToolCall("mcp__test__picture", {}, id="c1")]),
              Reply(text="A red square.")]
    server = DemoServer(script)
    url = await server.start()
    mcp_servers = load_config(config_path=config_path, env={}).mcp_servers
    try:
        app = make_app(tmp_path, url)
        app.config = replace(app.config, mcp_servers=mcp_servers, config_path=config_path)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.mcp is not None and app.mcp.handles(
                "mcp__test__picture"), 60, "the MCP server to be ready")
            await type_and_send(pilot, "draw")
            await turn_done(pilot, app, timeout=30)
            kinds = [item.kind for item in app.transcript.items]
            assert kinds == ["user", "tool", "image", "answer"]
            (image,) = app.transcript.items_of("image")
            assert image.data == tiny_png() and image.error == ""
            assert "2×2 px" in image.title and "tool mcp__test__picture" in image.title
        stored = list((tmp_path / "data" / "keys").glob("*/images/*"))
        assert [p.read_bytes() for p in stored] == [tiny_png()]
        app = make_app(tmp_path, url)  # no MCP server needed to show what is stored
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.transcript.items_of("image"), 10, "the image")
            assert [i.kind for i in app.transcript.items] == ["user", "tool", "image", "answer"]
            assert app.transcript.items_of("image")[0].data == tiny_png()
    finally:
        await server.stop()
