"""The next request's tokens by part, after real turns over HTTP (the count calibrated)."""

from __future__ import annotations

from selfref_tui.context.breakdown import PARTS
from selfref_tui.demo.script import Reply, ToolCall

COMPACT = {
    "goal": "Plan the trip", "instruction": "Be brief", "discoveries": ["trains are slow"],
    "completed": ["booked"], "current_status": "packing", "likely_next_work": "leave",
    "relevant_files_directories": [], "remember": [],
}


async def test_the_breakdown_of_the_next_request_sums_to_its_total(harness):
    script = [Reply(tool_calls=[ToolCall("remember", {"text": "The person likes trains."},
                                         id="r")]),
              Reply(tool_calls=[ToolCall("compact", COMPACT, id="k")]),
              Reply(text="Packed and ready.", usage={"prompt_tokens": 4321,
                                                     "completion_tokens": 5,
                                                     "total_tokens": 4326})]
    async with harness(script, context_window=32_000) as h:
        assert await h.agent.run_turn("main", "plan my trip " * 40) == "done"
        plan = h.agent.preview_request("main")
        assert not plan.estimated  # the server's count calibrated ours: parts are scaled
        parts = plan.breakdown.parts
        assert list(parts) == list(PARTS)
        assert sum(parts.values()) == plan.tokens == plan.breakdown.total
        assert parts["experiences"] > 0 and parts["summary"] > 0 and parts["tool_schemas"] > 0
        assert parts["images"] == 0
        # what auto-compaction does next, in the words `context show` prints
        assert plan.compacts_at == 25_600
        assert plan.compaction.startswith("compacts at 80 %: 25,600 tokens (")
