"""A tool that asks the person: the model wants to overwrite a file that exists."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.screens.question import GRACE_S, QuestionScreen

from .helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until


def overwriting_model(body: dict, index: int) -> Reply:
    last = (body.get("messages") or [])[-1]
    if last.get("role") == "tool":
        return Reply(text="Done with the file.")
    return Reply(
        text='Here it is:\n<ref id="note">new text</ref>\n',
        tool_calls=[ToolCall("fd_to_file", {"fd": "ref:note", "file_path": "notes.txt"})],
    )


@asynccontextmanager
async def asked_to_overwrite(tmp_path: Path, target: Path) -> AsyncIterator[tuple]:
    """The app with the model asking to overwrite ``target``, its question on screen."""
    target.parent.mkdir()
    target.write_text("old text")
    async with DemoServer(overwriting_model) as url:
        app = make_app(tmp_path, url)
        app.config = replace(
            app.config, agent=replace(app.config.agent, allowed_roots=(target.parent,))
        )
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "save the note")
            await wait_until(
                pilot, lambda: isinstance(app.screen, QuestionScreen), what="the question"
            )
            yield app, pilot


@pytest.mark.parametrize(
    ("keys", "expected", "status"),
    [(("left", "enter"), "new text", "done"), (("escape",), "old text", "error"),
     (("k",), "old text", "error")],
)
async def test_overwrite_question_is_asked_and_its_answer_decides(
    tmp_path, keys, expected, status
):
    target = tmp_path / "work" / "notes.txt"
    async with asked_to_overwrite(tmp_path, target) as (app, pilot):
        question = app.screen
        assert isinstance(question, QuestionScreen)
        assert "notes.txt" in question.prompt
        assert question.choices == ("overwrite", "keep")
        assert target.read_text() == "old text"  # nothing written while it waits
        await pilot.pause(GRACE_S)  # the person reads the question first
        await pilot.press(*keys)
        await turn_done(pilot, app)
        assert target.read_text() == expected
        card = next(c for c in app.transcript.items_of("tool") if c.tool_name == "fd_to_file")
        assert card.status == status


async def test_typing_into_the_chat_never_approves_a_question(tmp_path):
    """The dialog opens while the person types: no letter of theirs may say yes."""
    target = tmp_path / "work" / "notes.txt"
    async with asked_to_overwrite(tmp_path, target) as (app, pilot):
        # "overwrite" and "append" start with letters a sentence is full of;
        # typed at once and after the grace period alike. At most the safe
        # choice is taken (space and Enter press the focused "keep").
        await pilot.press(*"oh", "o", "a")
        await pilot.pause(GRACE_S)
        await pilot.press(*"oops a typo", "o", "a", "enter")
        await turn_done(pilot, app)
        assert target.read_text() == "old text"
        card = next(c for c in app.transcript.items_of("tool") if c.tool_name == "fd_to_file")
        assert card.status == "error"


async def test_the_sidebar_speed_leaves_out_the_time_a_question_waits_for_the_person(tmp_path):
    """"last answer · 4 tok/s · 12.9s" after a reviewed compaction: the 12 s were the
    person's, reading the dialog. The meter's clock stops while a question of the turn
    is open; only the model's time (here 3 s, its second call) is counted."""
    from .helpers import FakeClock

    clock = FakeClock()

    def model(body: dict, index: int) -> Reply:
        if (body.get("messages") or [])[-1].get("role") == "tool":
            clock.now += 3  # the model's time, after the person answered
        return overwriting_model(body, index)

    target = tmp_path / "work" / "notes.txt"
    target.parent.mkdir()
    target.write_text("old text")
    async with DemoServer(model) as url:
        app = make_app(tmp_path, url, clock=clock)
        app.config = replace(
            app.config, agent=replace(app.config.agent, allowed_roots=(target.parent,))
        )
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            meter = app.sidebar.meter
            await type_and_send(pilot, "save the note")
            await wait_until(
                pilot, lambda: isinstance(app.screen, QuestionScreen), what="the question"
            )
            clock.now += 100  # the person reads the question
            assert meter.streaming and meter.elapsed == 0
            await pilot.pause(GRACE_S)
            await pilot.press("left", "enter")
            await turn_done(pilot, app)
            assert target.read_text() == "new text"
            assert not meter.streaming and meter.elapsed == 3
            assert meter.render().plain.endswith(" · 3.0s")
