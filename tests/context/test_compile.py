"""Compile boundary: provider messages carry no metadata and a complete system prompt."""

from __future__ import annotations

import copy
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.context.apply import apply_mutations
from selfref_tui.context.compile import (
    REF_INSTRUCTIONS,
    DataFromSelfRef,
    InvocationConfig,
    compile_messages,
    render_provider_messages,
    snapshot_of,
)
from selfref_tui.context.experiences import render_system_prompt_with_experiences
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    AssistantTruncatedMutation,
    ExperienceForgetMutation,
    ExperienceRememberMutation,
    MultimodalToolResultMutation,
    ToolCancelledMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.context.summary import Summary, summary_mutation

from .invariants import assert_valid
from .strategies import mutations

CFG = InvocationConfig(base_system_prompt="You are a helpful agent.")
NO_REFS = InvocationConfig(base_system_prompt="You are a helpful agent.", refs_enabled=False)
ALLOWED = {"role", "content", "tool_calls", "tool_call_id", "name"}
CALL = {"id": "c1", "type": "function", "function": {"name": "read_fd", "arguments": "{}"}}


def test_system_message_is_produced_when_transcript_has_none():
    out = render_provider_messages(NO_REFS, [{"role": "user", "content": "hi"}])
    assert out == [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": "hi"},
    ]


def test_system_prompt_renders_experiences_after_base_and_ref_instructions():
    base = apply_mutations([], [ExperienceRememberMutation("User prefers <dark> & mode")])
    system = render_provider_messages(CFG, base)[0]
    expected = render_system_prompt_with_experiences(
        "You are a helpful agent.\n\n" + REF_INSTRUCTIONS,
        [{"id": "exp_001", "text": "User prefers <dark> & mode"}],
    )
    assert system == {"role": "system", "content": expected}
    assert system["content"].endswith(
        '<experiences>\n  <exp id="exp_001">User prefers &lt;dark&gt; &amp; mode</exp>\n'
        "</experiences>"
    )


def test_ref_instructions_only_when_refs_enabled():
    assert "<ref id=" in render_provider_messages(CFG, [])[0]["content"]
    assert "ref" not in render_provider_messages(NO_REFS, [])[0]["content"].lower()


def test_ref_instructions_cover_purpose_ids_and_tools():
    text = REF_INSTRUCTIONS
    for needle in (
        "<ref id=",
        "snake_case",
        "64 characters",
        "supersedes",
        "list_refs",
        "get_ref",
        "read_fd",
        'fd_to_file(fd="ref:ID"',
    ):
        assert needle in text


def test_stored_system_content_is_kept_after_base_prompt():
    msgs = [{"role": "system", "content": "You are a child agent."}]
    assert render_provider_messages(NO_REFS, msgs)[0]["content"] == (
        "You are a helpful agent.\n\nYou are a child agent."
    )


def test_metadata_never_reaches_the_provider():
    msgs = apply_mutations(
        [{"role": "user", "content": "u", "timestamp": "2026", "id": "m1", "whatever": 1}],
        [
            ExperienceRememberMutation("x"),
            AssistantMessageMutation(
                content=None, tool_calls=[CALL], reasoning_details=[{"text": "think"}]
            ),
            ToolCancelledMutation("c1", "read_fd", "esc"),
            AssistantMessageMutation(content=None, tool_calls=[{**CALL, "id": "img"}]),
            MultimodalToolResultMutation("img", "shot", "{}", [{"content": "pic"}]),
            AssistantTruncatedMutation("half", "esc"),
            summary_mutation(Summary("g", "i", [], [], "", "", [])),
            UserMessageMutation({"content": "after", "archived": True, "created": "t"}),
        ],
    )
    # cover the pre-summary part too
    msgs_pre = apply_mutations(
        [{"role": "user", "content": "u", "timestamp": "2026"}],
        [
            AssistantMessageMutation(content=None, tool_calls=[CALL], reasoning_details=[{"t": 1}]),
            ToolCancelledMutation("c1", "read_fd", "esc"),
            AssistantMessageMutation(content=None, tool_calls=[{**CALL, "id": "img"}]),
            MultimodalToolResultMutation("img", "shot", "{}", [{"content": "pic"}]),
            AssistantTruncatedMutation("half", "esc"),
        ],
    )
    for source in (msgs, msgs_pre):
        out = render_provider_messages(CFG, source)
        for m in out:
            assert set(m) <= ALLOWED, m
        assert_valid(out)


def test_truncated_assistant_gets_visible_marker():
    msgs = apply_mutations([], [AssistantTruncatedMutation("The answer is", "user pressed Esc")])
    out = render_provider_messages(CFG, msgs)
    assert out[-1] == {
        "role": "assistant",
        "content": "The answer is\n\n[answer interrupted: user pressed Esc]",
    }
    msgs = apply_mutations([], [AssistantTruncatedMutation("x", "")])
    assert render_provider_messages(CFG, msgs)[-1]["content"] == "x\n\n[answer interrupted]"


def test_assistant_with_tool_calls_sends_empty_string_not_null():
    # llama.cpp's request model refuses content: null (HTTP 500, "validation errors");
    # the store keeps None, the request carries "".
    msgs = apply_mutations([], [AssistantMessageMutation(content=None, tool_calls=[CALL])])
    msgs = apply_mutations(msgs, [ToolResultMutation("c1", "ok")])
    out = render_provider_messages(CFG, msgs)
    assert msgs[0]["content"] is None
    assert out[1] == {"role": "assistant", "content": "", "tool_calls": [CALL]}
    assert out[2] == {"role": "tool", "tool_call_id": "c1", "content": "ok"}


def test_plain_assistant_never_has_null_content():
    out = render_provider_messages(CFG, [{"role": "assistant", "content": None}])
    assert out[-1] == {"role": "assistant", "content": ""}


def test_user_content_parts_pass_through_and_name_is_kept():
    parts = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]
    out = render_provider_messages(CFG, [{"role": "user", "content": parts, "name": "ann"}])
    assert out[-1] == {"role": "user", "content": parts, "name": "ann"}


def test_unknown_roles_are_dropped():
    msgs = [{"role": "compaction", "summary": {}}, {"role": "user", "content": "u"}]
    assert [m["role"] for m in render_provider_messages(CFG, msgs)] == ["system", "user"]


def test_render_and_compile_are_pure():
    base = apply_mutations(
        [{"role": "user", "content": "u"}],
        [AssistantTruncatedMutation("p", "r"), ExperienceRememberMutation("e")],
    )
    pending = [ExperienceForgetMutation("exp_001"), UserMessageMutation({"content": "next"})]
    before = copy.deepcopy(base)
    out = compile_messages(CFG, base, pending)
    assert base == before
    assert out[-1] == {"role": "user", "content": "next"}
    assert "<experiences>" not in out[0]["content"]
    out[1]["content"] = "changed"
    assert base == before


def test_compile_equals_render_of_apply():
    base = [{"role": "user", "content": "a"}]
    pending = [AssistantMessageMutation(content="b"), ExperienceRememberMutation("c")]
    assert compile_messages(CFG, base, pending) == render_provider_messages(
        CFG, apply_mutations(base, pending)
    )


def test_snapshot_reads_experiences_summary_and_working_messages():
    base = apply_mutations(
        [{"role": "user", "content": "old"}],
        [
            ExperienceRememberMutation("fact"),
            summary_mutation(Summary("goal!", "", [], [], "", "", [])),
            UserMessageMutation({"content": "new"}),
        ],
    )
    snap = snapshot_of(base, "base prompt")
    assert isinstance(snap, DataFromSelfRef)
    assert snap.base_system_prompt == "base prompt"
    assert snap.experiences == [{"id": "exp_001", "text": "fact"}]
    assert snap.summary is not None and snap.summary["goal"] == "goal!"
    assert snap.summary_message is base[1]
    assert snap.working_messages == base[1:]
    empty = snapshot_of([], "p")
    assert (empty.experiences, empty.summary, empty.summary_message, empty.working_messages) == (
        [],
        None,
        None,
        [],
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(mutations, max_size=20), st.booleans())
def test_rendered_messages_are_always_provider_valid(seq, refs):
    config = InvocationConfig("base", refs_enabled=refs)
    out = compile_messages(config, [], seq)
    assert out[0]["role"] == "system"
    assert [m["role"] for m in out].count("system") == 1
    for m in out:
        assert set(m) <= ALLOWED
        if m["role"] == "assistant" and "tool_calls" not in m:
            assert isinstance(m["content"], str)
    assert_valid(out)
    # nothing left open in a request: every call answered
    calls = sum(len(m.get("tool_calls", [])) for m in out)
    assert calls == sum(1 for m in out if m["role"] == "tool")


def test_open_block_is_closed_in_the_request_only():
    base = apply_mutations(
        [{"role": "user", "content": "u"}],
        [
            AssistantMessageMutation(tool_calls=[CALL, {**CALL, "id": "img"}]),
            MultimodalToolResultMutation("img", "shot", "{}", [{"content": "pic"}]),
        ],
    )
    out = render_provider_messages(NO_REFS, base)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert out[3]["tool_call_id"] == "c1" and "No result" in out[3]["content"]
    assert not any(m.get("role") == "tool" for m in base)


def _roles(out: list[dict]) -> list[str]:
    return [m["role"] for m in out]


def test_user_runs_are_merged_in_the_request_not_in_the_store():
    stored = [{"role": "user", "content": "first"}, {"role": "user", "content": "second"},
              {"role": "user", "content": "third", "name": "bob"},
              {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    before = copy.deepcopy(stored)
    out = render_provider_messages(NO_REFS, stored)
    assert _roles(out) == ["system", "user", "assistant", "user"]
    assert out[1] == {"role": "user", "content": "first\n\nsecond\n\nthird"}
    assert stored == before


def test_user_run_with_images_becomes_one_parts_list():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    stored = [{"role": "user", "content": "look"},
              {"role": "user", "content": [{"type": "text", "text": "at"}, image]},
              {"role": "user", "content": "this"}]
    out = render_provider_messages(NO_REFS, stored)
    assert out[1:] == [{"role": "user", "content": [
        {"type": "text", "text": "look\n\nat"}, image, {"type": "text", "text": "this"}]}]


def test_later_system_message_goes_as_user_text_merged_into_its_neighbours():
    stored = [{"role": "user", "content": "hi"}, {"role": "system", "content": "be brief"},
              {"role": "user", "content": "go"}]
    out = render_provider_messages(NO_REFS, stored)
    assert _roles(out) == ["system", "user"]
    assert out[1]["content"] == "hi\n\n[system] be brief\n\ngo"


def test_orphan_tool_result_goes_as_user_text():
    stored = [{"role": "user", "content": "hi"},
              {"role": "tool", "tool_call_id": "gone", "content": "42"},
              {"role": "assistant", "content": None, "tool_calls": [CALL]},
              {"role": "tool", "tool_call_id": "c1", "content": "ok"},
              {"role": "tool", "tool_call_id": "c1", "content": "again"}]
    out = render_provider_messages(NO_REFS, stored)
    assert _roles(out) == ["system", "user", "assistant", "tool", "user"]
    assert out[1]["content"] == "hi\n\n[tool result without its call] 42"
    assert out[3] == {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    assert out[4]["content"] == "[tool result without its call] again"


@settings(max_examples=200, deadline=None)
@given(st.lists(mutations, max_size=25))
def test_rendered_requests_suit_the_strictest_servers(batch):
    out = compile_messages(CFG, [], batch)
    roles = _roles(out)
    assert roles.count("system") == 1 and roles[0] == "system"
    for a, b in itertools.pairwise(roles):
        assert not (a == b == "user"), roles
    for i, m in enumerate(out):
        if m["role"] == "assistant":
            assert isinstance(m["content"], str)
        if m["role"] == "tool":
            prev = i - 1
            while out[prev]["role"] == "tool":
                prev -= 1
            ids = [c["id"] for c in out[prev].get("tool_calls", [])]
            assert m["tool_call_id"] in ids
