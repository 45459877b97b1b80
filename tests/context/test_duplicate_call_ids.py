"""Two tool calls sharing an id in one assistant message: each result finds its own call."""

from __future__ import annotations

from selfref_tui.context.apply import TranscriptBuilder, unique_call_ids
from selfref_tui.context.mutations import AssistantMessageMutation, ToolResultMutation


def call(cid: str, name: str) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_repeated_ids_are_renamed_without_clashing_with_others():
    calls = [call("x", "a"), call("x", "b"), call("x_2", "c"), call("x", "d")]
    out = unique_call_ids(calls)
    assert [c["id"] for c in out] == ["x", "x_3", "x_2", "x_4"]
    assert [c["function"]["name"] for c in out] == ["a", "b", "c", "d"]
    assert calls[1]["id"] == "x"  # the input is not changed
    same = [call("a", "a"), call("b", "b")]
    assert unique_call_ids(same) == same


def test_a_stored_message_with_repeated_ids_pairs_results_in_order():
    """Logs written before the fix: the second result for ``x`` answers the second call."""
    builder = TranscriptBuilder()
    builder.apply(AssistantMessageMutation(tool_calls=[call("x", "a"), call("x", "b")]))
    builder.apply(ToolResultMutation("x", "result a"))
    builder.apply(ToolResultMutation("x", "result b"))
    msgs = builder.messages
    assert [c["id"] for c in msgs[0]["tool_calls"]] == ["x", "x_2"]
    assert [(m["tool_call_id"], m["content"]) for m in msgs[1:]] == [
        ("x", "result a"), ("x_2", "result b")]
    assert not any(c["function"]["name"] == "unknown_tool"
                   for m in msgs for c in m.get("tool_calls", []))


def test_results_for_a_repeated_id_pair_the_same_patch_by_patch_and_all_at_once():
    """The store folds patch by patch: a resumed block must pair ``c1``'s second result
    with ``c1_2`` exactly as one apply does (found by hypothesis)."""
    from selfref_tui.context.apply import apply_mutations
    from selfref_tui.context.mutations import AssistantMessageMutation, ToolResultMutation

    def call() -> dict:
        return {"id": "c1", "type": "function", "function": {"name": "read_fd", "arguments": "{}"}}

    seq = [
        AssistantMessageMutation(content=None, tool_calls=[call(), call()]),
        ToolResultMutation("c1", "first"),
        ToolResultMutation("c1", "second"),
    ]
    stepwise: list[dict] = []
    for m in seq:
        stepwise = apply_mutations(stepwise, [m])
    assert stepwise == apply_mutations([], seq)
    assert [(m["tool_call_id"], m["content"]) for m in stepwise if m["role"] == "tool"] == [
        ("c1", "first"), ("c1_2", "second")]
