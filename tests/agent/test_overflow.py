"""Counting all a request carries, and overflow: prevented, recovered from, or cut to fit.

The servers here are the in-package demo server with a script that behaves as
a small-window server does: it refuses a request above a size with OpenAI's
``context_length_exceeded`` 400 body, and calls ``compact`` when asked to.
"""

from __future__ import annotations

import asyncio
import json

from selfref_tui.agent import events as ev
from selfref_tui.agent.provider.errors import ProviderError
from selfref_tui.agent.turn.overflow import LEFT_OUT_MARKER, fit_request, is_context_overflow
from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.context.tokens import TokenCounter
from selfref_tui.demo.script import HttpError, Reply, ToolCall

_COMPACT_ARGS = {
    "goal": "Keep going", "instruction": "Be brief", "discoveries": ["d"], "completed": ["c"],
    "current_status": "long chat summarised", "likely_next_work": "answer",
    "relevant_files_directories": [],
}
LONG = "lorem ipsum dolor sit amet " * 40  # ~270 tokens a message


def _seed(h, turns: int) -> None:
    """A long stored conversation, written to the key's files before the agent runs."""
    memory = h.selfref.open("main")
    for i in range(turns):
        memory.commit([UserMessageMutation({"role": "user", "content": f"q{i} {LONG}"}),
                       AssistantMessageMutation(content=f"a{i} {LONG}")])


def _asks_to_compact(body: dict) -> bool:
    return any("call the `compact` tool" in str(m.get("content", "")).lower()
               for m in body["messages"][-2:])


def _small_server(limit_chars: int, says: int | None = None):
    """Refuses requests whose JSON is over ``limit_chars``; compacts when asked; else answers.

    Its error names a window of ``says`` tokens (about a quarter of the limit unless given).
    """
    def script(body: dict, index: int):
        size = len(json.dumps([body["messages"], body.get("tools")]))
        if size > limit_chars:
            window = says if says is not None else limit_chars // 4
            return HttpError(400, f"This model's maximum context length is {window} "
                             f"tokens. However, "
                             f"your messages resulted in {size // 4} tokens.",
                             code="context_length_exceeded", type="invalid_request_error")
        if _asks_to_compact(body):
            return Reply(tool_calls=[ToolCall("compact", _COMPACT_ARGS, id=f"k{index}")])
        return Reply(text="Fits now.")
    return script


def test_overflow_is_recognised_from_kind_or_words():
    assert is_context_overflow(ProviderError("context_overflow", "x"))
    assert is_context_overflow(ProviderError("bad_request", "maximum context length is 4096"))
    assert is_context_overflow(ProviderError("server", "Requested tokens exceed context window"))
    assert not is_context_overflow(ProviderError("bad_request", "unknown field 'foo'"))
    assert not is_context_overflow(ProviderError("auth", "context window"))


def test_fit_cuts_only_before_user_messages_and_marks_the_system_message():
    counter = TokenCounter()
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": LONG},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": LONG},
            {"role": "user", "content": "short"}, {"role": "assistant", "content": "ok"}]
    fitted = fit_request(msgs, counter.count_message, 0, 200)
    assert fitted is not None and fitted.left_out == 3
    assert [m["role"] for m in fitted.messages] == ["system", "user", "assistant"]
    assert LEFT_OUT_MARKER.format(count=3) in fitted.messages[0]["content"]
    assert msgs[0]["content"] == "sys"  # the input is not edited
    assert fit_request(msgs, counter.count_message, 0, 5) is None


async def test_tokens_count_messages_and_tool_schemas_then_calibrate(harness):
    async with harness([Reply(text="one"), Reply(text="two")]) as h:
        assert await h.agent.run_turn("main", "hi") == "done"
        body = h.server.requests[0]
        counter = TokenCounter()
        own = counter.count_messages(body["messages"]) + counter.count_tools(body["tools"])
        first = h.of(ev.ContextUsage)[0]
        assert first.estimated and first.tokens == own
        assert counter.count_tools(body["tools"]) > 1000  # the schemas are most of it
        assert await h.agent.run_turn("main", "again") == "done"
        second = h.of(ev.ContextUsage)[-1]
        assert not second.estimated  # calibrated by the server's prompt_tokens
        plan = h.agent.preview_request("main")
        assert [t["function"]["name"] for t in plan.tools] == [
            t["function"]["name"] for t in h.server.requests[1]["tools"]]


async def test_over_the_window_compaction_comes_first(harness):
    async with harness(_small_server(10**9), context_window=4000) as h:
        _seed(h, 8)
        assert await h.agent.run_turn("main", "and now?") == "done"
        first = h.server.requests[0]
        assert _asks_to_compact(first)
        assert "no longer fits your context window" in first["messages"][-1]["content"]
        notices = [n.message for n in h.of(ev.Notice)]
        assert any("no longer fits the model's window" in n for n in notices)
        assert len(h.of(ev.CompactionApplied)) == 1
        assert h.server.requests[-1]["messages"][-1]["content"] != ""
    stored = h.reload()
    assert stored.summary["goal"] == "Keep going"
    assert sum(1 for m in stored.history if m.get("archived")) >= 16  # kept, not lost


async def test_a_refusal_for_length_is_named_compacted_and_retried_once(harness):
    async with harness([], max_retries=0) as h:
        _seed(h, 8)
        plan = h.agent.preview_request("main")
        size = len(json.dumps([plan.messages, plan.tools]))
        h.server.script = _small_server(int(size * 0.9))
        assert await h.agent.run_turn("main", "and now?") == "done"
        said = [n.message for n in h.of(ev.Notice)]
        window = f"{int(size * 0.9) // 4:,}"
        assert any(n.startswith("the conversation no longer fits the model's window (")
                   and f"of {window} tokens) — compacting and retrying once" in n for n in said)
        assert h.of(ev.ErrorEvent) == []
        assert len(h.of(ev.CompactionApplied)) == 1
    assert not any(m.get("failed") for m in h.reload().messages)


async def test_refused_again_after_compaction_fails_cleanly(harness):
    async with harness(_small_server(100, says=100_000), max_retries=0) as h:
        _seed(h, 3)
        assert await h.agent.run_turn("main", "and now?") == "error"
        (error,) = h.of(ev.ErrorEvent)
        assert error.kind == "context_overflow"
        assert "no longer fits the model's window" in error.message
        assert "refused it again" in error.message
        assert [e.reason for e in h.of(ev.MessageFailed)] == [error.message]
        assert h.agent.failed_message("main") == "and now?"  # while its store is open
    stored = h.reload().messages
    # the person's message and the runtime's compaction note after it: both marked failed
    assert stored[-2]["content"] == "and now?" and stored[-2]["failed"] == error.message
    assert stored[-1]["runtime_note"] and stored[-1]["failed"] == error.message


async def test_a_last_message_too_long_for_any_request_is_named(harness):
    async with harness(_small_server(100), max_retries=0) as h:
        assert await h.agent.run_turn("main", "and now?") == "error"
        (error,) = h.of(ev.ErrorEvent)
        assert error.kind == "context_overflow" and "not even its last message" in error.message


async def test_what_still_does_not_fit_is_left_out_of_the_request_only(harness):
    async with harness([Reply(text="Short answer.")], context_window=2600) as h:
        h.agent.compaction.ratio = 0  # no reminders: this is about fitting
        _seed(h, 10)
        plan = h.agent.preview_request("main")
        assert plan.left_out > 0 and plan.fits
        assert LEFT_OUT_MARKER.format(count=plan.left_out) in plan.messages[0]["content"]
        # the marked system message's count is kept: counting the request again encodes
        # nothing (the step's fixed part, the calibration count it)
        misses = h.agent.tokens.misses
        assert h.agent.tokens.count_message(plan.messages[0]) == TokenCounter().count_message(
            plan.messages[0])
        assert h.agent.tokens.misses == misses
        h.agent._left_out.clear()
        assert await h.agent.run_turn("main", "last question") == "done"
        sent = h.server.requests[0]["messages"]
        assert "are left out of this request" in sent[0]["content"]
        assert sent[1]["role"] == "user"
        # the question, then the note asking for a compaction (one message on servers that
        # merge user runs)
        tail = "\n".join(m["content"] for m in sent[-2:] if m["role"] == "user")
        assert tail.index("last question") < tail.index("no longer fits your context window")
        assert any("left out of this request" in n.message for n in h.of(ev.Notice))
    stored = h.reload().messages
    assert len([m for m in stored if m["role"] == "user"]) == 12  # every message still stored


async def test_calibration_recounts_the_reported_request_when_counting_changes(harness):
    from selfref_tui.selfref.encodings import load_encoder

    async with harness([Reply(text="one", usage={"prompt_tokens": 3000, "completion_tokens": 1,
                                                  "total_tokens": 3001})]) as h:
        h.agent._encoder_task = asyncio.get_running_loop().create_future()  # stay on estimates
        assert await h.agent.run_turn("main", "hi") == "done"
        body = h.server.requests[0]
        estimate = TokenCounter()
        counted = estimate.count_messages(body["messages"]) + estimate.count_tools(body["tools"])
        assert h.agent.calibration.factor == 3000 / counted
        h.agent.tokens.set_encoder(load_encoder("gpt-4o-mini"))
        h.agent.preview_request("main")
        exact = TokenCounter(load_encoder("gpt-4o-mini"))
        counted = exact.count_messages(body["messages"]) + exact.count_tools(body["tools"])
        assert h.agent.calibration.factor == 3000 / counted  # same request, counted exactly


async def test_calibration_counts_the_request_again_when_the_encoding_arrives_during_it(harness):
    """The plan's own count is an estimate then: the factor compares the server's figure
    with the exact count of the same request, never with the estimate."""
    from selfref_tui.selfref.encodings import load_encoder

    encode = load_encoder("gpt-4o-mini")
    agents = []

    def script(body: dict, index: int) -> Reply:
        agents[0].tokens.set_encoder(encode)  # the encoding loads while the request runs
        return Reply(text="one", usage={"prompt_tokens": 3000, "completion_tokens": 1,
                                        "total_tokens": 3001})

    async with harness(script) as h:
        agents.append(h.agent)
        h.agent._encoder_task = asyncio.get_running_loop().create_future()  # no load of its own
        assert await h.agent.run_turn("main", "hi") == "done"
        body = h.server.requests[0]
        exact, estimate = TokenCounter(encode), TokenCounter()
        counted = exact.count_messages(body["messages"]) + exact.count_tools(body["tools"])
        estimated = (estimate.count_messages(body["messages"])
                     + estimate.count_tools(body["tools"]))
        assert counted != estimated
        assert h.agent.calibration.factor == 3000 / counted


def test_fitting_behind_a_long_system_message_encodes_it_once_and_fits_the_same():
    from selfref_tui.selfref.encodings import load_encoder

    encode = load_encoder("gpt-4o")
    encoded: list[int] = []

    def counting(text: str) -> list[int]:
        encoded.append(len(text))
        return encode(text)

    system = {"role": "system", "content": "An experience worth keeping, in words. " * 2000}
    body = []
    for i in range(300):
        body += [{"role": "user", "content": f"q{i} {LONG}"},
                 {"role": "assistant", "content": f"a{i} {LONG}"}]
    msgs = [system, *body]
    plain = TokenCounter(encode)
    expected = fit_request(msgs, plain.count_message, 10, 40_000)
    counter = TokenCounter(counting)
    fitted = fit_request(msgs, counter.count_message, 10, 40_000,
                         count_appended=counter.count_appended)
    assert expected is not None and fitted is not None and fitted.left_out > 400
    assert (fitted.messages, fitted.left_out, fitted.tokens) == (
        expected.messages, expected.left_out, expected.tokens)
    assert fitted.system_tokens == plain.count_message(fitted.messages[0])
    # every message once, then per marker tried only the system message's last stretch
    # (encoding it whole for each would be ~17 MB here)
    tried = fitted.left_out // 2
    whole = len(system["content"]) + sum(len(m["content"]) for m in body)
    assert sum(encoded) < whole + tried * (16_384 + 300) < tried * len(system["content"])
