"""End to end against a real llama.cpp server (llama-cpp-python), not our demo server.

What once broke there, checked on the real thing: a conversation
with tool calls continued (``content: null`` was refused), Esc mid-answer,
the window, and a request that does not fit a 1,024-token window.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from selfref_tui.agent import events as ev
from selfref_tui.agent.abort import AbortSignal
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.provider.window import resolve_window
from selfref_tui.agent.turn.loop import Agent
from selfref_tui.config import AgentSettings, ProviderConfig
from selfref_tui.demo import DemoServer, Reply, ToolCall
from selfref_tui.selfref import SelfReference

from .conftest import MODEL, SMALL_MODEL, URL

SETTINGS = AgentSettings(base_system_prompt="You are a terse assistant. Answer in one sentence.")


def provider_config(model: str = MODEL, **kw) -> ProviderConfig:
    return ProviderConfig(base_url=URL, api_key="none", model=model, max_retries=1,
                          first_byte_timeout_s=120, idle_timeout_s=60, **kw)


class Run:
    """An agent on the real server over a real store; events collected."""

    def __init__(self, data, model: str = MODEL, window: int = 4096) -> None:
        self.events: list = []
        self.store = SelfReference(data)
        self.agent = Agent(self.store, Provider(provider_config(model)), SETTINGS,
                           self.events.append, model=model, context_window=window)

    def of(self, cls):
        return [e for e in self.events if isinstance(e, cls)]

    def text(self) -> str:
        return "".join(e.text for e in self.of(ev.TextDelta))

    async def close(self) -> None:
        await self.agent.aclose()
        self.store.close()


async def test_a_plain_turn(tmp_path):
    run = Run(tmp_path / "data")
    try:
        outcome = await run.agent.run_turn("main", "Say hello.")
    finally:
        await run.close()
    assert outcome == "done", run.of(ev.ErrorEvent)
    assert run.text().strip()


async def test_a_turn_after_a_stored_transcript_with_tool_calls_and_results(tmp_path):
    # the tool-calling turn comes from the scripted server (a 135M model seldom
    # calls tools); the store then holds an assistant message with content None
    # beside its calls, and a tool result: what llama.cpp refused before the fix
    data = tmp_path / "data"
    script = [Reply(tool_calls=[ToolCall("remember", {"text": "the person likes tea"},
                                         id="call_1")]),
              Reply(text="Noted: you like tea.")]
    async with DemoServer(script) as demo_url:
        store = SelfReference(data)
        agent = Agent(store, Provider(ProviderConfig(base_url=demo_url, api_key="x",
                                                     model="selfref-demo")),
                      SETTINGS, model="selfref-demo", context_window=4096)
        assert await agent.run_turn("main", "Remember that I like tea.") == "done"
        await agent.aclose()
        store.close()
    run = Run(data)
    try:
        outcome = await run.agent.run_turn("main", "What do I like to drink?")
    finally:
        await run.close()
    assert outcome == "done", run.of(ev.ErrorEvent)
    assert run.text().strip()


async def test_esc_mid_answer_stops_at_once_and_keeps_the_part(tmp_path):
    run = Run(tmp_path / "data")
    abort = AbortSignal()
    try:
        task = asyncio.create_task(run.agent.run_turn(
            "main", "Write a long story about a lighthouse keeper, at least 500 words.",
            abort=abort))
        deadline = time.monotonic() + 120
        while not run.of(ev.TextDelta) and not task.done():
            assert time.monotonic() < deadline, "no answer within 120 s"
            await asyncio.sleep(0.05)
        fired = time.monotonic()
        abort.fire("user pressed Esc")
        outcome = await task
        stopped_after = time.monotonic() - fired
        # the server is free again: the next turn is answered
        after = await run.agent.run_turn("main", "Say hi.")
    finally:
        await run.close()
    assert outcome == "aborted" and stopped_after < 1.0, stopped_after
    assert after == "done"


async def test_the_window_is_read_off_the_server():
    window = await resolve_window(provider_config())
    if window.source == "server /props":
        assert window.tokens == 4096
        return
    # llama-cpp-python serves no /props and no window in /v1/models: the
    # window is then assumed, and said (llama.cpp's own llama-server has /props)
    assert window.assumed and "window unknown" in " ".join(window.notices())
    pytest.skip("this server tells no window (llama-cpp-python: no /props); "
                f"assumed {window.tokens} with a notice")


async def test_a_request_over_a_1024_token_window_is_named_an_overflow(tmp_path):
    run = Run(tmp_path / "data", model=SMALL_MODEL, window=1024)
    try:
        outcome = await run.agent.run_turn("main", "Tell me about lighthouses. " * 40)
    finally:
        await run.close()
    errors = run.of(ev.ErrorEvent)
    print(f"outcome: {outcome}; notices: {[n.message for n in run.of(ev.Notice)]}; "
          f"errors: {[e.message for e in errors]}")
    if outcome == "done":
        # it fitted: the small window's reduced tool set leaves room for the prompt
        return
    assert errors and errors[-1].kind == "context_overflow", errors
    assert "no longer fits the model's window" in errors[-1].message


async def test_after_an_overflow_the_conversation_recovers(tmp_path):
    # The full tool set (~1,300 tokens of schemas) alone is larger than 1,024 tokens:
    # the small window gets a reduced set (see agent/tools/offer.py), so requests fit.
    run = Run(tmp_path / "data", model=SMALL_MODEL, window=1024)
    try:
        first = await run.agent.run_turn("main", "Tell me about lighthouses. " * 40)
        outcome = await run.agent.run_turn("main", "Say hi.")
        offered = [t["function"]["name"] for t in run.agent.tools_for("main")]
    finally:
        await run.close()
    notices = [n.message for n in run.of(ev.Notice)]
    print(f"first turn: {first}; second: {outcome}; tools offered: {offered}; "
          f"notices: {notices}; errors: {[e.message for e in run.of(ev.ErrorEvent)]}")
    assert any("window too small for the full tool set" in n for n in notices), notices
    assert outcome == "done", run.of(ev.ErrorEvent)
