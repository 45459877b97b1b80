"""The person's numbered history and the rewind fold (pure: no store, no files)."""

from __future__ import annotations

import copy

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from selfref_tui.context.apply import TranscriptBuilder, apply_mutations
from selfref_tui.context.experiences import experiences_of
from selfref_tui.context.history import HistoryBuilder
from selfref_tui.context.mutations import (
    EXPERIENCE_MUTATIONS,
    AssistantMessageMutation,
    ContextSummaryMutation,
    ExperienceRememberMutation,
    MultimodalToolResultMutation,
    RewindMutation,
    ToolResultMutation,
    UserMessageMutation,
    mutation_from_dict,
    mutation_to_dict,
)

from .invariants import assert_valid
from .strategies import mutations


def user(text: str, **extra) -> UserMessageMutation:
    return UserMessageMutation({"role": "user", "content": text, **extra})


def said(builder: HistoryBuilder) -> list:
    """The working transcript's contents, the system message left out."""
    return [m.get("content") for m in builder.messages if m.get("role") != "system"]


def fold(patches) -> HistoryBuilder:
    builder = HistoryBuilder()
    for patch in patches:
        builder.apply(patch)
    builder.flush_experiences()
    return builder


CALL = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
CALL2 = {"id": "c2", "type": "function", "function": {"name": "read_fd", "arguments": "{}"}}


def test_numbers_follow_what_the_person_reads():
    b = fold([
        user("q1"),
        AssistantMessageMutation(content="thinking", tool_calls=[CALL, CALL2]),
        ToolResultMutation("c2", "page"),
        MultimodalToolResultMutation("c1", "shot", "{}", [{"content": "an image"}]),
        user("reminder", runtime_note="auto_compact"),
        AssistantMessageMutation(content="a1"),
    ])
    got = [(e.n, e.role, e.message.get("content")) for e in b.entries()]
    assert got == [
        (1, "user", "q1"),
        (2, "assistant", "thinking"),  # one entry with its calls
        (3, "tool", "page"),
        (4, "assistant", "I called shot({}); its result is in the next message."),
        (5, "user", "an image"),  # a multimodal result's messages are numbered
        (6, "assistant", "a1"),  # the runtime note is not
    ]


def test_a_summary_and_its_marker_have_no_number_and_compacted_messages_keep_theirs():
    b = HistoryBuilder(lambda m: b.add_marker({"role": "compaction"}))
    for patch in [user("q1"), AssistantMessageMutation(content="a1"),
                  ContextSummaryMutation({"role": "user", "content": "S",
                                          "compaction": {"goal": "g"}}),
                  user("q2")]:
        b.apply(patch)
    assert [(e.n, e.compacted) for e in b.entries()] == [(1, True), (2, True), (3, False)]
    assert [m.get("role") for m in b.history()] == ["user", "assistant", "compaction", "user",
                                                    "user"]
    assert b.history()[0]["archived"] is True


def test_rewind_goes_back_to_before_a_patch_and_keeps_the_rest_readable():
    patches = [user("q1"), AssistantMessageMutation(content="a1"),
               ExperienceRememberMutation("likes tea"),
               user("q2"), AssistantMessageMutation(content="a2")]
    b = fold(patches)
    assert [e["text"] for e in experiences_of(b.messages[0])] == ["likes tea"]
    b.apply(RewindMutation(to_patch=b.patch_of(3), first_message=3))
    assert said(b) == ["q1", "a1"]
    assert [(e.n, e.rewound) for e in b.entries()] == [
        (1, False), (2, False), (3, True), (4, True)]
    assert [e["text"] for e in experiences_of(b.messages[0])] == ["likes tea"]  # before q2
    b.apply(user("q3"))
    assert [(e.n, e.message["content"]) for e in b.entries()][-1] == (5, "q3")
    assert [m.get("rewound", False) for m in b.history()] == [False, False, True, True, False]


def test_rewinding_past_a_remember_takes_it_away_and_its_id_is_never_given_again():
    b = fold([user("q1"), ExperienceRememberMutation("one"), AssistantMessageMutation("a1"),
              user("q2")])
    b.apply(RewindMutation(to_patch=1, first_message=2))
    assert experiences_of(b.messages[0]) == []
    b.apply(ExperienceRememberMutation("two"))
    b.flush_experiences()
    assert [e["id"] for e in experiences_of(b.messages[0])] == ["exp_002"]


def test_undoing_a_rewind_brings_the_tail_back():
    patches = [user("q1"), AssistantMessageMutation("a1"), user("q2"),
               AssistantMessageMutation("a2")]
    b = fold(patches)
    before = copy.deepcopy(b.messages)
    b.apply(RewindMutation(to_patch=2, first_message=3))
    rewind_at = b.patch_count - 1
    b.apply(RewindMutation(to_patch=rewind_at))
    assert b.messages == before
    assert not any(e.rewound for e in b.entries())


def test_rewinding_into_a_rewound_stretch_and_past_a_compaction():
    b = HistoryBuilder(lambda m: b.add_marker({"role": "compaction"}))
    for patch in [user("q1"), AssistantMessageMutation("a1"),
                  ContextSummaryMutation({"role": "user", "content": "S", "compaction": {}}),
                  user("q2"), AssistantMessageMutation("a2"), user("q3")]:
        b.apply(patch)
    b.apply(RewindMutation(to_patch=b.patch_of(3)))  # before q2
    assert said(b) == ["S"]
    b.apply(RewindMutation(to_patch=b.patch_of(4)))  # before a2: inside the rewound stretch
    assert said(b) == ["S", "q2"]
    assert [(e.n, e.compacted, e.rewound) for e in b.entries()] == [
        (1, True, False), (2, True, False), (3, False, False), (4, False, True),
        (5, False, True)]
    b.apply(RewindMutation(to_patch=b.patch_of(2)))  # before a1: the compaction is undone
    assert said(b) == ["q1"]
    assert [(e.compacted, e.rewound) for e in b.entries()][:2] == [(False, False),
                                                                    (False, True)]
    assert [m.get("role") for m in b.history() if m.get("rewound")][1] == "compaction"


def test_a_rewind_to_a_patch_the_log_does_not_have_changes_nothing():
    b = fold([user("q1"), RewindMutation(to_patch=7)])
    assert said(b) == ["q1"]


def test_the_rewind_patch_round_trips_and_refuses_wrong_shapes():
    patch = RewindMutation(to_patch=3, first_message=4)
    assert mutation_from_dict(mutation_to_dict(patch)) == patch
    for bad in (-1, True, "3", 2.0):
        try:
            mutation_from_dict({"type": "RewindMutation", "to_patch": bad})
        except ValueError:
            continue
        raise AssertionError(f"accepted to_patch={bad!r}")


def test_apply_mutations_folds_a_whole_log_with_rewinds():
    patches = [user("q1"), AssistantMessageMutation("a1"), user("q2"),
               RewindMutation(to_patch=2)]
    assert [m["content"] for m in apply_mutations([], patches)] == ["q1", "a1"]


def _plain(messages: list[dict]) -> list[dict]:
    """Messages with the experience counter left out (a rewind keeps it at its highest,
    on an empty system message if need be: rendered exactly as none)."""
    out = [{k: v for k, v in m.items() if k != "exp_seq"} for m in messages]
    if out and out[0] == {"role": "system", "content": ""}:
        out = out[1:]
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(mutations, min_size=1, max_size=14), st.data())
def test_a_rewind_equals_the_fold_of_the_prefix(seq, data):
    """Rewinding to before patch k gives exactly the fold of patches[:k]; undoing it,
    the fold of all of them; a rewind never leaves an invalid transcript.

    k is a patch a person can rewind to: one that brings a message (a remember
    batched with others is folded at its batch's end, so it is never a target;
    rewound to by hand, its replay gets a new id: ids are never reused).
    """
    targets = [i for i, m in enumerate(seq) if not isinstance(m, EXPERIENCE_MUTATIONS)]
    assume(targets)
    builder = fold(seq)
    whole = copy.deepcopy(builder.messages)
    k = data.draw(st.sampled_from(targets))
    builder.apply(RewindMutation(to_patch=k))
    builder.flush_experiences()  # as the store does at the end of every batch
    assert_valid(builder.messages)
    prefix = TranscriptBuilder()
    for m in seq[:k]:
        prefix.apply(m)
    prefix.flush_experiences()
    assert _plain(builder.messages) == _plain(prefix.messages)
    builder.apply(RewindMutation(to_patch=len(seq)))  # undo the rewind
    builder.flush_experiences()
    assert _plain(builder.messages) == _plain(whole)
    # and a second rewind, anywhere, still equals its prefix
    j = data.draw(st.sampled_from(targets))
    builder.apply(RewindMutation(to_patch=j))
    builder.flush_experiences()
    again = TranscriptBuilder()
    for m in seq[:j]:
        again.apply(m)
    again.flush_experiences()
    assert _plain(builder.messages) == _plain(again.messages)
    numbers = [e.n for e in builder.entries()]
    assert numbers == sorted(set(numbers))


@settings(max_examples=200, deadline=None)
@given(st.lists(mutations, min_size=1, max_size=10), st.data())
def test_any_walk_of_rewinds_lands_on_the_state_it_names(seq, data):
    """Rewinds back and forth (into rewound stretches, onto earlier rewinds: undos and
    redos) each give exactly the fold of the log before the patch they name."""
    log = list(seq)
    builder = fold(log)
    for _ in range(data.draw(st.integers(1, 6))):
        targets = [i for i, m in enumerate(log) if not isinstance(m, EXPERIENCE_MUTATIONS)]
        assume(targets)
        target = data.draw(st.sampled_from(targets))
        if builder.is_at(target):  # a rewind there would change nothing: the state is it
            assert _plain(builder.messages) == _plain(fold(log[:target]).messages)
        log.append(RewindMutation(to_patch=target))
        builder.apply(log[-1])
        builder.flush_experiences()
        assert builder.is_at(target)
        assert_valid(builder.messages)
        assert _plain(builder.messages) == _plain(fold(log[:target]).messages)
        assert _plain(builder.messages) == _plain(fold(log).messages)  # a replay agrees
        # what the loop reads at every call instead of building the history
        assert builder.history_length() == len(builder.history())
        log += data.draw(st.lists(mutations, max_size=3))
        for m in log[builder.patch_count:]:
            builder.apply(m)
        builder.flush_experiences()
