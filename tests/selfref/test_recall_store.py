"""search_history's index over a real store: read in bulk, taken in ahead of need.

The reference is an index made from ``MemoryKey.entries()`` at the moment of
the search (every numbered message as the person reads it, hidden ones left
out): an index over the store itself — read in bulk, in pieces, before a
rewind or before a message was hidden — must find exactly what it finds.
"""

from __future__ import annotations

from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    MultimodalToolResultMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.context.recall import SearchResult
from selfref_tui.context.recall_index import HistoryIndex
from selfref_tui.context.summary import Summary, summary_mutation
from selfref_tui.selfref import SelfReference

QUERIES = ('"blue heron"', "BLUE heron", "deploy", "shot", "heron rollout", "xylophone",
           '"heron\nprotocol"', "search_history", "needle")


def _call(cid: str, name: str, arguments: str = "{}") -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


def _exchange(i: int) -> list:
    text = f"question {i}: deploy the server"
    if i % 7 == 3:
        text += " with the Blue Heron\nprotocol for the rollout"
    return [UserMessageMutation({"role": "user", "content": text}),
            AssistantMessageMutation(f"running {i}", [_call(f"r{i}", "run_shell",
                                                            '{"cmd": "make deploy"}')]),
            ToolResultMutation(f"r{i}", f"deployed v{i}"),
            AssistantMessageMutation(f"answer {i}: the heron rollout is done")]


def _summary():
    return summary_mutation(Summary("Port", "small", [], [], "halfway", "more", []))


def _search_all(index: HistoryIndex, history, query: str, rewound: bool) -> SearchResult:
    return index.search(history, query, every=True, include_rewound=rewound)


def _same_as_entries(memory, index: HistoryIndex) -> None:
    """Every query, with and without the rewound, finds in ``index`` over the store what a
    fresh index over the store's entries finds."""
    for query in QUERIES:
        for rewound in (False, True):
            reference = _search_all(HistoryIndex(), list(memory.entries()), query, rewound)
            assert _search_all(index, memory, query, rewound) == reference, (query, rewound)


def test_an_index_over_the_store_finds_what_one_over_its_entries_finds(tmp_path):
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([m for i in range(30) for m in _exchange(i)])
        memory.commit([_summary()])
        memory.commit([m for i in range(30, 40) for m in _exchange(i)])
        index = HistoryIndex()  # taken in before the rest: the store read in pieces
        index.extend(memory)
        assert len(index) == memory.message_count
        search = _call("s1", "search_history", '{"query": "needle"}')
        memory.commit([UserMessageMutation({"role": "user", "content": "find the needle"}),
                       AssistantMessageMutation("looking for the needle", [search]),
                       ToolResultMutation("s1", "#3 user: the needle"),
                       AssistantMessageMutation("no needle")])
        memory.commit([memory.rewind_patch(memory.last_number - 1)])
        assert memory.rewound_count == 2  # the search's result and "no needle"
        memory.commit([m for i in range(40, 45) for m in _exchange(i)])
        _same_as_entries(memory, index)
        found = index.search(memory, '"blue heron"')
        assert found.total == 6 and found.hits[0].n > found.hits[-1].n  # newest first
        assert found.hits[-1].compacted
        # the recall tool's call and result are never found; the person's words are
        assert [h.n for h in index.search(memory, "needle").hits] == [161]
        assert index.search(memory, "needle", include_rewound=True).total == 2
        # a rewind undone brings its message back to a search
        memory.commit([memory.rewind_patch(memory.last_number - 1)])  # another rewind
        memory.commit([type(memory.rewind_patch(1))(to_patch=memory.last_rewind)])
        _same_as_entries(memory, index)


def test_a_message_hidden_after_it_was_indexed_is_never_found(tmp_path):
    """An assistant message whose only call's result brought an image is hidden once the
    result comes; the index took it in before that, while the call was running."""
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": "take a shot"}),
                       AssistantMessageMutation(content="", tool_calls=[_call("c1", "shot")])])
        index = HistoryIndex()
        assert [h.n for h in index.search(memory, "shot").hits] == [2, 1]
        memory.commit([MultimodalToolResultMutation("c1", "shot", "{}",
                                                    [{"content": "the picture"}])])
        memory.commit([AssistantMessageMutation(content="A heron.")])
        assert memory.is_hidden(2)
        found = index.search(memory, "shot")
        assert 2 not in [h.n for h in found.hits]
        assert found == _search_all(HistoryIndex(), list(memory.entries()), "shot", False)
        assert found.total == 2  # the person's message and the note that says it called shot
        _same_as_entries(memory, index)


def test_a_message_indexed_while_hidden_is_found_once_a_rewind_shows_it_again(tmp_path):
    """Hidden when the index took the history in (its only call's result brought an
    image), then back in the context (a rewind to just before that result), then hidden
    again (the rewind undone): the index follows each step."""
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": "take a picture"}),
                       AssistantMessageMutation(content="", tool_calls=[
                           _call("c1", "shot", '{"subject": "heron"}')])])
        memory.commit([MultimodalToolResultMutation("c1", "shot", "{}",
                                                    [{"content": "the picture"}])])
        memory.commit([AssistantMessageMutation(content="A bird.")])
        assert memory.is_hidden(2)
        index = HistoryIndex()
        assert index.search(memory, "heron").total == 0
        memory.commit([memory.rewind_patch(3)])
        assert not memory.is_hidden(2)
        assert [h.n for h in index.search(memory, "heron").hits] == [2]
        _same_as_entries(memory, index)
        memory.commit([type(memory.rewind_patch(1))(to_patch=memory.last_rewind)])
        assert memory.is_hidden(2)
        assert index.search(memory, "heron").total == 0
        _same_as_entries(memory, index)


def test_bulk_reads_leave_hidden_numbers_out_and_stop_where_asked(tmp_path):
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": "take a shot"}),
                       AssistantMessageMutation(content="", tool_calls=[_call("c1", "shot")])])
        memory.commit([MultimodalToolResultMutation("c1", "shot", "{}",
                                                    [{"content": "the picture"}])])
        memory.commit([m for i in range(3) for m in _exchange(i)])
        entries = memory.entries()
        numbers, messages = memory.numbered_messages()
        assert numbers == [e.n for e in entries] and 2 not in numbers
        assert all(m is e.message for m, e in zip(messages, entries, strict=True))
        assert memory.numbered_messages(2, 6)[0] == [3, 4, 5, 6]
        assert memory.numbered_messages(memory.last_number + 1) == ([], [])
        assert memory.numbers_hidden() == [2]
        assert memory.numbers_rewound() == []
        memory.commit([memory.rewind_patch(10)])
        assert memory.numbers_rewound() == [e.n for e in memory.entries() if e.rewound]
        assert memory.numbers_rewound()[0] == 10
