"""The question broker pairs QuestionAsked with the person's answer."""

from __future__ import annotations

import asyncio

from selfref_tui.agent import events as ev
from selfref_tui.agent.turn.questions import QuestionBroker


async def test_without_a_front_end_the_default_comes_back_at_once():
    events: list = []
    broker = QuestionBroker(events.append)
    assert await broker.ask("main", "Overwrite?", ("overwrite", "keep"), "keep") == "keep"
    assert events == []


async def test_an_answer_resolves_the_waiting_tool_once():
    events: list = []
    broker = QuestionBroker(events.append)
    broker.interactive = True
    waiting = asyncio.create_task(broker.ask("main", "Overwrite?", ("overwrite", "keep"), "keep"))
    await asyncio.sleep(0)
    (asked,) = events
    assert isinstance(asked, ev.QuestionAsked) and asked.choices == ("overwrite", "keep")
    assert broker.pending == [asked.question_id]
    assert broker.answer(asked.question_id, "overwrite")
    assert await waiting == "overwrite"
    assert not broker.answer(asked.question_id, "keep")  # answered and gone
    assert broker.pending == []


async def test_a_cancelled_question_is_forgotten():
    broker = QuestionBroker(lambda _e: None)
    broker.interactive = True
    waiting = asyncio.create_task(broker.ask("main", "?", ("a",), "a"))
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    assert broker.pending == [] and not broker.answer("q1", "a")
