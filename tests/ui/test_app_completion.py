"""Tab completes a slash command in the input (it used to move the focus away)."""

from __future__ import annotations

from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.commands import complete, help_rows
from tests.ui.helpers import SIZE, make_app, started, wait_until


def test_complete_finds_the_command_a_prefix_names():
    assert complete("/ex") == ("/export ", ["export"])  # it takes arguments: a space after
    assert complete("/hel") == ("/help", ["help"])
    assert complete("/mc") == ("/mcp ", ["mcp"])  # /mcp restart NAME
    assert complete("/co") == ("/co", ["compact", "context"])  # no further than they agree
    assert complete("/zz") == ("/zz", [])
    assert complete("/export x") == ("/export x", [])  # past the command word: not ours
    assert complete("hello") == ("hello", [])


def test_mcp_restart_completes_its_word_then_a_servers_name():
    names = ["alpha", "alps", "My Server"]
    assert complete("/mcp r", names) == ("/mcp re", ["restart", "reload"])
    assert complete("/mcp re", names) == ("/mcp re", ["restart", "reload"])
    assert complete("/mcp res", names) == ("/mcp restart ", ["restart"])
    assert complete("/mcp rel", names) == ("/mcp reload", ["reload"])  # takes no name
    assert complete("/mcp reload ", names) == ("/mcp reload ", [])
    assert [row for row in help_rows() if "reload" in row[0]] == [
        ("/mcp [restart NAME | reload]", "MCP servers: their state and tools (restart NAME stops "
         "one and starts it again, its config.toml table read anew; reload reads every table: "
         "new ones start, removed ones stop, changed ones restart)")]
    assert complete("/mcp x", names) == ("/mcp x", [])
    assert complete("/mcp restart ", names) == ("/mcp restart ", names)  # they agree on nothing
    assert complete("/mcp restart al", names) == ("/mcp restart alp", ["alpha", "alps"])
    assert complete("/mcp restart alph", names) == ("/mcp restart alpha", ["alpha"])
    assert complete("/mcp restart my", names) == ("/mcp restart My Server", ["My Server"])
    assert complete("/mcp restart z", names) == ("/mcp restart z", [])
    assert complete("/mcp restart al", []) == ("/mcp restart al", [])  # no servers


async def test_tab_on_a_slash_command_completes_it_and_keeps_the_focus(tmp_path):
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            box = app.chat_input
            await pilot.press(*"/ex", "tab")
            await wait_until(pilot, lambda: box.text == "/export ", what="completed")
            assert app.focused is box and box.cursor_location == (0, len("/export "))
            box.clear()
            await pilot.press(*"/co", "tab")
            await wait_until(pilot, lambda: app._notifications, what="the candidates")
            assert [str(n.message) for n in app._notifications] == ["/compact  /context"]
            assert box.text == "/co" and app.focused is box
