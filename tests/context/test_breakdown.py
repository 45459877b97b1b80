"""Where a request's tokens go: the parts add up to the total, and each is the right part."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.context.apply import apply_mutations
from selfref_tui.context.breakdown import PARTS, auto_compact_line, scaled, token_breakdown
from selfref_tui.context.compile import InvocationConfig, render_provider_messages
from selfref_tui.context.images import url_tokens
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ExperienceRememberMutation,
    MultimodalToolResultMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.context.summary import Summary, summary_mutation
from selfref_tui.context.tokens import TokenCounter

CFG = InvocationConfig(base_system_prompt="You are a helpful agent.")
PNG = "data:image/png;base64,iVBORw0KGgo="
TOOLS = [{"type": "function", "function": {"name": "remember", "description": "Keep a fact.",
                                           "parameters": {"type": "object"}}}]
SUMMARY = Summary(goal="Ship the parser", instruction="small steps", discoveries=["d1"],
                  completed=["c1"], current_status="half done", likely_next_work="tests",
                  relevant_files_directories=["src/"])


def split(mutations, counter=None, factor=None):
    """The breakdown of the request ``mutations`` make, as the runtime counts it."""
    counter = counter or TokenCounter()
    stored = apply_mutations([], mutations)
    rendered = render_provider_messages(CFG, stored)
    message_tokens = counter.count_messages(rendered)
    tool_tokens = counter.count_tools(TOOLS)
    counted = message_tokens + tool_tokens
    total = round(counted * factor) if factor else counted
    return token_breakdown(CFG, stored, rendered, message_tokens, tool_tokens, total, counter)


def test_a_plain_conversation_is_system_prompt_tools_and_messages():
    result = split([UserMessageMutation({"role": "user", "content": "hello there"}),
                    AssistantMessageMutation("hi")])
    parts = result.parts
    assert list(parts) == list(PARTS)
    assert sum(parts.values()) == result.total
    assert parts["experiences"] == parts["summary"] == parts["images"] == 0
    assert parts["system_prompt"] > 0 and parts["tool_schemas"] > 0 and parts["messages"] > 0


def test_experiences_are_what_their_block_adds_to_the_system_prompt():
    counter = TokenCounter()
    plain = split([UserMessageMutation({"role": "user", "content": "hi"})], counter)
    fact = "The person prefers tabs over spaces in every file of the project."
    with_fact = split([ExperienceRememberMutation(fact),
                       UserMessageMutation({"role": "user", "content": "hi"})], counter)
    assert with_fact.parts["system_prompt"] == plain.parts["system_prompt"]
    assert with_fact.parts["experiences"] >= counter.count_text(fact)
    assert with_fact.parts["messages"] == plain.parts["messages"]
    assert sum(with_fact.parts.values()) == with_fact.total


def test_the_summary_is_counted_apart_even_when_a_note_is_merged_behind_it():
    counter = TokenCounter()
    alone = split([UserMessageMutation({"role": "user", "content": "long talk " * 50}),
                   summary_mutation(SUMMARY)], counter)
    assert alone.parts["summary"] > 0 and sum(alone.parts.values()) == alone.total
    merged = split([summary_mutation(SUMMARY),
                    UserMessageMutation({"role": "user", "content": "continue please"})], counter)
    assert merged.parts["summary"] == alone.parts["summary"]
    summary_text = summary_mutation(SUMMARY).summary_message["content"]
    assert merged.parts["summary"] == counter.count_message({"role": "user",
                                                             "content": summary_text})
    assert merged.parts["messages"] > 0 and sum(merged.parts.values()) == merged.total


def test_a_summary_merged_with_a_picture_is_still_the_summary():
    counter = TokenCounter()
    result = split([summary_mutation(SUMMARY), UserMessageMutation({"role": "user", "content": [
        {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": PNG}}]})],
        counter)
    summary_text = summary_mutation(SUMMARY).summary_message["content"]
    assert result.parts["summary"] == counter.count_message({"role": "user",
                                                             "content": summary_text})
    assert result.parts["images"] == url_tokens(PNG)
    assert sum(result.parts.values()) == result.total


def test_images_are_counted_per_picture():
    call = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
    result = split([
        UserMessageMutation({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": PNG}}]}),
        AssistantMessageMutation(None, [call]),
        MultimodalToolResultMutation("c1", "shot", "{}", [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": PNG}}]}]),
        AssistantMessageMutation("two pictures"),
    ])
    assert result.parts["images"] == 2 * url_tokens(PNG)
    assert result.parts["messages"] > 0
    assert sum(result.parts.values()) == result.total


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5_000), min_size=6, max_size=6),
       st.floats(0.25, 4.0, allow_nan=False))
def test_a_calibrated_total_is_split_exactly(values, factor):
    raw = dict(zip(PARTS, values, strict=True))
    total = round(sum(raw.values()) * factor)
    out = scaled(raw, total)
    assert sum(out.values()) == total
    assert all(v >= 0 for v in out.values())
    whole = sum(raw.values()) or 1
    for name in PARTS:  # each part is its share, give or take the rounding
        assert abs(out[name] - raw[name] * total / whole) < 1


def test_a_calibrated_request_sums_to_its_figure():
    calls = {"id": "c9", "type": "function", "function": {"name": "remember",
                                                           "arguments": '{"text": "x"}'}}
    result = split([ExperienceRememberMutation("fact one"), summary_mutation(SUMMARY),
                    UserMessageMutation({"role": "user", "content": "go on"}),
                    AssistantMessageMutation(None, [calls]), ToolResultMutation("c9", "ok")],
                   factor=1.37)
    assert sum(result.parts.values()) == result.total
    assert all(result.parts[name] > 0 for name in PARTS if name != "images")


def test_lines_name_every_part():
    lines = split([UserMessageMutation({"role": "user", "content": "hi"})]).lines()
    assert [line.split("  ")[0].strip() for line in lines] == [
        "system prompt", "experiences", "tool schemas", "summary", "messages", "images", "total"]


def test_what_auto_compaction_does_next():
    assert auto_compact_line(0.8, 32_000, 1_000) == "compacts at 80 %: 25,600 tokens (24,600 to go)"
    assert "reached (30,000); the model is asked" in auto_compact_line(0.8, 32_000, 30_000)
    assert "the model was asked" in auto_compact_line(0.8, 32_000, 30_000, asked=True)
    assert auto_compact_line(0, 32_000, 1_000) == "auto-compaction is off"
