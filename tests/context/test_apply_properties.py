"""Property tests: any patch sequence keeps the transcript valid, and patches round-trip."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.context.apply import TranscriptBuilder, apply_mutations
from selfref_tui.context.mutations import (
    MUTATION_TYPES,
    MutationDecodeError,
    mutation_from_dict,
    mutation_to_dict,
)

from .invariants import assert_valid
from .strategies import mutations


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(mutations, max_size=6), max_size=8))
def test_every_apply_keeps_the_transcript_valid(batches):
    messages: list[dict] = []
    for batch in batches:
        snapshot = copy.deepcopy(messages)
        for m in batch:
            # after EVERY single apply, and also across apply calls (open blocks resumed)
            single = apply_mutations(messages, [m])
            assert_valid(single)
        out = apply_mutations(messages, batch)
        assert messages == snapshot  # pure
        assert_valid(out)
        messages = out


@settings(max_examples=200, deadline=None)
@given(st.lists(mutations, max_size=20))
def test_one_by_one_equals_all_at_once_without_experience_patches(seq):
    """Applying patch by patch (as the store folds) matches one apply, experiences aside."""
    plain = [
        m
        for m in seq
        if type(m).__name__ not in ("ExperienceRememberMutation", "ExperienceForgetMutation")
    ]
    stepwise: list[dict] = []
    for m in plain:
        stepwise = apply_mutations(stepwise, [m])
        assert_valid(stepwise)
    assert stepwise == apply_mutations([], plain)


@settings(max_examples=200, deadline=None)
@given(st.lists(mutations, max_size=20))
def test_builder_fold_matches_apply(seq):
    builder = TranscriptBuilder()
    for m in seq:
        builder.apply(m)
    builder.flush_experiences()
    assert builder.messages == apply_mutations([], seq)


@settings(max_examples=300, deadline=None)
@given(mutations)
def test_mutation_dict_round_trip(m):
    data = mutation_to_dict(m)
    assert data["type"] == type(m).__name__
    again = mutation_from_dict(json.loads(json.dumps(data)))
    assert again == m
    assert type(again) is type(m)


@pytest.mark.parametrize(
    "data",
    [
        [],
        "AssistantMessageMutation",
        {"type": "NoSuchMutation"},
        {"type": 3},
        {},
        {"type": "ToolResultMutation", "tool_call_id": "a"},  # content missing
        {"type": "ToolResultMutation", "tool_call_id": 1, "content": "x"},
        {"type": "AssistantMessageMutation", "content": 5},
        {"type": "AssistantMessageMutation", "tool_calls": "c1"},
        {"type": "AssistantMessageMutation", "tool_calls": ["c1"]},
        {"type": "UserMessageMutation", "message": "hi"},
        {"type": "ContextReplaceMutation", "messages": {"role": "user"}},
        {"type": "ContextSummaryMutation", "summary_message": [], "remember": []},
        {"type": "ContextSummaryMutation", "summary_message": {}, "remember": ["text"]},
        {"type": "ExperienceRememberMutation", "text": None},
        {"type": "ExperienceForgetMutation", "experience_id": 1},
        {"type": "AssistantTruncatedMutation", "partial_content": "x", "abort_reason": 0},
        {"type": "ToolCancelledMutation", "tool_call_id": "a", "tool_name": ["x"]},
        {
            "type": "MultimodalToolResultMutation",
            "tool_call_id": "a",
            "tool_name": "t",
            "arguments": {},
            "user_messages": [],
        },
    ],
)
def test_decode_rejects_wrong_shapes(data):
    with pytest.raises(MutationDecodeError):
        mutation_from_dict(data)


def test_decode_ignores_unknown_extra_keys_and_knows_all_thirteen_types():
    # the ten of the patch protocol + TurnFailed, Rewind and ExperienceEdit mutations
    assert len(MUTATION_TYPES) == 13
    m = mutation_from_dict({"type": "ExperienceRememberMutation", "text": "t", "extra": 1})
    assert mutation_to_dict(m) == {"type": "ExperienceRememberMutation", "text": "t",
                                   "source": "", "from_message": 0, "created": ""}


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "u"}, {"role": "system", "content": "s"}],
        [{"role": "tool", "tool_call_id": "a", "content": "x"}],
        [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
            {"role": "user", "content": "too early"},
        ],
        [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "2"},
        ],
        [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
            {"role": "tool", "tool_call_id": "b", "content": "1"},
        ],
    ],
)
def test_checker_catches_broken_transcripts(messages):
    from .invariants import transcript_problems

    assert transcript_problems(messages)
