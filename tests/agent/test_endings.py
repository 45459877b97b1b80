"""Every ending is named, and a failed turn leaves no debris (real HTTP, real store)."""

from __future__ import annotations

import itertools

from selfref_tui.agent import events as ev
from selfref_tui.agent.turn.llm_step import CUT_OFF_REASON, FILTERED_REASON
from selfref_tui.agent.turn.router import AgentInputRouter
from selfref_tui.demo.script import HttpError, Reply, ToolCall


def _users(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


def _runs_of_users(messages: list[dict]) -> int:
    roles = [m["role"] for m in messages]
    return sum(1 for a, b in itertools.pairwise(roles) if a == b == "user")


async def test_length_keeps_the_answer_marked_and_runs_no_tools(harness):
    script = [Reply(text="The first half of a long", finish_reason="length",
                    tool_calls=[ToolCall("remember", {"text": "never"})])]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "write a lot") == "cut_off"
        (notice,) = h.of(ev.Notice)
        assert notice.severity == "warning" and "cut off" in notice.message
        assert h.of(ev.LLMCallEnded)[0].finish_reason == "length"
        assert h.of(ev.ToolCallEnded) == [] and len(h.server.requests) == 1
    last = h.reload().messages[-1]
    assert last["content"] == "The first half of a long" and last["truncated"] is True
    assert last["abort_reason"] == CUT_OFF_REASON
    assert h.reload().experiences == []


async def test_content_filter_is_named_and_stored(harness):
    async with harness([Reply(text="Part", finish_reason="content_filter"),
                        Reply(text="Fine.")]) as h:
        assert await h.agent.run_turn("main", "hmm") == "filtered"
        assert "provider's filter" in h.of(ev.Notice)[0].message
        assert await h.agent.run_turn("main", "next") == "done"
        sent = h.server.requests[1]["messages"]
        assert sent[2]["role"] == "assistant" and FILTERED_REASON in sent[2]["content"]
    assert h.reload().messages[1]["abort_reason"] == FILTERED_REASON


async def test_an_empty_answer_is_a_notice_not_a_stored_message(harness):
    async with harness([Reply(text=""), Reply(text="Now with words.")]) as h:
        assert await h.agent.run_turn("main", "say something") == "empty"
        assert "empty answer" in h.of(ev.Notice)[0].message
        assert [e.reason for e in h.of(ev.MessageFailed)] == ["empty answer"]
        stored = h.reload().messages
        assert [m["role"] for m in stored] == ["user"] and stored[0]["failed"]
        router = AgentInputRouter(h.agent)
        assert router.retry() == "started"
        await router.wait_idle()
        assert router.outcomes == ["done"]
        assert _users(h.server.requests[1]["messages"]) == ["say something"]
    stored = h.reload().messages
    assert [(m["role"], m.get("failed")) for m in stored] == [("user", None),
                                                                   ("assistant", None)]


async def test_a_failed_turn_is_marked_and_not_sent_before_a_new_message(harness):
    script = [HttpError(500, "the model crashed"), HttpError(500, "still down"),
              Reply(text="Answer to the rephrased question.")]
    async with harness(script, max_retries=0) as h:
        router = AgentInputRouter(h.agent)
        router.submit("first try")
        await router.wait_idle()
        router.submit("first try")  # retyped instead of /retry
        await router.wait_idle()
        assert [e.reason for e in h.of(ev.MessageFailed)] == [
            h.of(ev.ErrorEvent)[0].message, h.of(ev.ErrorEvent)[1].message]
        router.submit("rephrased")
        await router.wait_idle()
        assert router.outcomes == ["error", "error", "done"]
        sent = h.server.requests[2]["messages"]
        assert _users(sent) == ["rephrased"] and _runs_of_users(sent) == 0
        assert router.retry() == "nothing"
    stored = h.reload().messages
    assert [(m["content"], bool(m.get("failed"))) for m in stored if m["role"] == "user"] == [
        ("first try", True), ("first try", True), ("rephrased", False)]


async def test_retry_sends_the_failed_message_once(harness):
    script = [HttpError(500, "down"), Reply(text="Back.")]
    async with harness(script, max_retries=0) as h:
        router = AgentInputRouter(h.agent)
        router.submit("hello?")
        await router.wait_idle()
        assert h.agent.failed_message("main") == "hello?"
        assert router.retry() == "started"
        assert router.retry() == "busy"
        await router.wait_idle()
        assert router.outcomes == ["error", "done"]
        assert len(h.of(ev.MessageRetried)) == 1
        assert _users(h.server.requests[1]["messages"]) == ["hello?"]
        assert h.agent.failed_message("main") is None
    stored = h.reload().messages
    assert [(m["role"], m.get("content")) for m in stored] == [
        ("user", "hello?"), ("assistant", "Back.")]
    assert "failed" not in stored[0]


async def test_a_failure_after_tool_results_marks_nothing(harness):
    script = [Reply(tool_calls=[ToolCall("inspect_context", {}, id="i")]), HttpError(500, "x")]
    async with harness(script, max_retries=0) as h:
        assert await h.agent.run_turn("main", "look") == "error"
        assert h.of(ev.MessageFailed) == []
    assert not any(m.get("failed") for m in h.reload().messages)
