"""A tool's failure is a stored fact: a result that only reads like an error stays done.

A real MCP server (a subprocess) returns text beginning "Error: " — a grep of a
log would — and fails a second call for real. Live, the cards said "✓ done" and
"✖ error"; the store used to tell them apart by the text alone, so after a rewind,
a branch or a restart both said "✖ error". The model reads both results as before.
"""

from __future__ import annotations

from dataclasses import replace

from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until

from .conftest import server_config

LOOKS_FAILED = "Error: 3 lines matched in app.log"
SCRIPT = [
    Reply(tool_calls=[ToolCall("mcp__test__verbatim", {"text": LOOKS_FAILED}, id="v1"),
                      ToolCall("mcp__test__fail", {"reason": "disk full"}, id="f1")]),
    Reply(text="One grep, one failure."),
    Reply(text="second answer"),
]


def cards(app) -> dict[str, tuple[str, str]]:
    """Each tool card's status and result, by tool name."""
    return {card.tool_name: (card.status, card.result or "")
            for card in app.transcript.items_of("tool")}


def with_mcp(app):
    app.config = replace(app.config, mcp_servers=(server_config(trust=("*",)),))
    return app


async def shown_as_live(pilot, app, live: dict, what: str) -> None:
    await wait_until(pilot, lambda: len(app.transcript.items_of("tool")) == 2, 20,
                     f"the two cards {what}")
    assert cards(app) == live, what


async def test_a_result_reading_error_stays_done_after_rewind_branch_and_restart(tmp_path):
    server = DemoServer(SCRIPT)
    url = await server.start()
    try:
        app = with_mcp(make_app(tmp_path, url))
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.mcp is not None and app.mcp.handles(
                "mcp__test__verbatim"), 60, "the MCP server to be ready")
            await type_and_send(pilot, "grep the log")
            await turn_done(pilot, app, timeout=30)
            live = cards(app)
            assert live["mcp__test__verbatim"] == ("done", LOOKS_FAILED)
            status, why = live["mcp__test__fail"]
            assert status == "error" and why.startswith("Error executing tool fail")
            # what the model read did not change: the text as returned, the failure as "Error: "
            results = {m["tool_call_id"]: m["content"] for m in server.requests[1]["messages"]
                       if m["role"] == "tool"}
            assert results["v1"] == LOOKS_FAILED
            assert results["f1"] == f"Error: {why}"
            assert set(server.requests[1]["messages"][-1]) == {"role", "tool_call_id",
                                                               "content"}
            await type_and_send(pilot, "and again")
            await turn_done(pilot, app, timeout=30)
            # the rewind draws the transcript again from the store
            await type_and_send(pilot, "/rewind 7")
            await wait_until(pilot, lambda: app.agent.memory("main").messages[-1]["content"]
                             == "and again", what="rewound before the second answer")
            await shown_as_live(pilot, app, live, "after the rewind")
            await type_and_send(pilot, "/branch side")
            await wait_until(pilot, lambda: app.key == "side"
                             and app.header.status == "ready", what="the branch on screen")
            await shown_as_live(pilot, app, live, "on the branch")
        again = with_mcp(make_app(tmp_path, url))
        async with again.run_test(size=SIZE) as pilot:
            await started(pilot, again)
            await shown_as_live(pilot, again, live, "after a restart")
    finally:
        await server.stop()
