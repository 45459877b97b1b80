"""apply_mutations: one test per patch type, the experience ordering rule, purity."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from selfref_tui.context.apply import MULTIMODAL_MARK, NO_RESULT_TEXT, apply_mutations
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

from .invariants import assert_valid

SYSTEM = {"role": "system", "content": ""}
USER = {"role": "user", "content": "hello"}


def call(call_id: str, name: str = "read_fd", arguments: str = "{}") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def exps(messages: list[dict]) -> list[dict]:
    return (
        messages[0].get("experiences", []) if messages and messages[0]["role"] == "system" else []
    )


# ------------------------------------------------------------------ assistant


def test_assistant_text_has_no_tool_calls_key():
    out = apply_mutations([SYSTEM, USER], [AssistantMessageMutation(content="hi there")])
    assert out[-1] == {"role": "assistant", "content": "hi there"}


def test_assistant_with_calls_keeps_them_and_reasoning():
    m = AssistantMessageMutation(
        content=None, tool_calls=[call("c1")], reasoning_details=[{"type": "text", "text": "hmm"}]
    )
    out = apply_mutations([USER], [m])
    assert out[-1]["tool_calls"] == [call("c1")]
    assert out[-1]["content"] is None
    assert out[-1]["reasoning_details"] == [{"type": "text", "text": "hmm"}]


def test_assistant_tool_call_arguments_are_normalised_to_strings():
    raw = {"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}
    out = apply_mutations([], [AssistantMessageMutation(tool_calls=[raw])])
    assert out[-1]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]


def test_assistant_closes_previous_open_block_with_no_result_reply():
    out = apply_mutations(
        [USER],
        [
            AssistantMessageMutation(tool_calls=[call("c1")]),
            AssistantMessageMutation(content="done"),
        ],
    )
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "assistant"]
    assert out[2]["tool_call_id"] == "c1" and out[2]["content"] == NO_RESULT_TEXT
    assert_valid(out)


# ---------------------------------------------------------------- tool result


def test_tool_result_linked_by_call_id():
    out = apply_mutations(
        [USER],
        [
            AssistantMessageMutation(tool_calls=[call("a"), call("b")]),
            ToolResultMutation("b", "B"),
            ToolResultMutation("a", "A"),
        ],
    )
    assert out[-2:] == [
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
    ]
    assert_valid(out)


def test_tool_result_without_call_gets_a_call_added():
    out = apply_mutations([USER], [ToolResultMutation("ghost", "x")])
    assert out[1]["role"] == "assistant" and [c["id"] for c in out[1]["tool_calls"]] == ["ghost"]
    assert out[2] == {"role": "tool", "tool_call_id": "ghost", "content": "x"}
    assert_valid(out)


def test_second_result_for_same_call_is_dropped():
    out = apply_mutations(
        [USER],
        [
            AssistantMessageMutation(tool_calls=[call("a"), call("b")]),
            ToolResultMutation("a", "first"),
            ToolResultMutation("a", "second"),
        ],
    )
    results = [m for m in out if m["role"] == "tool"]
    assert results == [{"role": "tool", "tool_call_id": "a", "content": "first"}]


# ----------------------------------------------------------------- multimodal


def test_multimodal_result_replaces_call_with_note_and_user_messages():
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]}
    out = apply_mutations(
        [USER],
        [
            AssistantMessageMutation(
                content="looking", tool_calls=[call("a"), call("img", "shot")]
            ),
            MultimodalToolResultMutation("img", "shot", '{"w": 1}', [image]),
            ToolResultMutation("a", "A"),
        ],
    )
    assistant = out[1]
    assert [c["id"] for c in assistant["tool_calls"]] == ["a"]
    assert out[2] == {"role": "tool", "tool_call_id": "a", "content": "A"}
    note, carried = out[3], out[4]
    assert (
        note["role"] == "assistant" and "shot" in note["content"] and note[MULTIMODAL_MARK] == "img"
    )
    assert carried["role"] == "user" and carried["content"] == image["content"]
    assert carried[MULTIMODAL_MARK] == "img"
    assert_valid(out)


def test_multimodal_for_only_call_drops_empty_assistant():
    out = apply_mutations(
        [USER],
        [
            AssistantMessageMutation(tool_calls=[call("img", "shot")]),
            MultimodalToolResultMutation("img", "shot", "{}", [{"content": "pic"}]),
        ],
    )
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert "tool_calls" not in out[1]
    assert out[2]["content"] == "pic"
    assert_valid(out)


def test_multimodal_for_only_call_keeps_assistant_text():
    out = apply_mutations(
        [USER],
        [
            AssistantMessageMutation(content="let me look", tool_calls=[call("img", "shot")]),
            MultimodalToolResultMutation("img", "shot", "{}", [{"content": "pic"}]),
        ],
    )
    assert out[1] == {"role": "assistant", "content": "let me look"}
    assert_valid(out)


# ---------------------------------------------------------------- user / replace


def test_user_message_appended_with_role_default():
    out = apply_mutations([SYSTEM], [UserMessageMutation({"content": "typed mid-turn"})])
    assert out[-1] == {"role": "user", "content": "typed mid-turn"}


def test_user_message_mid_block_closes_block_first():
    out = apply_mutations(
        [USER],
        [
            AssistantMessageMutation(tool_calls=[call("a")]),
            UserMessageMutation({"content": "stop"}),
        ],
    )
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "user"]
    assert out[2]["cancelled"] is True
    assert_valid(out)


def test_replace_discards_and_takes_given_list():
    new = [{"role": "system", "content": "s"}, {"role": "user", "content": "fresh"}]
    out = apply_mutations(
        [SYSTEM, USER, {"role": "assistant", "content": "x"}], [ContextReplaceMutation(new)]
    )
    assert out == new
    assert out[0] is not new[0]  # copies, not the caller's dicts


def test_replace_repairs_an_invalid_list():
    bad = [
        {"role": "user", "content": "u"},
        {"role": "system", "content": "late"},
        {"role": "tool", "tool_call_id": "zz", "content": "orphan"},
    ]
    out = apply_mutations([], [ContextReplaceMutation(bad)])
    assert out[0] == {"role": "system", "content": "late"}
    assert_valid(out)


# -------------------------------------------------------------------- summary


def test_summary_keeps_system_and_replaces_working_transcript():
    system = {
        "role": "system",
        "content": "",
        "experiences": [{"id": "exp_001", "text": "x"}],
        "exp_seq": 1,
    }
    summary = {"role": "user", "content": "## Goal\nship", "compaction": {"goal": "ship"}}
    history = [system, USER, {"role": "assistant", "content": "a"}]
    out = apply_mutations(
        history, [ContextSummaryMutation(summary, remember=[{"text": "new fact"}])]
    )
    assert out[1] == summary
    assert len(out) == 2
    assert exps(out) == [{"id": "exp_001", "text": "x"}, {"id": "exp_002", "text": "new fact"}]


def test_summary_without_system_creates_one_only_when_remembering():
    summary = {"role": "user", "content": "s"}
    assert apply_mutations([USER], [ContextSummaryMutation(summary)]) == [summary]
    out = apply_mutations([USER], [ContextSummaryMutation(summary, remember=[{"text": "t"}])])
    assert out[0]["role"] == "system" and exps(out) == [{"id": "exp_001", "text": "t"}]
    assert out[1] == summary


def test_summary_drops_an_open_block():
    out = apply_mutations(
        [SYSTEM, USER],
        [
            AssistantMessageMutation(tool_calls=[call("a")]),
            ContextSummaryMutation({"content": "sum"}),
        ],
    )
    assert out == [SYSTEM, {"role": "user", "content": "sum"}]
    out = apply_mutations(out, [ToolResultMutation("a", "late")])
    assert_valid(out)


# ---------------------------------------------------------- remember / forget


def test_remember_creates_system_message_when_none():
    out = apply_mutations([USER], [ExperienceRememberMutation("likes tea")])
    assert out[0]["role"] == "system"
    assert exps(out) == [{"id": "exp_001", "text": "likes tea"}]
    assert out[1] == USER


def test_forget_removes_by_id():
    out = apply_mutations(
        [SYSTEM],
        [ExperienceRememberMutation("a"), ExperienceRememberMutation("b")],
    )
    out = apply_mutations(out, [ExperienceForgetMutation("exp_001")])
    assert exps(out) == [{"id": "exp_002", "text": "b"}]


def test_forget_unknown_id_changes_nothing_but_is_harmless():
    out = apply_mutations([SYSTEM, USER], [ExperienceForgetMutation("exp_404")])
    assert out == [SYSTEM, USER]


def test_ids_never_reused_after_forget():
    out = apply_mutations(
        [SYSTEM], [ExperienceRememberMutation("a"), ExperienceRememberMutation("b")]
    )
    out = apply_mutations(out, [ExperienceForgetMutation("exp_002")])
    out = apply_mutations(out, [ExperienceRememberMutation("c")])
    assert exps(out) == [{"id": "exp_001", "text": "a"}, {"id": "exp_003", "text": "c"}]
    out = apply_mutations(
        out, [ExperienceForgetMutation("exp_001"), ExperienceForgetMutation("exp_003")]
    )
    out = apply_mutations(out, [ExperienceRememberMutation("a")])
    assert exps(out) == [{"id": "exp_004", "text": "a"}]


def test_ids_not_reused_when_counter_is_missing():
    """A system message carried in by a replace may hold experiences without a counter."""
    system = {"role": "system", "content": "", "experiences": [{"id": "exp_007", "text": "old"}]}
    out = apply_mutations([], [ContextReplaceMutation([system]), ExperienceRememberMutation("new")])
    assert [e["id"] for e in exps(out)] == ["exp_007", "exp_008"]


def test_dedup_is_whitespace_normalised():
    out = apply_mutations(
        [SYSTEM],
        [ExperienceRememberMutation("likes  tea"), ExperienceRememberMutation("  likes\ttea\n")],
    )
    assert exps(out) == [{"id": "exp_001", "text": "likes  tea"}]
    assert out[0]["exp_seq"] == 1


def test_empty_remember_is_ignored():
    out = apply_mutations([SYSTEM], [ExperienceRememberMutation("   ")])
    assert exps(out) == []


# --------------------------------------------------------------- ordering rule


def test_batch_applies_forgets_before_remembers():
    base = apply_mutations([SYSTEM], [ExperienceRememberMutation("same")])
    # Remember comes first in the batch, but the forget commits first, so the
    # text is stored again under a new id instead of being deduplicated away.
    out = apply_mutations(
        base, [ExperienceRememberMutation("same"), ExperienceForgetMutation("exp_001")]
    )
    assert exps(out) == [{"id": "exp_002", "text": "same"}]


def test_batch_committed_before_next_other_mutation():
    seen = []
    base = [SYSTEM]
    # A forget after the user message is a new batch: it removes the remembered id.
    out = apply_mutations(
        base,
        [
            ExperienceRememberMutation("x"),
            UserMessageMutation({"content": "u"}),
            ExperienceForgetMutation("exp_001"),
            ExperienceRememberMutation("x"),
        ],
    )
    seen = exps(out)
    assert seen == [{"id": "exp_002", "text": "x"}]
    # Had the two batches been one, the forget would have found nothing to remove.
    assert out[1] == {"role": "user", "content": "u"}


def test_batch_committed_at_the_end():
    out = apply_mutations([SYSTEM, USER], [ExperienceRememberMutation("tail")])
    assert exps(out) == [{"id": "exp_001", "text": "tail"}]


def test_summary_right_after_remember_keeps_that_experience():
    out = apply_mutations(
        [SYSTEM, USER],
        [
            ExperienceRememberMutation("keep me"),
            ContextSummaryMutation({"role": "user", "content": "s"}),
        ],
    )
    assert exps(out) == [{"id": "exp_001", "text": "keep me"}]
    assert out[1] == {"role": "user", "content": "s"}


def test_replace_right_after_remember_discards_it_with_the_old_system():
    out = apply_mutations(
        [SYSTEM], [ExperienceRememberMutation("gone"), ContextReplaceMutation([USER])]
    )
    assert out == [USER]


# ------------------------------------------------------------------ truncated


def test_truncated_keeps_partial_and_metadata():
    out = apply_mutations([USER], [AssistantTruncatedMutation("half an ans", "user pressed Esc")])
    assert out[-1] == {
        "role": "assistant",
        "content": "half an ans",
        "truncated": True,
        "abort_reason": "user pressed Esc",
    }


# ------------------------------------------------------------------ cancelled


def test_cancelled_tool_answers_its_call_and_says_why():
    out = apply_mutations(
        [USER],
        [
            AssistantMessageMutation(tool_calls=[call("a", "run_tests")]),
            ToolCancelledMutation("a", "run_tests", "user pressed Esc"),
        ],
    )
    result = out[-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "a"
    assert result["cancelled"] is True and result["abort_reason"] == "user pressed Esc"
    assert "cancelled" in result["content"] and "run_tests" in result["content"]
    assert "user pressed Esc" in result["content"] and "person" in result["content"]
    assert_valid(out)


def test_cancelled_tool_without_call_adds_the_call_first():
    out = apply_mutations([USER], [ToolCancelledMutation("lost", "fetch", "timeout")])
    assert out[1]["role"] == "assistant"
    assert out[1]["tool_calls"][0]["id"] == "lost"
    assert out[1]["tool_calls"][0]["function"]["name"] == "fetch"
    assert out[2]["tool_call_id"] == "lost" and out[2]["cancelled"] is True
    assert_valid(out)


# -------------------------------------------------------------------- purity


def test_inputs_are_not_modified():
    system = {
        "role": "system",
        "content": "",
        "experiences": [{"id": "exp_001", "text": "a"}],
        "exp_seq": 1,
    }
    assistant = {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]}
    messages = [system, USER, assistant, {"role": "tool", "tool_call_id": "a", "content": "A"}]
    mutations = [
        MultimodalToolResultMutation("b", "shot", "{}", [{"role": "user", "content": "img"}]),
        ToolResultMutation("zz", "extra"),
        ExperienceForgetMutation("exp_001"),
        ExperienceRememberMutation("b"),
        AssistantMessageMutation(
            content=None, tool_calls=[{"id": "q", "function": {"name": "f", "arguments": {}}}]
        ),
        ToolCancelledMutation("q", "f", "esc"),
        ContextSummaryMutation({"content": "s"}, remember=[{"text": "r"}]),
        UserMessageMutation({"content": "u"}),
        AssistantTruncatedMutation("par", "esc"),
    ]
    before_messages = copy.deepcopy(messages)
    before_mutations = copy.deepcopy(mutations)
    ids_before = [id(m) for m in messages]
    out = apply_mutations(messages, mutations)
    assert messages == before_messages
    assert [id(m) for m in messages] == ids_before
    assert mutations == before_mutations
    assert out is not messages
    assert_valid(out)


def test_open_block_in_base_is_continued():
    base = apply_mutations([USER], [AssistantMessageMutation(tool_calls=[call("a"), call("b")])])
    base = apply_mutations(base, [ToolResultMutation("a", "A")])
    out = apply_mutations(base, [ToolResultMutation("b", "B")])
    assert [m.get("tool_call_id") for m in out[2:]] == ["a", "b"]
    assert_valid(out)


@given(
    existing=st.lists(st.tuples(st.sampled_from(["exp_001", "exp_007", "exp_12", "x", ""]),
                                st.sampled_from(["a", " a ", "b\tc", "b c", "", "d"])),
                      max_size=6),
    seq=st.sampled_from([None, 0, 3, 20, "9", "junk"]),
    texts=st.lists(st.sampled_from(["a", "a ", " b  c", "b c", "", "   ", "e", "e\n", "f"]),
                   max_size=12),
)
def test_a_batch_of_remembers_folds_as_the_same_remembers_one_at_a_time(existing, seq, texts):
    """One pass over the batch (a list of 1,000 was a million normalisations at each
    load): the same ids, texts, provenance and counter as remembering each in turn."""
    from selfref_tui.context.experiences import SEQ_KEY, with_all_remembered, with_remembered

    system: dict = {"role": "system", "content": "",
                    "experiences": [{"id": i, "text": t} for i, t in existing]}
    if seq is not None:
        system[SEQ_KEY] = seq
    items = [(text, {"source": "person", "message": n}) for n, text in enumerate(texts, 1)]
    one_by_one = system
    for text, meta in items:
        one_by_one, _ = with_remembered(one_by_one, text, meta)
    assert with_all_remembered(system, items) == one_by_one
    assert (with_all_remembered(system, items) is system) == (one_by_one is system)
    # in two batches (the second folds onto the list the first made, whose index is
    # kept), then from the start again (a rewind goes back to an older list)
    half = len(items) // 2
    assert with_all_remembered(with_all_remembered(system, items[:half]), items[half:]) \
        == one_by_one
    assert with_all_remembered(system, items[half:]) == with_all_remembered(
        copy.deepcopy(system), items[half:])
