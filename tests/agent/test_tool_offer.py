"""A small window gets a reduced tool set, most essential first, and the request says so.

The HTTP tests run the real provider against the in-package server refusing
requests over its window (``enforce_window``), as llama-cpp-python does: with
the full tool set (~1,600 tokens of schemas) no request fits 1,024 tokens.
"""

from __future__ import annotations

import json

from selfref_tui.agent import events as ev
from selfref_tui.agent.tools.offer import TOOL_SHARE, ToolOffer, offer_tools
from selfref_tui.demo.script import Reply, ToolCall

LONG_PROMPT = "Tell me about lighthouses. " * 28
LONG_ANSWER = "Lighthouses guide ships along dangerous coasts at night. " * 30


def _tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def _names(tools) -> list[str]:
    return [t["function"]["name"] for t in tools]


SIZES = {"remember": 100, "forget": 100, "compact": 250, "inspect_context": 80,
         "fork_spawn": 150, "fork_gather_all": 100, "list_refs": 70, "get_ref": 70,
         "read_fd": 200, "fd_to_file": 250, "mcp__tiny__x": 10}
ALL = [_tool(n) for n in SIZES]


def _count(tools) -> int:
    return sum(SIZES[t["function"]["name"]] for t in tools)


def test_a_window_with_room_gets_every_tool():
    offer = offer_tools(ALL, _count, window=3500)  # 1,380 of 45 % of 3,500
    assert offer.tools == ALL and not offer.reduced and offer.notice() is None


def test_a_small_window_gets_the_most_essential_prefix_in_the_original_order():
    # 45 % of 1,800 is 810: compact 250, memory 200, inspect 80 (530); the ref group
    # (340) does not fit, and nothing after it is offered, not even the 10-token MCP tool
    offer = offer_tools(ALL, _count, window=1800)
    assert _names(offer.tools) == ["remember", "forget", "compact", "inspect_context"]
    assert (len(offer.tools), offer.total, offer.compact_offered) == (4, 11, True)
    assert offer.notice() == ("window too small for the full tool set: offering 4 of 11 tools "
                              "(their schemas may take 45% of the 1,800-token window; set "
                              "context_window if the model has a larger one)")


def test_groups_are_never_split():
    # room for compact + memory + inspect + refs + fd_to_file + fork_spawn alone: no forks
    room = 250 + 200 + 80 + 340 + 250 + 150
    offer = offer_tools(ALL, _count, window=int(room / TOOL_SHARE) + 1)
    assert "fork_spawn" not in _names(offer.tools)
    assert "fork_gather_all" not in _names(offer.tools)


def test_too_small_for_compact_offers_nothing():
    offer = offer_tools(ALL, _count, window=540)  # 45 % is 243 < compact's 250
    assert offer.tools == [] and not offer.compact_offered
    assert "offering 0 of 11 tools" in (offer.notice() or "")


def test_other_sources_come_after_the_built_in_tools():
    tools = [_tool("mcp__tiny__x"), _tool("compact")]
    assert _names(offer_tools(tools, _count, window=570).tools) == ["compact"]  # 260 > 256
    assert offer_tools(tools, _count, window=570).total == 2
    assert ToolOffer(tools, 2).tools == tools


def _small(h, window: int = 1024) -> None:
    """The harness's server refuses what does not fit ``window``; the agent knows the window."""
    h.server.context_window = window
    h.server.enforce_window = True
    h.agent.context_window = window


async def test_a_1024_token_window_offers_compact_only_and_recovers_over_http(harness):
    async with harness([Reply(text=LONG_ANSWER), Reply(text="Hi.")]) as h:
        _small(h)
        assert _names(h.agent.tools_for("main")) == ["compact"]
        plan = h.agent.preview_request("main")
        assert (len(plan.tools), plan.tools_total) == (1, 12)
        assert await h.agent.run_turn("main", LONG_PROMPT) == "done", h.of(ev.ErrorEvent)
        assert _names(h.server.requests[0]["tools"]) == ["compact"]
        said = [n.message for n in h.of(ev.Notice)]
        assert said.count("window too small for the full tool set: offering 1 of 12 tools "
                          "(their schemas may take 45% of the 1,024-token window; set "
                          "context_window if the model has a larger one)") == 1
        # The server's usage report calibrates our counts (its tokens are bigger here), so
        # the offer may shrink further: whatever /context shows now is what is sent next.
        shown = h.agent.preview_request("main").tools
        # the long answer leaves no room: the next turn leaves the oldest messages out
        assert await h.agent.run_turn("main", "Say hi.") == "done", h.of(ev.ErrorEvent)
        assert h.of(ev.ErrorEvent) == []
        last = h.server.requests[-1]
        assert "are left out of this request" in last["messages"][0]["content"]
        assert last.get("tools", []) == shown
        # told once per change, not on every step
        told = [n.message for n in h.of(ev.Notice) if "full tool set" in n.message]
        assert len(told) == len(set(told)) and f"offering {len(shown)} of 12" in told[-1]


async def test_the_full_set_comes_back_with_a_larger_window(harness):
    async with harness([Reply(text="one"), Reply(text="two")]) as h:
        _small(h)
        assert await h.agent.run_turn("main", "hi") == "done"
        h.agent.context_window = h.server.context_window = 128_000
        assert await h.agent.run_turn("main", "again") == "done"
        assert len(h.server.requests[-1]["tools"]) == 12
        assert h.of(ev.Notice)[-1].message == "the full tool set is offered again (12 tools)"


async def test_a_tool_left_out_of_the_request_is_not_run(harness):
    script = [Reply(tool_calls=[ToolCall("remember", {"text": "tea"}, id="r1")]),
              Reply(text="I could not.")]
    async with harness(script) as h:
        _small(h)
        assert await h.agent.run_turn("main", "Remember tea.") == "done"
        (error,) = h.of(ev.ToolCallError)
        assert "not offered in this request" in error.error
    assert h.reload().experiences == []


async def test_without_compact_the_runtime_does_not_ask_for_it(harness):
    # 640 tokens: 45 % is 288, less than compact's schema; nothing is offered
    async with harness([Reply(text=LONG_ANSWER), Reply(text="Hi.")]) as h:
        _small(h, 640)
        h.agent.request_compaction("main")
        assert "compact" not in json.dumps(h.agent.preview_request("main").messages[1:])
        assert await h.agent.run_turn("main", "Tell me about lighthouses.") == "done"
        assert "tools" not in h.server.requests[0]  # no tools at all, not an empty list
        assert any(n.message.startswith("cannot compact: the window is too small")
                   for n in h.of(ev.Notice))
        assert await h.agent.run_turn("main", "Say hi.") == "done", h.of(ev.ErrorEvent)
        sent = json.dumps(h.server.requests[-1]["messages"])
        assert "are left out of this request" in sent and "`compact`" not in sent


def test_context_show_json_carries_the_reduced_set():
    from tests.cli.helpers import cli

    # a server that is never asked: the window comes from the flag
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "SELFREF_MODEL": "m"}
    base = ("context", "show", "--context-window", "1024")
    shown = cli(*base, "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert _names(json.loads(shown.stdout)["tools"]) == ["compact"]
    text = cli(*base, env=env)
    assert "this request offers 1 of 12 tools" in text.stdout and "tools: compact" in text.stdout


async def test_tools_joining_a_whole_set_say_nothing_of_a_set_offered_again(harness):
    """An MCP server that starts after the first turn adds its tools: the set was never
    reduced, so "the full tool set is offered again" was a notice about nothing."""
    from tests.agent.test_tool_batch import EchoSource

    async with harness([Reply(text="one"), Reply(text="two")]) as h:
        assert await h.agent.run_turn("main", "hi") == "done"
        h.agent.tool_sources.append(EchoSource())
        assert await h.agent.run_turn("main", "again") == "done"
        assert len(h.server.requests[-1]["tools"]) > len(h.server.requests[0]["tools"])
        assert [n.message for n in h.of(ev.Notice) if "tool" in n.message] == []
