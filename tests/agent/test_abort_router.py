"""AbortSignal and AgentInputRouter against a tiny fake agent (no network, no UI)."""

from __future__ import annotations

import asyncio

import pytest

from selfref_tui.agent.abort import AbortSignal
from selfref_tui.agent.turn.router import AgentInputRouter

from .helpers import HANG_S, wait_until


class FakeAgent:
    """Records what the router asks of it; each turn blocks until released or aborted."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str | None]] = []
        self.delivered: list[list[str]] = []
        self.release = asyncio.Event()
        self.answers: list[tuple[str, str]] = []
        self.events: list = []
        #: keys with a requested compaction that no turn has taken yet
        self.compaction: set[str] = set()
        #: per turn: whether its first step took a requested compaction
        self.compacted: list[bool] = []
        #: whether the window is large enough to offer the ``compact`` tool
        self.offers_compact = True

    def request_compaction(self, key: str, focus: str = "") -> None:
        self.compaction.add(key)
        self.focus = focus

    def compaction_requested(self, key: str) -> bool:
        return key in self.compaction

    def compact_offered(self, key: str) -> bool:
        return self.offers_compact

    def emit(self, event) -> None:
        self.events.append(event)

    async def run_turn(self, key, user_text, *, abort: AbortSignal | None = None, inbox=None):
        self.turns.append((key, user_text))
        assert abort is not None and inbox is not None
        # The first compile boundary takes a requested compaction; a turn whose
        # one step is its last never sees a request made after it began.
        self.compacted.append(key in self.compaction)
        self.compaction.discard(key)
        release = asyncio.ensure_future(self.release.wait())
        aborted = asyncio.ensure_future(abort.wait())
        await asyncio.wait({release, aborted}, return_when=asyncio.FIRST_COMPLETED)
        release.cancel()
        aborted.cancel()
        # A compile boundary: deliver what was typed meanwhile.
        self.delivered.append(inbox.drain())
        return "aborted" if abort.fired else "done"

    def answer_question(self, question_id: str, choice: str) -> bool:
        self.answers.append((question_id, choice))
        return True


async def test_signal_fire_wait_and_callbacks():
    signal = AbortSignal()
    assert not signal.fired and signal.reason == ""
    calls = []
    remove = signal.on_fire(lambda: calls.append("b"))
    signal.on_fire(lambda: calls.append("a"))
    remove()
    waiter = asyncio.create_task(signal.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    signal.fire("stop now")
    signal.fire("second reason is ignored")
    await asyncio.wait_for(waiter, HANG_S)
    assert signal.fired and signal.reason == "stop now"
    assert calls == ["a"]
    late = []
    signal.on_fire(lambda: late.append(1))
    assert late == [1]


async def test_signal_fired_before_wait_returns_at_once():
    signal = AbortSignal()
    signal.fire()
    await asyncio.wait_for(signal.wait(), HANG_S)
    assert signal.reason == "user pressed Esc"


async def test_idle_input_starts_turn_and_busy_input_is_queued():
    agent = FakeAgent()
    router = AgentInputRouter(agent, key="k1")
    assert router.submit("hello") == "started"
    await wait_until(lambda: agent.turns == [("k1", "hello")])
    assert router.busy
    assert router.submit("also this") == "queued"
    assert router.queued == ["also this"]
    agent.release.set()
    await router.wait_idle()
    # Delivered at the turn's compile boundary, so no second turn starts.
    assert agent.delivered == [["also this"]]
    assert agent.turns == [("k1", "hello")]
    assert not router.busy and router.outcomes == ["done"]


async def test_text_queued_after_last_boundary_starts_next_turn():
    agent = FakeAgent()
    router = AgentInputRouter(agent)

    original = agent.run_turn

    async def slow_end(key, text, *, abort=None, inbox=None):
        result = await original(key, text, abort=abort, inbox=inbox)
        if text == "first":
            inbox.put("late one")  # arrives after the turn's last compile boundary
            inbox.put("late two")
        return result

    agent.run_turn = slow_end
    router.submit("first")
    agent.release.set()
    await wait_until(lambda: len(agent.turns) == 2)
    await router.wait_idle()
    assert agent.turns == [("main", "first"), ("main", "late one")]
    # The second late text rides along and is delivered in the new turn.
    assert agent.delivered[-1] == ["late two"]
    assert router.outcomes == ["done", "done"]


async def test_abort_fires_signal_and_next_input_starts_normal_turn():
    agent = FakeAgent()
    router = AgentInputRouter(agent)
    assert router.abort() is False  # nothing running
    router.submit("long job")
    await wait_until(lambda: len(agent.turns) == 1)
    assert router.abort("Esc") is True
    assert router.abort("again") is False
    await router.wait_idle()
    assert router.outcomes == ["aborted"]
    agent.release.set()
    assert router.submit("next") == "started"
    await router.wait_idle()
    assert router.outcomes == ["aborted", "done"]
    assert agent.turns[-1] == ("main", "next")


async def test_key_switch_only_when_idle_and_answer_forwarded():
    agent = FakeAgent()
    router = AgentInputRouter(agent)
    router.key = "other"
    router.submit("x")
    await wait_until(lambda: router.busy)
    with pytest.raises(RuntimeError):
        router.key = "third"
    router.answer("q1", "overwrite")
    assert agent.answers == [("q1", "overwrite")]
    agent.release.set()
    await router.wait_idle()
    assert agent.turns == [("other", "x")]


async def test_crashing_agent_reports_error_and_router_recovers():
    agent = FakeAgent()

    async def boom(key, text, *, abort=None, inbox=None):
        raise ValueError("kaput")

    agent.run_turn = boom
    router = AgentInputRouter(agent)
    router.submit("x")
    await router.wait_idle()
    assert router.outcomes == ["error"]
    assert any("kaput" in getattr(e, "message", "") for e in agent.events)
    assert not router.busy


async def test_request_compaction_starts_a_textless_turn_when_idle():
    agent = FakeAgent()
    router = AgentInputRouter(agent, key="k")
    assert router.request_compaction("the API decisions") == "started"
    assert agent.focus == "the API decisions"
    await wait_until(lambda: agent.turns == [("k", None)])
    assert agent.compacted == [True]
    agent.release.set()
    await router.wait_idle()
    assert agent.turns == [("k", None)]  # no message made up, and only one turn


async def test_compaction_requested_during_a_final_step_gets_a_turn_of_its_own():
    agent = FakeAgent()
    router = AgentInputRouter(agent, key="k")
    router.submit("hello")
    await wait_until(lambda: agent.turns == [("k", "hello")])
    assert router.request_compaction() == "queued"
    agent.release.set()  # the running turn ends without another step
    await router.wait_idle()
    assert agent.turns == [("k", "hello"), ("k", None)]
    assert agent.compacted == [False, True] and not agent.compaction


async def test_compaction_requested_then_esc_waits_for_the_next_message():
    agent = FakeAgent()
    router = AgentInputRouter(agent, key="k")
    router.submit("hello")
    await wait_until(lambda: agent.turns == [("k", "hello")])
    assert router.request_compaction() == "queued"
    assert router.abort()
    await router.wait_idle()
    assert agent.turns == [("k", "hello")]  # Esc stops: no turn starts by itself
    router.submit("next")
    await wait_until(lambda: len(agent.turns) == 2)
    assert agent.compacted == [False, True]  # the request went with the next message
    agent.release.set()
    await router.wait_idle()


async def test_compact_is_refused_up_front_when_the_window_cannot_offer_the_tool():
    agent = FakeAgent()
    agent.offers_compact = False
    router = AgentInputRouter(agent, key="k")
    assert router.request_compaction() == "refused"
    assert not router.busy and agent.turns == [] and not agent.compaction
    router.submit("hello")
    await wait_until(lambda: agent.turns == [("k", "hello")])
    assert router.request_compaction() == "refused"  # during a turn: no turn after it
    agent.release.set()
    await router.wait_idle()
    assert agent.turns == [("k", "hello")] and not agent.compaction
