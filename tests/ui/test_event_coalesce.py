"""The bridge joins bursts of deltas before the transcript sees them: same text, same order."""

from __future__ import annotations

import time

from selfref_tui.agent import events as ev
from selfref_tui.ui.event_bridge import _coalesce


def test_runs_of_one_kind_key_and_call_join_and_nothing_else_moves():
    events = [
        ev.TextDelta(key="k", text="a"),
        ev.TextDelta(key="k", text="b"),
        ev.TextDelta(key="k::fork::1", text="c"),
        ev.TextDelta(key="k", text="d"),
        ev.ToolCallStarted(key="k", call_id="1", name="t"),
        ev.ToolCallArgumentsDelta(key="k", call_id="1", delta='{"x'),
        ev.ToolCallArgumentsDelta(key="k", call_id="1", delta='": 1'),
        ev.ToolCallArgumentsDelta(key="k", call_id="2", delta="{"),
        ev.ToolCallArgumentsDelta(key="k", call_id="1", delta="}"),
        ev.TextDelta(key="k", text="e"),
    ]
    assert _coalesce(events) == [
        ev.TextDelta(key="k", text="ab"),
        ev.TextDelta(key="k::fork::1", text="c"),
        ev.TextDelta(key="k", text="d"),
        ev.ToolCallStarted(key="k", call_id="1", name="t"),
        ev.ToolCallArgumentsDelta(key="k", call_id="1", delta='{"x": 1'),
        ev.ToolCallArgumentsDelta(key="k", call_id="2", delta="{"),
        ev.ToolCallArgumentsDelta(key="k", call_id="1", delta="}"),
        ev.TextDelta(key="k", text="e"),
    ]


def test_a_huge_burst_joins_in_linear_time():
    # 200,000 one-token deltas (a 1 MB answer read in one go): joined once, not
    # re-copied per delta (that took minutes; this takes well under a second).
    burst = [ev.TextDelta(key="k", text="word ") for _ in range(200_000)]
    started = time.perf_counter()
    (joined,) = _coalesce(burst)
    assert joined.text == "word " * 200_000
    assert time.perf_counter() - started < 10
