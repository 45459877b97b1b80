"""The bridge joins bursts of deltas before the transcript sees them: same text, same order."""

from __future__ import annotations

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


class _Piece(str):
    """A delta's text that counts the characters each ``+`` with it copies.

    Timing the join would depend on the machine; counting the copying does not.
    """

    copied = 0

    def __add__(self, other: str) -> str:
        joined = str.__add__(self, other)
        _Piece.copied += len(joined)
        return joined

    def __radd__(self, other: str) -> str:
        joined = str.__add__(other, self)
        _Piece.copied += len(joined)
        return joined


def test_a_huge_burst_is_joined_once_not_copied_per_delta():
    # 200,000 one-token deltas (a 1 MB answer read in one go). Adding each delta
    # to the run so far copied the run every time: about 10**11 characters here
    # (minutes). However it is joined, the copying must stay within the answer's
    # size, not grow with its square.
    _Piece.copied = 0
    burst = [ev.TextDelta(key="k", text=_Piece("word ")) for _ in range(200_000)]
    (joined,) = _coalesce(burst)
    assert joined.text == "word " * 200_000
    assert _Piece.copied <= len(joined.text)
