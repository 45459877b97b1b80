"""When the runtime asks for a compaction, and what it does when none comes (over HTTP)."""

from __future__ import annotations

import pytest

from selfref_tui.agent import events as ev
from selfref_tui.agent.abort import CLOSING_REASON, DEFAULT_REASON
from selfref_tui.context.compaction_point import COMPACTION_RESERVE
from selfref_tui.demo.script import Reply, ToolCall

ASKS = "call the `compact` tool now"
SUMMARY = {
    "goal": "Map the lighthouses", "instruction": "Be brief", "discoveries": ["d1"],
    "completed": ["c1"], "current_status": "summarised", "likely_next_work": "continue",
    "relevant_files_directories": [],
}


def _exact(h) -> None:
    """Exact token counts from the start (no estimate-to-exact switch mid-test)."""
    from selfref_tui.selfref.encodings import load_encoder

    h.agent.tokens.set_encoder(load_encoder("gpt-4o-mini"))


def _asked(request: dict) -> int:
    """How many compaction notes a request carries (a note stays in the transcript)."""
    return sum(str(m.get("content")).lower().count(ASKS) for m in request["messages"])


def _tools(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


async def test_the_reminder_comes_inside_a_tool_loop_with_room_for_the_call(harness):
    """A long answer with a tool call pushes the context past the point: the very next
    compile of the same turn asks, although the ratio (0.95) alone would not yet."""
    long_text = "The lighthouse keeper logged the weather every hour. " * 1100
    script = [Reply(text=long_text, tool_calls=[ToolCall("inspect_context", {}, id="i1")]),
              Reply(tool_calls=[ToolCall("compact", SUMMARY, id="k1")]),
              Reply(text="Done.")]
    async with harness(script, context_window=16_000) as h:
        h.agent.compaction.ratio = 0.95
        _exact(h)
        assert await h.agent.run_turn("main", "Map the lighthouses.") == "done"
        first, second = h.server.requests[0], h.server.requests[1]
        assert not _asked(first)
        usage = [e.tokens for e in h.of(ev.ContextUsage)]
        assert 16_000 - COMPACTION_RESERVE <= usage[1] < 0.95 * 16_000
        assert _asked(second) and second["messages"][-2]["role"] == "tool"
        assert len(h.of(ev.CompactionApplied)) == 1 and not h.of(ev.CompactionFailed)
        assert not _asked(h.server.requests[2])


async def test_a_requested_compaction_the_model_ignores_is_said_once_and_not_asked_again(
        harness):
    script = [Reply(text="Sure, I will keep going."), Reply(text="Hello again.")]
    async with harness(script) as h:
        h.agent.request_compaction("main")
        assert await h.agent.run_turn("main", None) == "done"
        failed = h.of(ev.CompactionFailed)
        assert [(f.asked, f.reason) for f in failed] == [
            ("requested", "the model answered without compacting (it did not call `compact`)")]
        assert await h.agent.run_turn("main", "hi") == "done"
        assert len(h.of(ev.CompactionFailed)) == 1
        assert _asked(h.server.requests[1]) == 1  # the first note, kept; no new one


async def test_an_ignored_reminder_is_said_once_and_stays_given(harness):
    big = "lorem ipsum dolor sit amet " * 680
    script = [Reply(text="Not now."), Reply(text="Still not."), Reply(text="No.")]
    async with harness(script, context_window=6000) as h:
        _exact(h)
        assert await h.agent.run_turn("main", big) == "done"
        assert _asked(h.server.requests[0])
        assert [f.asked for f in h.of(ev.CompactionFailed)] == ["auto"]
        assert await h.agent.run_turn("main", "and now?") == "done"
        assert await h.agent.run_turn("main", "and now?") == "done"
        # Past the window by now (the oldest messages are left out): still no new note.
        assert len(h.of(ev.CompactionFailed)) == 1
    notes = [m for m in h.reload().messages if m.get("runtime_note")]
    assert len(notes) == 1 and ASKS in notes[0]["content"].lower()


async def test_invalid_compact_calls_are_said_once_and_the_tool_is_withdrawn(harness):
    bad = ToolCall("compact", {"instruction": "no goal"}, id="k1")
    worse = ToolCall("compact", "{not json", id="k2")
    script = [Reply(tool_calls=[bad]), Reply(tool_calls=[worse]), Reply(text="I give up.")]
    async with harness(script) as h:
        h.agent.request_compaction("main")
        assert await h.agent.run_turn("main", None) == "done"
        assert "compact" in _tools(h.server.requests[1])
        assert "compact" not in _tools(h.server.requests[2])  # no third invalid call
        assert len(h.server.requests) == 3
        failed = h.of(ev.CompactionFailed)
        assert len(failed) == 1 and failed[0].asked == "requested"
        assert failed[0].reason.startswith("the model's `compact` call was invalid (")
        assert "arguments are not valid JSON" in failed[0].reason
        assert not h.of(ev.CompactionApplied)


async def test_an_invalid_call_fixed_at_the_next_step_is_no_failure(harness):
    script = [Reply(tool_calls=[ToolCall("compact", {}, id="k1")]),
              Reply(tool_calls=[ToolCall("compact", SUMMARY, id="k2")]), Reply(text="ok")]
    async with harness(script) as h:
        h.agent.request_compaction("main")
        assert await h.agent.run_turn("main", None) == "done"
        assert len(h.of(ev.CompactionApplied)) == 1 and not h.of(ev.CompactionFailed)


async def test_a_compaction_that_leaves_the_context_full_is_not_asked_for_again(harness):
    """A system prompt that fills most of the window: the summary cannot bring the context
    under the point, so the runtime says so once and never asks again for that crossing
    (the loop some agents fall into: compact, still full, compact, ...)."""
    from selfref_tui.config import AgentSettings

    prompt = "You are a careful agent. Follow the house style in every answer. " * 330
    settings = AgentSettings(base_system_prompt=prompt)
    script = [Reply(tool_calls=[ToolCall("compact", SUMMARY, id="k1")]),
              Reply(text="Continuing."), Reply(text="Still here."), Reply(text="Yes.")]
    async with harness(script, settings=settings, context_window=8_000) as h:
        _exact(h)
        assert await h.agent.run_turn("main", "Begin.") == "done"
        assert _asked(h.server.requests[0])
        full = [n for n in h.of(ev.Notice) if "still" in n.message]
        assert len(full) == 1 and full[0].message.startswith("the context is still ")
        assert "another summary would not make it smaller" in str(h.server.requests[1])
        assert await h.agent.run_turn("main", "Next.") == "done"
        assert await h.agent.run_turn("main", "Next.") == "done"
        for request in h.server.requests[1:]:
            assert _asked(request) == 0  # the summary replaced the note; none came after
        assert len(h.of(ev.CompactionApplied)) == 1 and not h.of(ev.CompactionFailed)


@pytest.mark.parametrize(("ending", "again"), [
    ("killed", True),  # the log ends with the call, no result
    (CLOSING_REASON, True),  # the app quit with the review open
    ("ended by SIGTERM", True),  # `ask` stopped by `timeout`
    (DEFAULT_REASON, False),  # the person pressed Esc: their decision
])
async def test_a_reminder_whose_compaction_the_programs_end_cut_short_is_given_again(
        harness, tmp_path, ending, again):
    """Killed or quit while the reminder's `compact` call ran (a review dialog open, say):
    nobody decided against compacting, so the next turn asks again, where a spent
    reminder left the context past the point, never compacted. A compaction the person
    stopped is not asked for again in that crossing."""
    from selfref_tui.agent.turn.compaction import AUTO_COMPACT_NOTE, AUTO_NOTE_KIND, runtime_note
    from selfref_tui.context.mutations import (
        AssistantMessageMutation,
        ToolCancelledMutation,
        UserMessageMutation,
    )
    from selfref_tui.selfref import SelfReference

    big = "lorem ipsum dolor sit amet " * 680  # past 80 % of 6,000 with the tools
    call = {"id": "k1", "type": "function",
            "function": {"name": "compact", "arguments": '{"goal": "g"}'}}
    stored = [UserMessageMutation({"role": "user", "content": big}),
              runtime_note(AUTO_COMPACT_NOTE.format(tokens=5000, window=6000, percent=83),
                           AUTO_NOTE_KIND),
              AssistantMessageMutation(tool_calls=[call])]
    if ending != "killed":
        stored.append(ToolCancelledMutation("k1", "compact", ending))
    with SelfReference(tmp_path / "data") as store:  # the harness's store
        store.open("main").commit(stored)

    def model(body: dict, index: int) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(text="Done.")
        if _asked(body) == 2:  # the old note and a new one
            return Reply(tool_calls=[ToolCall("compact", SUMMARY, id="k2")])
        return Reply(text="Noted.")

    async with harness(model, context_window=6000) as h:
        _exact(h)
        assert await h.agent.run_turn("main", "and now?") == "done"
        assert _asked(h.server.requests[0]) == (2 if again else 1)
        assert len(h.of(ev.CompactionApplied)) == (1 if again else 0)

