"""Which compaction notes the next request carries, and that "once" survives a restart."""

from __future__ import annotations

from selfref_tui.agent.turn.compaction import (
    AFTER_COMPACT_NOTE,
    AUTO_COMPACT_NOTE,
    AUTO_NOTE_KIND,
    REQUESTED_COMPACT_NOTE,
    RUNTIME_NOTE,
    SUMMARY_GUIDE,
    CompactionPolicy,
    runtime_note,
)
from selfref_tui.context.compaction_point import COMPACTION_RESERVE
from selfref_tui.context.mutations import ContextSummaryMutation, UserMessageMutation


def _user(text: str) -> dict:
    return {"role": "user", "content": text}


def test_auto_note_only_past_the_threshold_and_only_once_per_transcript():
    policy = CompactionPolicy(0.8)
    stored = [{"role": "system", "content": ""}, _user("hi")]
    assert policy.auto_note("main", 79_999, 100_000, stored, []) is None
    note = policy.auto_note("main", 80_000, 100_000, stored, [])
    assert note is not None and note.message[RUNTIME_NOTE] == AUTO_NOTE_KIND
    assert "80000 of 100000 tokens (80%)" in note.message["content"]
    stored.append(dict(note.message))  # the loop commits it with the request
    assert policy.auto_note("main", 90_000, 100_000, stored, []) is None
    # A new process (a fresh policy) reads the same stored transcript: still once.
    assert CompactionPolicy(0.8).auto_note("main", 95_000, 100_000, stored, []) is None
    # A compaction replaces the working transcript: the next crossing asks again.
    policy.forget("main")
    compacted = [stored[0], _user("summary")]
    assert policy.auto_note("main", 85_000, 100_000, compacted, []) is not None


def test_no_reminder_stacked_on_another_note_and_none_when_off():
    stored = [_user("hi")]
    requested = [runtime_note(REQUESTED_COMPACT_NOTE)]
    assert CompactionPolicy(0.8).auto_note("k", 99, 100, stored, requested) is None
    assert CompactionPolicy(0.0).auto_note("k", 99, 100, stored, []) is None
    person = [UserMessageMutation(_user("more"))]
    assert CompactionPolicy(0.8).auto_note("k", 99, 100, stored, person) is not None


def test_the_reminder_leaves_room_for_the_compaction_call_itself():
    # 0.95 of 16,000 is 15,200, which would leave 800 tokens for the note and the
    # summary the model writes: the reminder comes at 16,000 - 3,000 instead.
    policy = CompactionPolicy(0.95)
    assert policy.threshold(16_000) == 16_000 - COMPACTION_RESERVE
    stored = [_user("hi")]
    assert policy.auto_note("k", 12_999, 16_000, stored, []) is None
    assert policy.auto_note("k", 13_000, 16_000, stored, []) is not None
    # On a small window the reserve is at most a quarter of it; the ratio still rules
    # where it comes first.
    assert policy.threshold(4_096) == 3_072
    assert CompactionPolicy(0.5).threshold(4_096) == 2_048
    assert CompactionPolicy(0.8).threshold(128_000) == 102_400


def test_a_compaction_that_leaves_the_context_full_ends_the_crossing():
    policy = CompactionPolicy(0.8)
    after = CompactionPolicy.after_compaction([ContextSummaryMutation({"role": "user"})])
    assert after is not None
    assert policy.still_full(after, 79_000, 100_000) is None
    full = policy.still_full(after, 85_000, 100_000)
    assert full is not None and full.message[RUNTIME_NOTE] == AUTO_NOTE_KIND
    assert full.message["content"].startswith(AFTER_COMPACT_NOTE)
    assert "another summary would not make it smaller" in full.message["content"]
    # Stored, it is this crossing's reminder: no new one until the next compaction.
    stored = [_user("summary"), dict(full.message)]
    assert policy.auto_note("k", 90_000, 100_000, stored, []) is None


def test_the_persons_focus_reaches_the_requested_note():
    policy = CompactionPolicy(0.8)
    policy.request("k", "  keep the API\n decisions ")
    note = policy.take_request("k", False)
    assert note is not None
    assert note.message["content"].startswith(REQUESTED_COMPACT_NOTE)
    assert note.message["content"].endswith("focus on: keep the API decisions")
    policy.request("k")
    assert policy.take_request("k", False).message["content"] == REQUESTED_COMPACT_NOTE


def test_every_note_says_what_the_summary_must_hold():
    from selfref_tui.agent.turn.overflow import OVERFLOW_COMPACT_NOTE

    for note in (AUTO_COMPACT_NOTE, REQUESTED_COMPACT_NOTE, OVERFLOW_COMPACT_NOTE):
        assert SUMMARY_GUIDE in note
    for part in ("errors and fixes", "constraints and preferences", "pending tasks",
                 "verbatim", "search_history"):
        assert part in SUMMARY_GUIDE


def test_a_request_waits_while_a_compaction_is_queued_then_is_taken_once():
    policy = CompactionPolicy(0.8)
    assert policy.take_request("k", False) is None
    policy.request("k")
    assert policy.is_requested("k")
    assert policy.take_request("k", True) is None and policy.is_requested("k")
    note = policy.take_request("k", False)
    assert note is not None and note.message["content"] == REQUESTED_COMPACT_NOTE
    assert policy.take_request("k", False) is None


def test_after_compaction_note_follows_a_summary_only():
    assert CompactionPolicy.after_compaction([UserMessageMutation(_user("x"))]) is None
    summary = ContextSummaryMutation({"role": "user", "content": "s"})
    note = CompactionPolicy.after_compaction([summary])
    assert note is not None and note.message["content"] == AFTER_COMPACT_NOTE


async def test_two_processes_in_a_row_remind_once(harness):
    """Each ``ask`` is a new process: the reminder given is read back from the store."""
    from selfref_tui.demo.script import Reply
    from selfref_tui.selfref.encodings import load_encoder

    big = "lorem ipsum dolor sit amet " * 680
    # Exact counts from the start (no estimate-to-exact switch mid-test): the request,
    # the full tool set included, is about 4,940 tokens — past 80 % of 6,000, inside the
    # window (a window under ~5,300 would offer a reduced tool set: see tools/offer.py).
    async with harness([Reply(text="Not now.")], context_window=6000) as h:
        h.agent.tokens.set_encoder(load_encoder("gpt-4o-mini"))
        assert await h.agent.run_turn("main", big) == "done"
        assert "call the `compact` tool" in h.server.requests[0]["messages"][-1]["content"].lower()
    async with harness([Reply(text="Still here.")], context_window=6000) as h2:
        h2.agent.tokens.set_encoder(load_encoder("gpt-4o-mini"))
        assert await h2.agent.run_turn("main", "and now?") == "done"
        sent = h2.server.requests[0]["messages"]
        reminders = [m for m in sent if "call the `compact` tool" in str(m["content"]).lower()]
        assert len(reminders) == 1  # the first process's, kept in the transcript; no new one
        assert sent[-1]["content"] == "and now?"
