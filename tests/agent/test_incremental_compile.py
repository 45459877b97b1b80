"""The loop's incremental compile equals compile_messages + count_messages, always.

It reuses the rendering of an unchanged transcript start between calls (a
performance measure); these tests drive a real TranscriptBuilder through
random patch sequences and compare every compile with the reference.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.agent.turn.compile_cache import IncrementalCompile
from selfref_tui.context.apply import TranscriptBuilder
from selfref_tui.context.compile import InvocationConfig, compile_messages
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    AssistantTruncatedMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    ExperienceForgetMutation,
    ExperienceRememberMutation,
    MultimodalToolResultMutation,
    ToolCancelledMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.context.tokens import TokenCounter

CONFIG = InvocationConfig(base_system_prompt="Base prompt.", refs_enabled=True)
IDS = ["c1", "c2", "c3", "c4"]
texts = st.sampled_from(["", "hi", "some text ü", "x" * 40, "<ref id=\"a\">b</ref>"])
ids = st.sampled_from(IDS)


def _call(call_id: str) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": "inspect_context", "arguments": "{}"}}


mutations = st.one_of(
    texts.map(lambda t: UserMessageMutation({"role": "user", "content": t})),
    st.builds(lambda t, c: AssistantMessageMutation(content=t or None,
                                                    tool_calls=[_call(i) for i in c]),
              texts, st.lists(ids, max_size=3, unique=True)),
    st.builds(ToolResultMutation, ids, texts),
    st.builds(ToolCancelledMutation, ids, st.just("inspect_context"), texts),
    st.builds(AssistantTruncatedMutation, texts, texts),
    texts.map(ExperienceRememberMutation),
    st.sampled_from(["e1", "e2"]).map(ExperienceForgetMutation),
    st.builds(lambda c, t: MultimodalToolResultMutation(
        c, "see", "{}", [{"role": "user", "content": [{"type": "text", "text": t}]}]), ids, texts),
    texts.map(lambda t: UserMessageMutation({"role": "system", "content": t})),
    texts.map(lambda t: UserMessageMutation({"role": "user", "content": t, "name": "bob"})),
    st.builds(lambda t: ContextSummaryMutation({"role": "user", "content": t,
                                                "compaction": {"goal": t}}), texts),
    st.builds(lambda t: ContextReplaceMutation([{"role": "system", "content": "brief"},
                                                {"role": "user", "content": t}]), texts),
)


def reference(base: list[dict], pending: list, counter: TokenCounter) -> tuple[list[dict], int]:
    messages = compile_messages(CONFIG, base, pending)
    return messages, counter.count_messages(messages)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(mutations, max_size=4), st.lists(mutations, max_size=2)),
                max_size=12),
       st.booleans())
def test_equals_compile_messages_after_every_batch(batches, exact_midway):
    counter = TokenCounter()
    ref_counter = TokenCounter()
    compiler = IncrementalCompile(CONFIG, counter)
    builder = TranscriptBuilder()
    for step, (committed, pending) in enumerate(batches):
        for mutation in committed:
            builder.apply(mutation)
        builder.flush_experiences()
        if exact_midway and step == len(batches) // 2:
            encode = lambda text: list(text.encode())  # noqa: E731 - a stand-in tokenizer
            counter.set_encoder(encode)
            ref_counter.set_encoder(encode)
        got = compiler.compile(builder.messages, pending)
        assert got == reference(builder.messages, pending, ref_counter)
        assert compiler.has_parts == any(isinstance(m.get("content"), list) for m in got[0])
        # A second compile of the same state (the cached path) agrees too.
        assert compiler.compile(builder.messages, pending) == got
        assert compiler.has_parts == any(isinstance(m.get("content"), list) for m in got[0])


def test_a_long_history_reuses_its_rendering_and_stays_exact():
    counter = TokenCounter(lambda text: text.split())
    compiler = IncrementalCompile(CONFIG, counter)
    builder = TranscriptBuilder()
    for i in range(300):
        builder.apply(UserMessageMutation({"role": "user", "content": f"question {i}"}))
        builder.apply(AssistantMessageMutation(content=f"answer {i}"))
    compiler.compile(builder.messages, [])
    for step in range(5):
        builder.apply(AssistantMessageMutation(content=None, tool_calls=[_call(f"s{step}")]))
        builder.apply(ToolResultMutation(f"s{step}", "result " * step))
        pending = [UserMessageMutation({"role": "user", "content": f"queued {step}"})]
        before = counter.misses
        got = compiler.compile(builder.messages, pending)
        assert got == reference(builder.messages, pending, TokenCounter(lambda t: t.split()))
        # Only the new tail was counted: the 600 old messages were not even looked up.
        assert counter.misses - before <= 3 and counter.hits < 700


def test_a_stored_message_changed_in_place_is_not_served_stale():
    compiler = IncrementalCompile(CONFIG, TokenCounter())
    base = [{"role": "system", "content": ""}, {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    compiler.compile(base, [])
    base[1]["content"] = "changed"
    assert compiler.compile(base, []) == reference(base, [], TokenCounter())


raw_messages = st.one_of(
    texts.map(lambda t: {"role": "user", "content": t}),
    st.builds(lambda t, c: {"role": "assistant", "content": t, "tool_calls": [_call(i) for i in c]},
              texts, st.lists(ids, min_size=1, max_size=3, unique=True)),
    st.builds(lambda c, t: {"role": "tool", "tool_call_id": c, "content": t}, ids, texts),
    texts.map(lambda t: {"role": "assistant", "content": t}),
    texts.map(lambda t: {"role": "system", "content": t}),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(raw_messages, max_size=8),
       st.lists(st.tuples(st.integers(0, 20), st.lists(raw_messages, max_size=3)), max_size=8))
def test_hand_built_lists_with_insertions_match_too(start, edits):
    """Lists not made by a TranscriptBuilder (open blocks, tool results inserted
    into an earlier block, stray system messages) still compile exactly."""
    compiler = IncrementalCompile(CONFIG, TokenCounter())
    base = list(start)
    assert compiler.compile(base, []) == reference(base, [], TokenCounter())
    for position, inserted in edits:
        at = min(position, len(base))
        base[at:at] = inserted
        assert compiler.compile(base, []) == reference(base, [], TokenCounter())


def test_a_result_inserted_into_a_closed_block_is_not_answered_twice():
    compiler = IncrementalCompile(CONFIG, TokenCounter())
    base = [{"role": "system", "content": ""}, {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [_call("c1")]},
            {"role": "user", "content": "next"}]
    compiler.compile(base, [])
    base.insert(3, {"role": "tool", "tool_call_id": "c1", "content": "late result"})
    got = compiler.compile(base, [])
    assert got == reference(base, [], TokenCounter())
    assert [m["content"] for m in got[0] if m["role"] == "tool"] == ["late result"]
