"""The fast patch decoder agrees with the reference decoder, on good and bad input."""

from __future__ import annotations

import pytest

from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    AssistantTruncatedMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    ExperienceEditMutation,
    ExperienceForgetMutation,
    ExperienceRememberMutation,
    MultimodalToolResultMutation,
    MutationDecodeError,
    RewindMutation,
    ToolCancelledMutation,
    ToolResultMutation,
    TurnFailedMutation,
    UserMessageMutation,
    mutation_from_dict,
    mutation_to_dict,
)
from selfref_tui.selfref.decode import _SPECS, decode_mutation

ALL = [
    AssistantMessageMutation("hi", [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]),
    AssistantMessageMutation(None),
    ToolResultMutation("c", "out"),
    ToolResultMutation("c", "Error: 3 matches", 0.5, error=False),
    ToolResultMutation("c", "Error: gone", 0.5, error=True),
    MultimodalToolResultMutation("c", "shot", "{}", [{"role": "user", "content": []}]),
    UserMessageMutation({"role": "user", "content": "q"}),
    ContextReplaceMutation([{"role": "user", "content": "x"}]),
    ContextSummaryMutation({"role": "user", "content": "s"}, [{"text": "r"}]),
    ExperienceRememberMutation("t"),
    ExperienceRememberMutation("t", "agent", 12, "2026-01-02T03:04:05+00:00"),
    ExperienceForgetMutation("exp_001"),
    ExperienceEditMutation("exp_001", "better text", "2026-01-02T03:04:05+00:00"),
    AssistantTruncatedMutation("par", "esc"),
    ToolCancelledMutation("c", "ls", "esc"),
    TurnFailedMutation("the server refused"),
    RewindMutation(3, 7),
]


def test_every_patch_type_has_a_fast_path():
    assert {type(m).__name__ for m in ALL} == set(_SPECS)


@pytest.mark.parametrize("mutation", ALL, ids=lambda m: type(m).__name__)
def test_round_trip_matches_the_reference(mutation):
    data = mutation_to_dict(mutation)
    assert decode_mutation(data) == mutation_from_dict(data) == mutation


BAD = [
    None,
    [],
    {"type": ["unhashable"]},
    {"type": "Nope"},
    {"type": "ToolResultMutation", "tool_call_id": "c"},
    {"type": "ToolResultMutation", "tool_call_id": 1, "content": "x"},
    {"type": "ToolResultMutation", "tool_call_id": "c", "content": "x", "error": 1},
    {"type": "ToolResultMutation", "tool_call_id": "c", "content": "x", "error": "true"},
    {"type": "AssistantMessageMutation", "content": 3},
    {"type": "AssistantMessageMutation", "tool_calls": ["not a dict"]},
    {"type": "UserMessageMutation", "message": "text"},
    {"type": "ExperienceRememberMutation", "text": "t", "from_message": "12"},
    {"type": "ExperienceRememberMutation", "text": "t", "from_message": True},
    {"type": "ExperienceRememberMutation", "text": "t", "from_message": -1},
    {"type": "RewindMutation", "to_patch": -2},
    {"type": "ContextSummaryMutation", "summary_message": {}, "remember": "x"},
]


@pytest.mark.parametrize("data", BAD)
def test_bad_shapes_raise_like_the_reference(data):
    with pytest.raises(MutationDecodeError) as fast:
        decode_mutation(data)
    with pytest.raises(MutationDecodeError) as ref:
        mutation_from_dict(data)
    assert str(fast.value) == str(ref.value)
