"""The store's numbered history and the rewind patch: committed, folded, replayed on load."""

from __future__ import annotations

import json
import re

import pytest

from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ContextSummaryMutation,
    ExperienceRememberMutation,
    RewindMutation,
    UserMessageMutation,
)
from selfref_tui.selfref import SelfReference
from selfref_tui.selfref.store import LOG_NAME

from .helpers import turn

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00\Z")


def reload(data_dir, key: str = "main"):
    return SelfReference(data_dir).open(key, write=False)


def person_view(memory) -> list[tuple]:
    return [(e.n, e.role, e.message.get("content"), e.rewound, e.compacted)
            for e in memory.entries()]


def test_entries_are_numbered_with_the_time_of_their_record(tmp_path):
    memory = SelfReference(tmp_path).open("main")
    memory.commit(turn(1))
    memory.commit(turn(2))
    entries = memory.entries()
    assert [(e.n, e.role) for e in entries] == [(1, "user"), (2, "assistant"), (3, "user"),
                                                (4, "assistant")]
    assert all(ISO.match(e.time) for e in entries)
    log = [json.loads(line) for line in (memory.key_dir / LOG_NAME).read_text().splitlines()]
    assert entries[2].time == log[3]["ts"]  # header, two lines of turn 1, then question 2
    assert memory.entries() is entries  # cached until the next commit
    assert memory.entry(3) == entries[2]
    with pytest.raises(IndexError):
        memory.entry(5)
    assert person_view(reload(tmp_path)) == person_view(memory)
    assert reload(tmp_path).entries()[2].time == entries[2].time


def test_a_rewind_is_stored_replayed_and_the_rewound_stay_readable(tmp_path):
    memory = SelfReference(tmp_path).open("main")
    memory.commit(turn(1))
    memory.commit([ExperienceRememberMutation("likes tea")])
    memory.commit(turn(2))
    memory.commit([memory.rewind_patch(3)])
    assert [m.get("content") for m in memory.messages[1:]] == ["question 1", "answer 1"]
    assert [e["text"] for e in memory.experiences] == ["likes tea"]
    memory.commit(turn(3))
    expected = [
        (1, "user", "question 1", False, False), (2, "assistant", "answer 1", False, False),
        (3, "user", "question 2", True, False), (4, "assistant", "answer 2", True, False),
        (5, "user", "question 3", False, False), (6, "assistant", "answer 3", False, False),
    ]
    assert person_view(memory) == expected
    again = reload(tmp_path)
    assert person_view(again) == expected
    assert again.messages == memory.messages
    assert again.history == memory.history
    assert [m.get("rewound", False) for m in again.history] == [False, False, True, True,
                                                                 False, False]
    assert again.history_numbers() == [1, 2, 3, 4, 5, 6]
    assert again.message_count == 6  # keys list counts what the person can read


def test_rewinding_past_a_remember_and_a_ref_takes_them_back(tmp_path):
    memory = SelfReference(tmp_path).open("main")
    memory.commit(turn(1), records=[{"t": "ref", "id": "plan", "content": "v1"}])
    memory.commit([UserMessageMutation({"role": "user", "content": "more"}),
                   ExperienceRememberMutation("second fact"),
                   AssistantMessageMutation(content="v2 and new")],
                  records=[{"t": "ref", "id": "plan", "content": "v2"},
                           {"t": "ref", "id": "fresh", "content": "new"}])
    assert sorted(memory.refs) == ["fresh", "plan"]
    memory.commit([memory.rewind_patch(3)])
    for key in (memory, reload(tmp_path)):
        assert [v["content"] for v in key.refs["plan"]] == ["v1"]  # back to its earlier content
        assert "fresh" not in key.refs  # first defined after the rewind point
        assert key.experiences == []


def test_undoing_a_rewind_and_rewinding_past_a_compaction(tmp_path):
    memory = SelfReference(tmp_path).open("main")
    memory.commit(turn(1))
    memory.commit([ContextSummaryMutation({"role": "user", "content": "S",
                                           "compaction": {"goal": "g"}})])
    memory.commit(turn(2))
    full = list(memory.messages)
    memory.commit([memory.rewind_patch(3)])
    undo_to = memory.patch_count - 1
    memory.commit([RewindMutation(to_patch=undo_to)])
    assert memory.messages == full
    memory.commit([memory.rewind_patch(2)])  # before answer 1: the compaction goes too
    assert [m.get("content") for m in memory.messages] == ["question 1"]
    assert memory.summary is None
    again = reload(tmp_path)
    assert again.messages == memory.messages and again.summary is None
    assert [(e.n, e.rewound, e.compacted) for e in again.entries()] == [
        (1, False, False), (2, True, False), (3, True, False), (4, True, False)]
    marker = [m for m in again.history if m.get("role") == "compaction"]
    assert marker and marker[0]["rewound"] is True


def test_a_rewind_to_where_the_context_already_is_changes_nothing_and_undo_still_works(
        tmp_path):
    """The same rewind twice (a command run again): the second is no patch, says so, and
    the undo after it brings back what the first took (a no-op patch left the undo stuck
    on itself: every undo after it undid nothing)."""
    from selfref_tui.selfref.rewind import rewind, undo

    memory = SelfReference(tmp_path).open("main")
    memory.commit(turn(1))
    memory.commit([turn(2)[0], ExperienceRememberMutation("likes tea"), turn(2)[1]])
    memory.commit(turn(3))
    full = list(memory.messages)
    first = rewind(memory, 3)  # past the remember: the rewind journals the id counter too
    assert first.left == [3, 4, 5, 6] and memory.experiences == []
    patches, size = memory.patch_count, memory.log_size
    for reopen in (False, True):  # and after a reload
        if reopen:
            memory.close()
            memory = SelfReference(tmp_path).open("main")
        again = rewind(memory, 3)
        assert (memory.patch_count, memory.log_size) == (patches, size)  # nothing written
        assert again.left == [] and again.undo_patch == -1
        assert again.lines() == ["conversation 'main' is already rewound to just before message 3: "
                                 "nothing changed"]
    back = undo(memory)
    assert back.back == [3, 4, 5, 6] and memory.messages == full
    assert reload(tmp_path).messages == full


def test_undo_walks_back_through_the_rewinds_one_by_one(tmp_path):
    """Rewind to 5, then to 3: the first undo brings 3-4 back, the next 5-6 (an undo of
    an undo redid the later rewind, so what the first rewind took never came back);
    messages sent after a rewind are never what an undo loses."""
    from selfref_tui.selfref.rewind import RewindError, rewind, undo

    memory = SelfReference(tmp_path).open("main")
    for i in range(1, 4):
        memory.commit(turn(i))
    full = list(memory.messages)
    rewind(memory, 5)
    rewind(memory, 3)
    assert undo(memory).back == [3, 4]
    assert undo(memory).back == [5, 6] and memory.messages == full
    with pytest.raises(RewindError, match="no rewind to undo"):
        undo(memory)
    memory.close()
    memory = SelfReference(tmp_path).open("main")  # the log replays to the same walk
    assert memory.messages == full
    rewind(memory, 3)
    memory.commit(turn(4))  # then the person goes on from there
    went_on = list(memory.messages)
    assert undo(memory).back == [3, 4, 5, 6]  # the rewind undone: question 4 leaves
    assert undo(memory).back == [7, 8] and memory.messages == went_on  # and comes back


def test_a_rewind_into_a_block_whose_call_ids_hold_other_digits(tmp_path):
    """Call ids are the model's: "a" and "a_²" ("²" is a digit to str.isdigit, not to
    int) made a rewind into their block raise, after its patch was written, and then
    every load of the key raised too."""
    from selfref_tui.context.mutations import ToolResultMutation
    from selfref_tui.selfref.rewind import rewind

    memory = SelfReference(tmp_path).open("main")
    calls = [{"id": cid, "type": "function", "function": {"name": "x", "arguments": "{}"}}
             for cid in ("a", "a_²")]
    memory.commit([UserMessageMutation({"role": "user", "content": "q"}),
                   AssistantMessageMutation(content="", tool_calls=calls)])
    memory.commit([ToolResultMutation("a", "first")])
    memory.commit([ToolResultMutation("a_²", "second")])
    memory.commit([AssistantMessageMutation(content="done")])
    assert rewind(memory, 4).left == [4, 5]
    assert [m.get("content") for m in memory.messages[1:]] == ["", "first"]
    memory.close()
    again = reload(tmp_path)
    assert again.messages == memory.messages
