"""Pins in the store: a record per change, folded into ``pins`` and ``entries()``."""

from __future__ import annotations

import pytest

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.selfref import SelfReference
from selfref_tui.selfref.log_lines import pin_record
from selfref_tui.selfref.rewind import rewind, undo

from .helpers import reading


def _talk(memory, turns: int = 2) -> None:
    for i in range(turns):
        memory.commit([UserMessageMutation({"role": "user", "content": f"question {i}"}),
                       AssistantMessageMutation(f"answer {i}")])


def test_pins_are_records_folded_into_entries_and_kept_on_reload(tmp_path):
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        _talk(memory)
        assert memory.set_pinned(1) and memory.set_pinned(3)
        assert memory.set_pinned(3, False)
        size = memory.log_size
        assert not memory.set_pinned(1)  # already pinned: nothing written
        assert not memory.set_pinned(3, False)
        assert memory.log_size == size
        with pytest.raises(IndexError):
            memory.set_pinned(9)
        assert memory.pins == {1}
        assert [e.n for e in memory.entries() if e.pinned] == [1]
        assert memory.entry(1).pinned and not memory.entry(2).pinned
    with reading(tmp_path / "data") as again:
        assert again.pins == {1}
        assert [e.pinned for e in again.entries()] == [True, False, False, False]


@pytest.mark.parametrize("record", [
    {"t": "pin", "n": 0, "pinned": True},
    {"t": "pin", "n": True, "pinned": True},
    {"t": "pin", "n": 2, "pinned": 1},
    {"t": "pin", "n": "2", "pinned": True},
    {"t": "pin", "pinned": True},
])
def test_a_malformed_pin_is_refused_before_anything_is_written(tmp_path, record):
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        _talk(memory, 1)
        size = memory.log_size
        with pytest.raises(ValueError, match="pin record"):
            memory.commit(records=[record])
        assert memory.log_size == size and memory.pins == set()


def test_a_rewind_leaves_pins_as_they_are(tmp_path):
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        _talk(memory, 3)
        memory.commit(records=[pin_record(1), pin_record(5)])
        rewind(memory, 3)
        assert memory.pins == {1, 5}
        assert {e.n: (e.pinned, e.rewound) for e in memory.entries()}[5] == (True, True)
        undo(memory)
        assert memory.pins == {1, 5}


def test_a_branch_carries_the_pins_of_the_messages_it_holds(tmp_path):
    """Pins are the person's marks on numbers, not context state (a rewind keeps them):
    a branch before message 5 holds messages 1-4 pinned as they are now, though the
    pin of 1 was made, and the pin of 3 taken back, after message 5."""
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        _talk(memory, 1)
        _talk(memory, 1)
        memory.set_pinned(3)  # pinned before message 5, unpinned after it
        _talk(memory, 2)
        memory.set_pinned(1)
        memory.set_pinned(3, False)
        memory.set_pinned(5)  # not in the branch
        branch = store.branch("main", 5, "side")
        assert branch.pins == {1}
        assert [e.n for e in branch.entries() if e.pinned] == [1]
        assert memory.pins == {1, 5}
    with reading(tmp_path / "data", "side") as again:
        assert again.pins == {1} and again.message_count == 4
