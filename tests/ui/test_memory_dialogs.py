"""The person's say over the agent's memory: the summary review and the memory-write consent.

Through the whole app over HTTP (the demo server scripted to call ``compact``
or ``remember``), then each dialog on its own for what it shows and its
snapshot.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from selfref_tui.agent.tools.consent import consent_prompt, parse_consent
from selfref_tui.agent.tools.review import CANCEL, accept_answer
from selfref_tui.context.summary import Summary
from selfref_tui.context.summary_edit import editable_text
from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.screens import question
from selfref_tui.ui.screens.compaction_review import CompactionReviewScreen
from selfref_tui.ui.screens.memory_consent import MemoryConsentScreen
from tests.hostile import assert_inert
from tests.selfref.helpers import reading

from .helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until

COMPACT = {
    "goal": "Plan the trip", "instruction": "Be brief", "discoveries": ["trains are slow"],
    "completed": ["booked"], "current_status": "packing", "likely_next_work": "leave",
    "relevant_files_directories": [], "remember": [],
}


def model(body: dict, index: int) -> Reply:
    """Calls compact or remember as asked, then says what its tool answered."""
    messages = body.get("messages") or []
    last = messages[-1]
    if last.get("role") == "tool":
        return Reply(text="Done.")
    if any("[Context summary]" in str(m.get("content")) for m in messages):
        return Reply(text="Continuing from the summary.")
    if "compact" in str(last.get("content")):
        return Reply(tool_calls=[ToolCall("compact", COMPACT, id="k")])
    return Reply(tool_calls=[ToolCall("remember", {"text": "The person likes trains."},
                                      id="r")])


@asynccontextmanager
async def app_asking(tmp_path: Path, text: str, screen: type, **agent: Any) -> AsyncIterator:
    """The app with ``[agent]`` settings ``agent``, after sending ``text``, its dialog open."""
    async with DemoServer(model) as url:
        app = make_app(tmp_path, url)
        app.config = replace(app.config, agent=replace(app.config.agent, **agent))
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, text)
            await wait_until(pilot, lambda: isinstance(app.screen, screen), what=screen.__name__)
            await pilot.pause(question.GRACE_S)  # the person reads it first
            yield app, pilot
            await turn_done(pilot, app)


def stored_summary(tmp_path: Path) -> dict | None:
    with reading(tmp_path / "data") as memory:
        return memory.summary


async def test_review_edit_then_accept_applies_the_edited_summary(tmp_path):
    async with app_asking(tmp_path, "compact please", CompactionReviewScreen,
                          review_compaction=True) as (app, pilot):
        review = app.screen
        assert review.editor.text.startswith("## Goal\nPlan the trip\n")
        assert stored_summary(tmp_path) is None  # nothing applied while the person reads
        await pilot.press("down", "end", *" to Lyon", "ctrl+s")
    summary = stored_summary(tmp_path)
    assert summary["goal"] == "Plan the trip to Lyon"
    assert summary["current_status"] == "packing"


async def test_review_accept_unchanged_by_its_button(tmp_path):
    async with app_asking(tmp_path, "compact please", CompactionReviewScreen,
                          review_compaction=True) as (_app, pilot):
        await pilot.click("#accept")
    assert stored_summary(tmp_path)["goal"] == "Plan the trip"


async def test_review_cancel_keeps_the_conversation(tmp_path):
    async with app_asking(tmp_path, "compact please", CompactionReviewScreen,
                          review_compaction=True) as (app, pilot):
        await pilot.press(*"typing is harmless", "escape")
    assert stored_summary(tmp_path) is None
    with reading(tmp_path / "data") as memory:
        assert [m["role"] for m in memory.messages] == ["user", "assistant", "tool", "assistant"]
    card = next(c for c in app.transcript.items_of("tool") if c.tool_name == "compact")
    assert card.status == "done"  # the model was told, in its result, that it was cancelled


async def test_keys_typed_for_the_chat_do_not_edit_the_summary(tmp_path, monkeypatch):
    monkeypatch.setattr(question, "GRACE_S", 3600.0)  # however slow the machine
    async with DemoServer(model) as url:
        app = make_app(tmp_path, url)
        app.config = replace(app.config, agent=replace(app.config.agent, review_compaction=True))
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "compact please")
            await wait_until(pilot, lambda: isinstance(app.screen, CompactionReviewScreen))
            review = app.screen
            await pilot.press(*"oops", "enter", "ctrl+s")
            assert review.editor.text == review.proposed and app.screen is review
            await pilot.press("escape")  # the way out is never held back
            await turn_done(pilot, app)
    assert stored_summary(tmp_path) is None


@pytest.mark.parametrize(("keys", "kept"), [
    (("left", "enter"), ["The person likes trains."]),
    (("d",), []), (("escape",), []), (("enter",), []),
    # Tab goes to "allow", as the hint says (it stopped on the text, where Enter did nothing)
    (("tab", "enter"), ["The person likes trains."]),
])
async def test_consent_decides_whether_the_model_remembers(tmp_path, keys, kept):
    async with app_asking(tmp_path, "I like trains", MemoryConsentScreen,
                          memory_writes="ask") as (app, pilot):
        consent = app.screen
        assert consent.consent.action == "remember"
        assert consent.consent.text == "The person likes trains."
        await pilot.press(*keys)
    with reading(tmp_path / "data") as memory:
        assert [e["text"] for e in memory.experiences] == kept
        assert all(e["source"] == "agent" for e in memory.experiences)


# ------------------------------------------------------------------ each dialog alone


class HostApp(App):
    def __init__(self, screen: Any) -> None:
        super().__init__()
        self.dialog = screen
        self.results: list[Any] = []

    def compose(self) -> ComposeResult:
        yield Static("host")

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self.results.append)


SUMMARY = Summary(
    goal="Ship the parser", instruction="Small steps, tests first",
    discoveries=["The lexer is fine", "Errors lose their line number"],
    completed=["Lexer"], current_status="Parser half done",
    likely_next_work="Error messages with line numbers",
    relevant_files_directories=["src/parse.py", "tests/test_parse.py"],
    constraints_and_preferences=["No new dependencies"],
    remember=["The person wants tests first."])


async def test_the_review_answers_what_was_edited(monkeypatch):
    monkeypatch.setattr(question, "GRACE_S", 0.0)
    text = editable_text(SUMMARY)
    app = HostApp(CompactionReviewScreen(text))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert app.results == [accept_answer()]  # unchanged: the model's own
    app = HostApp(CompactionReviewScreen(text))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press("delete", "delete", "delete", "ctrl+s")
        await pilot.pause()
    assert app.results == [accept_answer(text[3:])]
    app = HostApp(CompactionReviewScreen(text))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.click("#cancel")
        await pilot.pause()
    assert app.results == [CANCEL]


async def test_hostile_summary_and_memory_text_are_shown_inert(monkeypatch):
    from tests.hostile import CORPUS

    monkeypatch.setattr(question, "GRACE_S", 0.0)
    hostile = "\n".join(text for _name, text in CORPUS)
    review = CompactionReviewScreen(editable_text(replace(SUMMARY, goal=hostile)))
    app = HostApp(review)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        assert_inert(review.editor.text)
        assert "[@click=app.quit]ERR[/]" in review.editor.text  # shown, never run
    consent = parse_consent(consent_prompt("remember", hostile))
    app = HostApp(MemoryConsentScreen(consent))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        shown = [str(widget.render()) for widget in app.screen.query(Static)]
        for text in shown:
            assert_inert(text)
        assert any("[@click=app.quit]ERR[/]" in text for text in shown)
        assert app.is_running


def test_review_dialog_snapshot(snap_compare, monkeypatch):
    monkeypatch.setattr(question, "GRACE_S", 0.0)
    app = HostApp(CompactionReviewScreen(editable_text(SUMMARY)))
    assert snap_compare(app, terminal_size=(100, 36))


def test_consent_dialog_snapshot(snap_compare):
    consent = parse_consent(consent_prompt("remember", "The person prefers Python with type "
                                                       "hints and short answers."))
    assert snap_compare(HostApp(MemoryConsentScreen(consent)), terminal_size=(100, 30))
