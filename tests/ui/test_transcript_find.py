"""Find over the transcript's items and the older messages, without a screen."""

from __future__ import annotations

from selfref_tui.ui.transcript.find import find_hits, message_text, pattern
from selfref_tui.ui.transcript.reducer import TranscriptModel


def _history() -> list[dict]:
    call = {"id": "c1", "type": "function",
            "function": {"name": "grep", "arguments": '{"pattern": "Needle"}'}}
    return [
        {"role": "user", "content": "needle one"},
        {"role": "assistant", "content": "", "reasoning_content": "a needle in thought",
         "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "needle needle"},
        {"role": "user", "content": "summary", "compaction": {"goal": "needle"}},
        {"role": "compaction", "summary": {"goal": "find the needle"}, "messages_before": 3},
        {"role": "assistant", "content": "Done: NEEDLE."},
    ]


def test_hidden_parts_are_found_and_said_hidden_and_case_does_not_matter():
    model = TranscriptModel()
    model.load_history(_history(), tail=50)
    hits = find_hits(model.items, model.older, pattern("needle"))
    kinds = [(hit.item.kind, hit.hidden) for hit in hits]
    assert kinds == [
        ("user", False),
        ("answer", True),  # reasoning, collapsed
        ("tool", True), ("tool", True), ("tool", True),  # arguments, then the result twice
        ("divider", True),  # the summary (its user message is never shown)
        ("answer", False),
    ]
    assert [hit.occurrence for hit in hits if hit.item.kind == "tool"] == [0, 1, 2]


def test_older_messages_count_as_their_items_will():
    history = _history()
    shown = TranscriptModel()
    shown.load_history(history, tail=50)
    behind = TranscriptModel()
    behind.load_history(history, tail=1)
    assert behind.older  # all but the last wait behind the banner
    found = pattern("needle")
    assert len(find_hits(behind.items, behind.older, found)) == len(
        find_hits(shown.items, shown.older, found))
    assert all(hit.item is None for hit in find_hits(behind.items, behind.older, found)[:-1])


def test_an_empty_query_finds_nothing_and_text_is_literal():
    assert pattern("") is None
    assert message_text({"role": "user", "content": "a.b"}) == "a.b"
    assert not pattern("a.b").search("axb")  # not a regular expression
