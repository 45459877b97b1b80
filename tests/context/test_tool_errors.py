"""A tool call's failure is the patch's flag; a record from before the flag reads by its text."""

from __future__ import annotations

from selfref_tui.context.apply import apply_mutations
from selfref_tui.context.compile import InvocationConfig, compile_messages
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ContextReplaceMutation,
    ToolResultMutation,
    UserMessageMutation,
    mutation_from_dict,
    mutation_to_dict,
)
from selfref_tui.context.tool_errors import error_content, failure_reason, tool_failed
from selfref_tui.selfref.decode import decode_mutation

CALLS = [{"id": f"c{i}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
         for i in (1, 2, 3)]
GREP = "Error: 3 lines matched in app.log"  # a success that reads like a failure


def turn(*results: ToolResultMutation) -> list:
    return [UserMessageMutation({"role": "user", "content": "grep the log"}),
            AssistantMessageMutation("", CALLS[:len(results)]), *results]


def tools(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m["role"] == "tool"]


def test_the_flag_decides_and_the_model_reads_the_same_text():
    patches = turn(ToolResultMutation("c1", GREP, 0.1, error=False),
                   ToolResultMutation("c2", error_content("no such file"), 0.1, error=True),
                   ToolResultMutation("c3", "fine", error=False))
    found, failed, fine = tools(apply_mutations([], patches))
    assert (tool_failed(found), tool_failed(failed), tool_failed(fine)) == (False, True, False)
    assert failure_reason(failed) == "no such file"
    # kept on the message only where the text alone would mislead, or the call failed
    assert (found.get("error"), failed.get("error"), "error" in fine) == (False, True, False)
    sent = tools(compile_messages(InvocationConfig("be brief"), [], patches))
    assert sent == [{"role": "tool", "tool_call_id": "c1", "content": GREP},
                    {"role": "tool", "tool_call_id": "c2", "content": "Error: no such file"},
                    {"role": "tool", "tool_call_id": "c3", "content": "fine"}]


def test_a_record_without_the_flag_reads_by_its_prefix_as_it_always_did():
    old = {"type": "ToolResultMutation", "tool_call_id": "c1", "content": "Error: declined",
           "duration_s": 1.5}
    for decode in (mutation_from_dict, decode_mutation):
        patch = decode(old)
        assert patch == ToolResultMutation("c1", "Error: declined", 1.5, error=None)
        [message] = tools(apply_mutations([], turn(patch)))
        assert tool_failed(message) and "error" not in message
        [message] = tools(apply_mutations([], turn(decode({**old, "content": "declined"}))))
        assert not tool_failed(message)


def test_the_flag_round_trips_and_survives_a_copy_of_the_messages():
    patches = turn(ToolResultMutation("c1", GREP, error=False),
                   ToolResultMutation("c2", "Error: gone", error=True))
    for patch in patches[2:]:
        data = mutation_to_dict(patch)
        assert decode_mutation(data) == mutation_from_dict(data) == patch
    # a fork's or a replace's copy of the messages keeps what the flag said
    copied = apply_mutations([], [ContextReplaceMutation(apply_mutations([], patches))])
    assert [tool_failed(m) for m in tools(copied)] == [False, True]


def test_a_cancelled_call_is_not_a_failure_and_odd_flags_are_ignored():
    assert not tool_failed({"role": "tool", "content": "Error: x", "cancelled": True})
    assert tool_failed({"role": "tool", "content": "Error: x", "error": "no"})  # not a bool
    assert not tool_failed({"role": "tool", "content": [{"type": "text", "text": "Error: x"}]})
