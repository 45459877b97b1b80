"""What a compaction keeps verbatim: the person's words, the last exchange, pins."""

from __future__ import annotations

import base64
from typing import Any

from selfref_tui.context.history import HistoryEntry
from selfref_tui.context.kept_words import PERSON_SHARE, keep_words, tagged
from selfref_tui.context.summary import (
    EXCHANGE_TITLE,
    HISTORY_TITLE,
    PERSON_TITLE,
    PINNED_TITLE,
    Summary,
    render_summary,
    summary_message,
)
from selfref_tui.context.tokens import estimate_tokens

TIME = "2025-05-01T10:00:00.000+00:00"


def user(n: int, text: Any, **extra: Any) -> HistoryEntry:
    return HistoryEntry(n, "user", {"role": "user", "content": text, **extra}, TIME)


def answer(n: int, text: str, **extra: Any) -> HistoryEntry:
    return HistoryEntry(n, "assistant", {"role": "assistant", "content": text, **extra}, TIME)


SUMMARY = Summary("Ship the parser", "Small commits", [], [], "Half done", "Tests", [])


def test_the_persons_messages_newest_first_and_the_latest_in_the_exchange():
    entries = [user(1, "first ask"), answer(2, "ok"), user(3, "second: use tabs"),
               answer(4, "done with tabs"), user(5, "now the docs")]
    kept = keep_words(entries, window=100_000, count=estimate_tokens)
    assert [s.n for s in kept.person] == [3, 1]
    assert [s.text for s in kept.person] == ["second: use tabs", "first ask"]
    assert [(s.n, s.role) for s in kept.exchange] == [(4, "assistant"), (5, "user")]
    assert kept.left_out == () and kept.first == 1 and kept.last == 5


def test_the_call_to_compact_is_not_the_models_last_words():
    call = {"id": "k", "function": {"name": "compact", "arguments": "{}"}}
    entries = [user(1, "go"), answer(2, "Found the bug in parse()."),
               answer(3, "Let me summarise.", tool_calls=[call])]
    kept = keep_words(entries, window=100_000, count=estimate_tokens)
    assert [s.n for s in kept.exchange] == [1, 2]


def test_notes_summaries_and_tool_images_are_not_the_persons_words():
    entries = [
        user(1, "[Context summary] old", compaction={"goal": "x"}),
        user(2, "mine"),
        user(3, "[selfref-tui runtime] compact now", runtime_note="auto_compact"),
        user(4, "image from a tool", multimodal_for="call_1"),
        answer(5, "", tool_calls=[{"id": "c", "function": {"name": "f", "arguments": "{}"}}]),
    ]
    kept = keep_words(entries, window=100_000, count=estimate_tokens)
    assert [s.n for s in kept.exchange] == [2]  # the model said no words: only the person's
    assert kept.person == ()


def test_over_the_budget_a_message_is_named_and_older_short_ones_still_fit():
    window = 10_000
    budget_chars = int(PERSON_SHARE * window) * 4
    paste = "x" * (budget_chars + 400)
    entries = [user(1, "keep answers short"), answer(2, "ok"), user(3, paste), answer(4, "ok"),
               user(5, "thanks"), answer(6, "bye")]
    kept = keep_words(entries, window=window, count=estimate_tokens)
    assert [s.n for s in kept.person] == [1]
    assert kept.left_out == (3,)
    text = render_summary(SUMMARY, kept)
    assert "Left out to keep this summary short: message 3 (read_history returns them)." in text
    assert paste not in text


def test_a_huge_last_message_is_cut_in_the_middle_with_the_way_to_read_it_whole():
    head, tail = "START " + "a" * 3000, "b" * 3000 + " END?"
    entries = [answer(1, "earlier"), user(2, head + tail)]
    kept = keep_words(entries, window=8_000, count=estimate_tokens)
    said = next(s for s in kept.exchange if s.n == 2)
    assert said.cut > 0
    assert said.text.startswith("START") and said.text.endswith("END?")
    assert "read_history(start=2, count=1) returns the whole message" in said.text


def test_pinned_messages_are_whole_and_not_repeated_among_the_persons():
    pin = user(1, "never touch prod " + "z" * 20_000)
    entries = [pin, answer(2, "ok"), user(3, "go on")]
    kept = keep_words(entries, window=16_000, count=estimate_tokens, pinned=[pin])
    assert [s.n for s in kept.pinned] == [1] and kept.pinned[0].text == pin.message["content"]
    assert 1 not in [s.n for s in kept.person] and 1 not in kept.left_out
    text = render_summary(SUMMARY, kept)
    assert text.index(PINNED_TITLE) < text.index(PERSON_TITLE) < text.index(EXCHANGE_TITLE)


def test_the_summary_keeps_the_seed_sections_in_order_then_the_new_ones_then_the_words():
    entries = [user(7, 'say "hi" <b>'), answer(8, "hi")]
    kept = keep_words(entries, window=100_000, count=estimate_tokens, last=40)
    summary = Summary("g", "i", ["d"], ["c"], "s", "n", ["f"], errors_and_fixes=["E1 → fixed"],
                      constraints_and_preferences=["no tabs"], pending_tasks=["docs"])
    message = summary_message(summary, kept)
    text = message["content"]
    titles = ["## Goal", "## Instruction", "## Discoveries", "## Completed", "## Current status",
              "## Likely next work", "## Relevant files/directories", "## Errors and fixes",
              "## Constraints and preferences", "## Pending tasks", PERSON_TITLE, EXCHANGE_TITLE,
              HISTORY_TITLE]
    positions = [text.index(t) for t in titles]
    assert positions == sorted(positions)
    assert tagged(kept.exchange[1]) in text
    assert '<message n="8" role="assistant" time="2025-05-01T10:00:00.000+00:00">\nhi\n' in text
    assert 'search_history(query)' in text and "read_history(start, count)" in text
    assert "messages 1–40" in text
    assert message["compaction"]["verbatim"] == {
        "person": [], "left_out": [], "exchange": [7, 8], "pinned": [], "first": 7, "last": 40}
    assert message["compaction"]["pending_tasks"] == ["docs"]
    assert Summary.from_dict(message["compaction"]) == summary


def test_without_kept_words_the_summary_is_the_models_sections_only():
    text = render_summary(SUMMARY)
    assert PERSON_TITLE not in text and HISTORY_TITLE not in text
    assert "## Pending tasks\n(none)" in text


def test_images_and_tool_calls_are_named_not_dumped():
    png = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(300)).decode()
    entries = [user(1, [{"type": "text", "text": "see this"},
                        {"type": "image_url", "image_url": {"url": png}}]),
               answer(2, "looking", tool_calls=[
                   {"id": "c1", "function": {"name": "read_fd", "arguments": '{"fd": "fd:1"}'}}])]
    kept = keep_words(entries, window=100_000, count=estimate_tokens)
    person = kept.exchange[0].text
    assert person.startswith("see this\n[image") and "base64" not in person
    assert kept.exchange[1].text == 'looking\n[called read_fd({"fd": "fd:1"})]'


def test_a_small_room_keeps_pins_whole_then_the_exchange_then_the_newest_words():
    words = "word " * 40  # ~50 tokens each
    entries = [user(1, "one " + words), answer(2, "ok"), user(3, "three " + words),
               answer(4, "ok"), user(5, "five " + words), answer(6, "the answer " + words),
               user(7, "seven " + words)]
    pinned = [HistoryEntry(2, "assistant", entries[1].message, TIME, pinned=True)]
    roomy = keep_words(entries, window=100_000, count=estimate_tokens, pinned=pinned)
    assert [s.n for s in roomy.person] == [5, 3, 1] and not roomy.left_out
    tight = keep_words(entries, window=100_000, count=estimate_tokens, pinned=pinned,
                       room=260)
    assert [s.n for s in tight.pinned] == [2]
    assert [s.n for s in tight.exchange] == [6, 7] and not any(s.cut for s in tight.exchange)
    assert [s.n for s in tight.person] == [5] and tight.left_out == (1, 3)
    # no room at all: the person's words are named, the exchange is cut to its ends
    none = keep_words(entries, window=100_000, count=estimate_tokens, pinned=pinned, room=-50)
    assert none.person == () and none.left_out == (1, 3, 5)
    assert [s.n for s in none.pinned] == [2]


def test_pins_too_large_for_the_room_are_cut_to_their_ends_and_named():
    huge = "start of the pasted log " + "line of the log\n" * 4_000 + "the question at the end"
    entries = [user(1, huge), answer(2, "ok"), user(3, "go on")]
    pinned = [HistoryEntry(1, "user", entries[0].message, TIME, pinned=True)]
    roomy = keep_words(entries, window=1_000_000, count=estimate_tokens, pinned=pinned)
    assert [s.text for s in roomy.pinned] == [huge] and not roomy.pinned[0].cut
    tight = keep_words(entries, window=100_000, count=estimate_tokens, pinned=pinned, room=2_000)
    [pin] = tight.pinned
    assert pin.cut > 0 and estimate_tokens(pin.text) < 2_100  # the room, give or take the note
    assert pin.text.startswith("start of the pasted log")
    assert pin.text.endswith("the question at the end")
    assert "read_history(start=1, count=1) returns the whole message" in pin.text
    # without a known room, half the window is the most pins take
    small = keep_words(entries, window=8_000, count=estimate_tokens, pinned=pinned)
    assert small.pinned[0].cut > 0 and estimate_tokens(small.pinned[0].text) < 4_100
