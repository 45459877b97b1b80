"""``review_compaction``: the summary applied is the one the person accepted (real HTTP)."""

from __future__ import annotations

import json

from selfref_tui.agent import events as ev
from selfref_tui.agent.tools.review import (
    CANCELLED_NOTE,
    REVIEW_CHOICES,
    accept_answer,
    parse_review,
)
from selfref_tui.agent.turn.router import AgentInputRouter
from selfref_tui.demo.script import Reply, ToolCall

from .helpers import wait_until

COMPACT = {
    "goal": "Plan the trip", "instruction": "Be brief", "discoveries": ["trains are slow"],
    "completed": ["booked"], "current_status": "packing", "likely_next_work": "leave",
    "relevant_files_directories": [], "remember": ["The person likes trains."],
}


def compacting(body, index):
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(text=f"The tool said: {last['content']}")
    if any("[Context summary]" in str(m.get("content")) for m in body["messages"]):
        return Reply(text="Continuing from the summary.")
    return Reply(tool_calls=[ToolCall("compact", COMPACT, id="k")])


async def review(h, answer) -> None:
    """A turn that compacts, with the person answering the review with ``answer(text)``."""
    h.agent.settings = h.with_settings(review_compaction=True).settings
    h.agent.interactive = True
    router = AgentInputRouter(h.agent)
    assert router.submit("compact please") == "started"
    await wait_until(lambda: h.of(ev.QuestionAsked), what="the review")
    question = h.of(ev.QuestionAsked)[0]
    assert question.choices == REVIEW_CHOICES
    text = parse_review(question.prompt)
    assert text.startswith("## Goal\nPlan the trip\n") and "## Remember\n- The person" in text
    assert h.reload().summary is None  # nothing applied while the person reads
    router.answer(question.question_id, answer(text))
    await router.wait_idle()
    assert router.outcomes == ["done"]


async def test_the_summary_the_person_edited_is_the_one_applied(harness):
    def edit(text: str) -> str:
        text = text.replace("Plan the trip", "Plan the trip to Lyon")
        return accept_answer(text.replace("- The person likes trains.", "- Trains, not planes."))

    async with harness(compacting) as h:
        await review(h, edit)
        sent = h.server.requests[-1]["messages"][1]["content"]
        assert "## Goal\nPlan the trip to Lyon" in sent
    memory = h.reload()
    assert memory.summary["goal"] == "Plan the trip to Lyon"
    assert memory.summary["discoveries"] == ["trains are slow"]
    (fact,) = memory.experiences
    assert fact["text"] == "Trains, not planes." and fact["source"] == "compaction"


async def test_accepting_unchanged_applies_the_model_s_summary(harness):
    async with harness(compacting) as h:
        await review(h, lambda text: accept_answer())
    memory = h.reload()
    assert memory.summary["goal"] == "Plan the trip"
    assert [e["text"] for e in memory.experiences] == ["The person likes trains."]


async def test_cancelling_replaces_nothing_and_tells_the_model(harness):
    async with harness(compacting) as h:
        await review(h, lambda text: "cancel")
        result = json.loads(next(m for m in h.server.requests[-1]["messages"]
                                 if m["role"] == "tool")["content"])
        assert result == {"status": "cancelled", "note": CANCELLED_NOTE}
        assert not h.of(ev.CompactionApplied)
    memory = h.reload()
    assert memory.summary is None and memory.experiences == []
    assert [m["role"] for m in memory.messages] == ["user", "assistant", "tool", "assistant"]


async def test_a_run_that_cannot_ask_applies_without_review(harness):
    async with harness(compacting) as h:
        h.agent.settings = h.with_settings(review_compaction=True).settings
        assert await h.agent.run_turn("main", "compact please") == "done"
        assert not h.of(ev.QuestionAsked)
    assert h.reload().summary["goal"] == "Plan the trip"


async def test_the_demo_model_says_a_cancelled_compaction_was_cancelled(harness):
    from selfref_tui.demo.script import demo_script

    async with harness(demo_script) as h:
        h.agent.settings = h.with_settings(review_compaction=True).settings
        h.agent.interactive = True
        router = AgentInputRouter(h.agent)
        assert router.submit("compact the context") == "started"
        await wait_until(lambda: h.of(ev.QuestionAsked), what="the review")
        router.answer(h.of(ev.QuestionAsked)[0].question_id, "cancel")
        await router.wait_idle()
        said = "".join(e.text for e in h.of(ev.TextDelta))
        assert "cancelled the compaction" in said and "queued" not in said
        assert not h.of(ev.CompactionApplied)


async def test_the_compact_calls_time_leaves_out_the_review_the_person_read(harness):
    """"compact ✓ done 68.40s": the card counted the minute the review dialog stood open.
    The call's time is the tool's; the seconds its question waits are the person's."""
    now = [1000.0]  # a clock that moves only when the test moves it

    def reading(text: str) -> str:
        now[0] += 60  # the person reads the summary
        return accept_answer(text)

    async with harness(compacting) as h:
        h.agent.tool_clock = lambda: now[0]
        await review(h, reading)
        ended = [e for e in h.of(ev.ToolCallEnded) if e.name == "compact"]
        assert [e.duration_s for e in ended] == [0.0]  # the clock moved only while asked
        stored = [m for m in h.reload().history if m.get("role") == "tool"]
        assert stored[0].get("duration_s") == 0.0  # as a restart shows it
