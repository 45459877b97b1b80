"""A pinned message is in the request after a compaction, verbatim (real HTTP)."""

from __future__ import annotations

from selfref_tui.demo.script import Reply, ToolCall

COMPACT = {
    "goal": "Plan the trip", "instruction": "Be brief", "discoveries": [], "completed": [],
    "current_status": "packing", "likely_next_work": "leave", "relevant_files_directories": [],
}
PINNED = "Never book a flight before 9 am; trains are fine any time."


def model(body, index):
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return Reply(text="ok")
    if "compact now" in str(messages[-1].get("content")):
        return Reply(tool_calls=[ToolCall("compact", COMPACT, id=f"k{index}")])
    return Reply(text=f"noted ({index})")


def summary_sent(h) -> str:
    """The summary message of the last request (the first after the system prompt)."""
    return h.server.requests[-1]["messages"][1]["content"]


async def test_a_pinned_message_survives_every_compaction_verbatim(harness):
    async with harness(model) as h:
        assert await h.agent.run_turn("main", PINNED) == "done"
        assert await h.agent.run_turn("main", "and something else") == "done"
        memory = h.agent.memory("main")
        assert memory.set_pinned(1)
        assert await h.agent.run_turn("main", "compact now") == "done"
        first = summary_sent(h)
        assert "Pinned messages" in first and 'n="1"' in first and PINNED in first
        # a second compaction, long after: the pin is still carried
        for i in range(3):
            assert await h.agent.run_turn("main", f"more talk {i}") == "done"
        assert await h.agent.run_turn("main", "compact now") == "done"
        second = summary_sent(h)
        assert second != first and PINNED in second
        # unpinned: the next summary no longer carries it whole
        assert memory.set_pinned(1, False)
        assert await h.agent.run_turn("main", "compact now") == "done"
        assert "Pinned messages" not in summary_sent(h)
    assert h.reload().summary["verbatim"]["pinned"] == []


async def test_a_pinned_message_that_was_rewound_is_not_carried(harness):
    from selfref_tui.selfref.rewind import rewind

    async with harness(model) as h:
        assert await h.agent.run_turn("main", "keep the first") == "done"
        assert await h.agent.run_turn("main", PINNED) == "done"
        memory = h.agent.memory("main")
        assert memory.set_pinned(1) and memory.set_pinned(3)
        rewind(memory, 3)  # the second question and its answer leave the context
        assert await h.agent.run_turn("main", "compact now") == "done"
        sent = summary_sent(h)
        assert "keep the first" in sent and PINNED not in sent
    assert h.reload().summary["verbatim"]["pinned"] == [1]
