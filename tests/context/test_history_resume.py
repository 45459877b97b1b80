"""A fold resumed from ``resume_state`` numbers what follows exactly as the whole fold does."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.context.history import HistoryBuilder
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    RewindMutation,
    ToolResultMutation,
    UserMessageMutation,
)

from .strategies import mutations

CALL = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
CALL2 = {"id": "c2", "type": "function", "function": {"name": "read_fd", "arguments": "{}"}}


def fold_batches(builder: HistoryBuilder, batches, first: int = 0) -> HistoryBuilder:
    """Fold ``batches`` as the store does: a time per batch, experiences flushed at its end."""
    for i, batch in enumerate(batches, first):
        builder.stamp = f"t{i:03d}"
        for patch in batch:
            builder.apply(patch)
        builder.flush_experiences()
    return builder


def view(entry) -> tuple:
    return (entry.n, entry.role, entry.message, entry.time, entry.rewound, entry.compacted)


def resumed_from(builder: HistoryBuilder) -> HistoryBuilder:
    """Through JSON, as the search cache keeps the state."""
    return HistoryBuilder.resumed(json.loads(json.dumps(builder.resume_state())))


batches = st.lists(st.lists(mutations, min_size=1, max_size=4), max_size=8)
#: what came before may hold rewinds (a state with rewound messages, a block reopened)
rewinds = st.builds(RewindMutation, to_patch=st.integers(0, 24))
earlier = st.lists(st.lists(mutations | rewinds, min_size=1, max_size=4), max_size=10)


@settings(max_examples=500, deadline=None)
@given(earlier, batches)
def test_a_resumed_fold_numbers_the_appended_patches_as_the_whole_fold(before, after):
    whole = fold_batches(HistoryBuilder(), before + after)
    part = fold_batches(HistoryBuilder(), before)
    last = part.last_number
    resumed = fold_batches(resumed_from(part), after, len(before))
    assert resumed.last_number == whole.last_number
    # every message it holds (the open block's and the new ones) is the whole fold's
    held = resumed.entries()
    assert [view(e) for e in held] == [view(whole.entry(e.n)) for e in held]
    # and it holds every new one the whole fold shows
    assert [e.n for e in held if e.n > last] == [e.n for e in whole.entries() if e.n > last]
    assert resumed.history_length() == len(resumed.history())
    assert whole.history_length() == len(whole.history())
    # its state goes on as the whole fold's does
    assert resumed.resume_state() == json.loads(json.dumps(whole.resume_state()))
    # so a second resumption still agrees
    again = fold_batches(resumed_from(resumed), [[UserMessageMutation({"content": "x"})]])
    end = fold_batches(whole, [[UserMessageMutation({"content": "x"})]])
    assert view(again.entries()[-1]) == view(end.entries()[-1])


def test_the_open_block_is_carried_with_its_numbers_and_times():
    part = fold_batches(HistoryBuilder(), [
        [UserMessageMutation({"content": "go"})],
        [AssistantMessageMutation(content="", tool_calls=[CALL, CALL2])],
        [ToolResultMutation("c1", "one")],
    ])
    state = part.resume_state()
    assert [(n, time, m["role"]) for n, time, m in state["block"]] == [
        (2, "t001", "assistant"), (3, "t002", "tool")]
    assert state["unresolved"] == ["c2"] and state["answered"] == ["c1"]
    resumed = fold_batches(resumed_from(part), [[UserMessageMutation({"content": "next"})]], 3)
    # the unanswered call gets its "no result" reply before the person's message
    assert [(e.n, e.role, e.time) for e in resumed.entries()] == [
        (2, "assistant", "t001"), (3, "tool", "t002"), (4, "tool", "t003"),
        (5, "user", "t003")]
    assert resumed.entries()[2].message["tool_call_id"] == "c2"


def test_a_resumed_fold_refuses_a_rewind():
    part = fold_batches(HistoryBuilder(), [[UserMessageMutation({"content": "a"})]])
    with pytest.raises(ValueError, match="rewind"):
        resumed_from(part).apply(RewindMutation(to_patch=0))


@pytest.mark.parametrize("state", [
    {"last": -1, "system": False, "block": []},
    {"last": 1, "system": False, "block": [[2, "", {"role": "user"}]]},
    {"last": 2, "system": False, "block": [[1, "", {}], [1, "", {}]]},
    {"last": "1", "system": False, "block": []},
])
def test_a_state_that_does_not_hold_together_is_refused(state):
    with pytest.raises(ValueError):
        HistoryBuilder.resumed(state)
