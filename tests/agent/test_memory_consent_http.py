"""``memory_writes = "ask"``: the model's remember/forget wait for the person's yes (real HTTP)."""

from __future__ import annotations

import json

from selfref_tui.agent import events as ev
from selfref_tui.agent.tools.consent import (
    CONSENT_CHOICES,
    DENIED_REFUSAL,
    NOT_ASKED_REFUSAL,
    parse_consent,
)
from selfref_tui.agent.turn.router import AgentInputRouter
from selfref_tui.demo.script import Reply, ToolCall

from .helpers import wait_until


def remembering(text: str = "The person likes trains."):
    """A model that calls remember once, then answers with what the tool said."""

    def script(body, index):
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(text=f"The tool said: {last['content']}")
        return Reply(tool_calls=[ToolCall("remember", {"text": text}, id="r1")])

    return script


def tool_result(h) -> str:
    return next(m for m in h.server.requests[-1]["messages"] if m["role"] == "tool")["content"]


async def test_a_run_that_cannot_ask_refuses_and_tells_the_model_why(harness):
    async with harness(remembering()) as h:
        h.with_settings(memory_writes="ask")
        h.agent.settings = h.settings
        assert await h.agent.run_turn("main", "I like trains") == "done"
        said = tool_result(h)
        assert NOT_ASKED_REFUSAL in said and "--allow-memory" in said
        assert not h.of(ev.ExperienceRemembered) and not h.of(ev.QuestionAsked)
    assert h.reload().experiences == []


async def test_allow_memory_lets_a_run_that_cannot_ask_remember(harness):
    async with harness(remembering()) as h:
        h.agent.settings = h.with_settings(memory_writes="ask", allow_memory=True).settings
        assert await h.agent.run_turn("main", "I like trains") == "done"
        assert "exp_001" in tool_result(h)
    (exp,) = h.reload().experiences
    assert exp["text"] == "The person likes trains."
    assert exp["source"] == "agent" and exp["message"] == 2  # the answer that called it


async def _asked(h, text: str) -> tuple[AgentInputRouter, ev.QuestionAsked]:
    h.agent.interactive = True
    router = AgentInputRouter(h.agent)
    assert router.submit(text) == "started"
    await wait_until(lambda: h.of(ev.QuestionAsked), what="the consent question")
    return router, h.of(ev.QuestionAsked)[0]


async def test_the_person_allows_a_remember(harness):
    async with harness(remembering("\x1b]52;c;aGk=\x07 likes trains")) as h:
        h.agent.settings = h.with_settings(memory_writes="ask").settings
        router, question = await _asked(h, "I like trains")
        assert question.choices == CONSENT_CHOICES
        consent = parse_consent(question.prompt)
        assert consent.action == "remember" and consent.text.endswith("likes trains")
        assert h.reload().experiences == []  # nothing stored while the person reads
        router.answer(question.question_id, "allow")
        await router.wait_idle()
        assert json.loads(tool_result(h))["experience_id"] == "exp_001"
    assert [e["source"] for e in h.reload().experiences] == ["agent"]


async def test_the_person_denies_a_forget_and_the_model_is_told(harness):
    def script(body, index):
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(text="ok")
        return Reply(tool_calls=[ToolCall("forget", {"experience_id": "exp_001"}, id="f1")])

    async with harness(script) as h:
        h.agent.remember_experience("main", "The person likes trains.")
        h.agent.settings = h.with_settings(memory_writes="ask").settings
        router, question = await _asked(h, "forget the trains")
        assert parse_consent(question.prompt).text == "exp_001: The person likes trains."
        router.answer(question.question_id, "deny")
        await router.wait_idle()
        assert DENIED_REFUSAL in tool_result(h)
    assert [e["text"] for e in h.reload().experiences] == ["The person likes trains."]


async def test_a_summary_s_facts_are_asked_about_too(harness):
    compact = {"goal": "g", "instruction": "i", "discoveries": [], "completed": [],
               "current_status": "s", "likely_next_work": "n", "relevant_files_directories": [],
               "remember": ["kept by the summary"]}
    script = [Reply(tool_calls=[ToolCall("compact", compact, id="k")]), Reply(text="done")]
    async with harness(script) as h:
        h.agent.settings = h.with_settings(memory_writes="ask").settings
        assert await h.agent.run_turn("main", "compact please") == "done"
    memory = h.reload()
    assert memory.summary["goal"] == "g" and memory.experiences == []
    # the call's result (kept in the history the summary replaced) says why
    result = json.loads(next(m for m in memory.history if m.get("role") == "tool")["content"])
    assert result["status"] == "queued" and NOT_ASKED_REFUSAL in result["remember"]
