"""The tool batch: concurrent calls on a TaskGroup, abort, and extra tool sources."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from selfref_tui.agent import events as ev
from selfref_tui.agent.abort import AbortSignal
from selfref_tui.agent.tools.batch import BuiltinTools, ToolBatch, ToolSource, schemas_of
from selfref_tui.agent.tools.builtin import ToolContext, ToolError
from selfref_tui.context.mutations import ToolCancelledMutation, ToolResultMutation
from selfref_tui.demo.script import Reply, ToolCall

from .helpers import HANG_S, wait_until


class EchoSource:
    """An extra tool source the way an MCP client would plug in."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.calls: list[tuple[str, dict]] = []

    def schemas(self) -> list[dict]:
        return [
            {"type": "function", "function": {
                "name": "echo", "description": "Echo the text back.",
                "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}},
            {"type": "function", "function": {
                "name": "wait_gate", "description": "Wait until released.",
                "parameters": {"type": "object", "properties": {}}}},
            # a name the built-in tools already have: the built-in one wins
            {"type": "function", "function": {"name": "remember", "description": "shadow",
                                              "parameters": {"type": "object"}}},
        ]

    def handles(self, name: str) -> bool:
        return name in ("echo", "wait_gate", "explode", "refuse")

    async def call(self, name: str, args: dict[str, Any], ctx: ToolContext) -> str:
        self.calls.append((name, args))
        if name == "wait_gate":
            await self.gate.wait()
            return "released"
        if name == "explode":
            raise RuntimeError("boom")
        if name == "refuse":
            raise ToolError("not today")
        return f"echo: {args.get('text', '')} ({ctx.call_id})"


def test_sources_are_protocol_shaped_and_first_name_wins():
    extra = EchoSource()
    assert isinstance(extra, ToolSource) and isinstance(BuiltinTools(), ToolSource)
    names = [s["function"]["name"] for s in schemas_of([BuiltinTools(forks=False), extra])]
    assert names.count("remember") == 1 and names[-2:] == ["echo", "wait_gate"]
    assert "fork_spawn" not in names
    assert not BuiltinTools(forks=False).handles("fork_spawn")
    assert BuiltinTools().handles("fork_spawn")


async def test_extra_source_tools_are_offered_and_run_over_http(harness):
    script = [Reply(tool_calls=[ToolCall("echo", {"text": "hello"}, id="e1")]),
              Reply(text="It echoed.")]
    async with harness(script) as h:
        extra = EchoSource()
        h.agent.tool_sources.append(extra)
        assert "echo" in [t["function"]["name"] for t in h.agent.tools_for("main")]
        assert await h.agent.run_turn("main", "echo please") == "done"
        offered = [t["function"]["name"] for t in h.server.requests[0]["tools"]]
        assert "echo" in offered and offered.count("remember") == 1
        result = next(m for m in h.server.requests[1]["messages"] if m["role"] == "tool")
        assert result == {"role": "tool", "tool_call_id": "e1", "content": "echo: hello (e1)"}
        (ended,) = h.of(ev.ToolCallEnded)
        assert (ended.name, ended.result) == ("echo", "echo: hello (e1)")
    stored = h.reload()
    assert [m["content"] for m in stored.messages if m["role"] == "tool"] == ["echo: hello (e1)"]


async def test_abort_cancels_a_waiting_extra_tool_and_keeps_the_finished_one(harness):
    script = [Reply(tool_calls=[ToolCall("echo", {"text": "a"}, id="fast"),
                                ToolCall("wait_gate", {}, id="slow")])]
    async with harness(script) as h:
        extra = EchoSource()
        h.agent.tool_sources.append(extra)
        signal = AbortSignal()
        turn = asyncio.create_task(h.agent.run_turn("main", "go", abort=signal))
        await wait_until(lambda: len(extra.calls) == 2 and h.of(ev.ToolCallEnded))
        signal.fire("Esc during tools")
        assert await asyncio.wait_for(turn, HANG_S) == "aborted"
        assert [(a.stage, a.reason) for a in h.of(ev.Aborted)] == [("tools", "Esc during tools")]
    tools = {m["tool_call_id"]: m for m in h.reload().messages if m["role"] == "tool"}
    assert tools["fast"]["content"] == "echo: a (fast)"
    assert tools["slow"]["cancelled"] is True
    assert tools["slow"]["abort_reason"] == "Esc during tools"


async def test_batch_turns_failures_into_results_without_a_store(tmp_path):
    committed: list = []
    events: list = []
    batch = ToolBatch(
        key="k", sources=[EchoSource()], emit=events.append,
        commit=lambda mutations, records: committed.extend(mutations),
        make_context=lambda call_id: ToolContext("k", None, None, None, None, (tmp_path,),
                                                 call_id),
        fd_threshold_chars=10_000,
    )
    calls = [
        {"id": "1", "function": {"name": "explode", "arguments": "{}"}},
        {"id": "2", "function": {"name": "refuse", "arguments": "{}"}},
        {"id": "3", "function": {"name": "nope", "arguments": "{}"}},
        {"id": "4", "function": {"name": "echo", "arguments": "{not json"}},
    ]
    assert await batch.run(calls, AbortSignal()) == "ok"
    results = {m.tool_call_id: m.content for m in committed}
    assert results["1"] == "Error: the tool failed: boom"
    assert results["2"] == "Error: not today"
    assert results["3"].startswith("Error: unknown tool 'nope'")
    assert results["4"].startswith("Error: the arguments are not valid JSON")
    assert all(isinstance(m, ToolResultMutation) and m.error is True for m in committed)
    assert sorted(e.call_id for e in events if isinstance(e, ev.ToolCallError)) == list("1234")


async def test_an_abort_fired_before_the_batch_cancels_every_call(tmp_path):
    committed: list = []
    source = EchoSource()
    batch = ToolBatch(
        key="k", sources=[source], emit=lambda e: None,
        commit=lambda mutations, records: committed.extend(mutations),
        make_context=lambda call_id: ToolContext("k", None, None, None, None, (tmp_path,),
                                                 call_id),
        fd_threshold_chars=10_000,
    )
    signal = AbortSignal()
    signal.fire("stop")
    calls = [{"id": "w", "function": {"name": "wait_gate", "arguments": ""}}]
    assert await asyncio.wait_for(batch.run(calls, signal), HANG_S) == "aborted"
    assert committed == [ToolCancelledMutation("w", "wait_gate", "stop")]
    assert json.dumps(source.calls) == "[]"


async def test_a_failed_commit_still_leaves_a_result_for_every_call(tmp_path):
    committed: list = []
    source = EchoSource()

    def commit(mutations, records):
        if any(getattr(m, "content", "") == "echo: x (1)" for m in mutations):
            raise OSError(28, "No space left on device")
        committed.extend(mutations)

    batch = ToolBatch(
        key="k", sources=[source], emit=lambda e: None, commit=commit,
        make_context=lambda call_id: ToolContext("k", None, None, None, None, (tmp_path,),
                                                 call_id),
        fd_threshold_chars=10_000,
    )
    calls = [{"id": "0", "function": {"name": "refuse", "arguments": "{}"}},
             {"id": "1", "function": {"name": "echo", "arguments": '{"text": "x"}'}},
             {"id": "2", "function": {"name": "wait_gate", "arguments": "{}"}}]
    try:
        await asyncio.wait_for(batch.run(calls, AbortSignal()), HANG_S)
    except OSError as exc:
        assert exc.errno == 28  # the loop reports it as one error, not as a group
    else:
        raise AssertionError("the failed commit was swallowed")
    by_id = {m.tool_call_id: m for m in committed}
    assert sorted(by_id) == ["0", "1", "2"]  # every call has a result
    assert by_id["0"].content == "Error: not today"
    assert by_id["1"].content == ("Error: the tool ran, but its result could not be saved "
                                  "([Errno 28] No space left on device)")
    assert by_id["0"].error is True and by_id["1"].error is True
    assert isinstance(by_id["2"], ToolCancelledMutation)
    assert "saving another tool's result failed" in by_id["2"].abort_reason


async def test_a_failed_commit_over_http_leaves_a_valid_stored_transcript(harness):
    script = [Reply(tool_calls=[ToolCall("echo", {"text": "a"}, id="fast"),
                                ToolCall("wait_gate", {}, id="slow")]),
              Reply(text="Carrying on.")]
    async with harness(script) as h:
        h.agent.tool_sources.append(EchoSource())
        real_commit = h.agent._commit
        failed: list = []

        def commit(session, mutations, records=None):
            if not failed and any(getattr(m, "tool_call_id", "") == "fast" for m in mutations):
                failed.append(mutations)
                raise OSError(28, "No space left on device")
            real_commit(session, mutations, records)

        h.agent._commit = commit
        assert await asyncio.wait_for(h.agent.run_turn("main", "go"), HANG_S) == "error"
        (error,) = h.of(ev.ErrorEvent)
        assert error.kind == "internal" and "No space left" in error.message
        h.agent._commit = real_commit
        assert await h.agent.run_turn("main", "and now?") == "done"  # the strict server took it
    stored = h.reload().messages
    calls = [c["id"] for m in stored for c in m.get("tool_calls") or ()]
    results = {m["tool_call_id"]: m for m in stored if m["role"] == "tool"}
    assert calls == ["fast", "slow"] and sorted(results) == ["fast", "slow"]
    assert "could not be saved" in results["fast"]["content"]
    assert results["slow"]["cancelled"] is True
