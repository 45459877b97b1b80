"""The stream assembler folds tool-call deltas into typed records."""

from __future__ import annotations

from selfref_tui.agent import events as ev
from selfref_tui.agent.turn.stream import StreamAssembler, ToolCallRecord


def _assembler(events: list) -> StreamAssembler:
    return StreamAssembler("main", 2, events.append)


def test_interleaved_calls_are_assembled_in_index_order():
    events: list = []
    s = _assembler(events)
    s.tool_delta(1, "b", "forget", '{"experience_id"')
    s.tool_delta(0, "a", "remember", '{"text": ')
    s.tool_delta(1, None, None, ': "exp_001"}')
    s.tool_delta(0, None, None, '"tea"}')
    assert s.tool_calls() == [
        {"id": "a", "type": "function",
         "function": {"name": "remember", "arguments": '{"text": "tea"}'}},
        {"id": "b", "type": "function",
         "function": {"name": "forget", "arguments": '{"experience_id": "exp_001"}'}},
    ]
    started = [e for e in events if isinstance(e, ev.ToolCallStarted)]
    assert [(e.call_id, e.name) for e in started] == [("b", "forget"), ("a", "remember")]
    deltas = [(e.call_id, e.delta) for e in events if isinstance(e, ev.ToolCallArgumentsDelta)]
    assert deltas == [("b", '{"experience_id"'), ("a", '{"text": '), ("b", ': "exp_001"}'),
                      ("a", '"tea"}')]


def test_arguments_before_the_name_are_announced_once_the_name_arrives():
    events: list = []
    s = _assembler(events)
    s.tool_delta(0, None, None, '{"a":')
    assert events == []
    s.tool_delta(0, None, "inspect_context", " 1}")
    assert [type(e).__name__ for e in events] == ["ToolCallStarted", "ToolCallArgumentsDelta"]
    assert events[1].delta == '{"a": 1}'
    assert s.calls[0] == ToolCallRecord(0, "call_2_0", "inspect_context", ['{"a":', " 1}"], True)


def test_a_call_without_an_id_gets_one_and_keeps_it():
    s = _assembler([])
    s.tool_delta(3, None, "list_refs", "")
    s.tool_delta(3, "late-id", None, "{}")
    assert s.tool_calls()[0]["id"] == "call_2_3"


def test_text_and_reasoning_are_joined():
    s = _assembler([])
    s.text += ["Hel", "lo"]
    s.reasoning += ["th", "ink"]
    assert (s.content, s.reasoning_text, s.tool_calls()) == ("Hello", "think", [])
