"""Pins in the app: /pin and /unpin, Pin in the actions on a message, the mark on screen."""

from __future__ import annotations

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref import SelfReference
from selfref_tui.ui.transcript.model import PINNED_LINE
from tests.selfref.helpers import reading

from .helpers import (
    SIZE,
    fixed_clock,
    make_app,
    started,
    thread_server,
    turn_done,
    type_and_send,
    wait_until,
)


def stored_pins(tmp_path) -> frozenset[int]:
    with reading(tmp_path / "data") as memory:
        return memory.pins


def pinned_items(app) -> list[int]:
    return [item.number for item in app.transcript.model.items if item.pinned]


async def test_pin_and_unpin_by_number_mark_the_message(tmp_path):
    async with DemoServer([Reply(text="Noted.")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "Never book flights before 9 am.")
            await turn_done(pilot, app)
            await type_and_send(pilot, "/pin 1")
            await wait_until(pilot, lambda: pinned_items(app) == [1], what="the mark")
            assert app.agent.memory("main").pins == {1}
            assert app.transcript.items_of("user")[0].pinned
            await app.transcript.settle()
            await wait_until(pilot, lambda: PINNED_LINE in "\n".join(
                app.transcript.visible_text()), what="the mark drawn")
            await type_and_send(pilot, "/pin #1")  # already: said, nothing written
            await wait_until(pilot, lambda: any(n.message == "Message 1 is already pinned."
                                                for n in app._notifications), what="said")
            await type_and_send(pilot, "/unpin 1")
            await wait_until(pilot, lambda: pinned_items(app) == [], what="no mark")
            await type_and_send(pilot, "/unpin 2")  # never pinned: not "already unpinned"
            await wait_until(pilot, lambda: any(n.message == "Message 2 is not pinned."
                                                for n in app._notifications), what="said")
            await type_and_send(pilot, "/pin 9")  # no such message: refused, left to fix
            assert app.chat_input.text == "/pin 9"
            await pilot.press("backspace", *"soon", "enter")  # not a number: the same
            assert app.chat_input.text == "/pin soon"
    assert stored_pins(tmp_path) == frozenset()


async def test_pin_from_the_actions_on_a_highlighted_answer(tmp_path):
    async with DemoServer([Reply(text="Trains at 10, 12 and 14.")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "when are the trains?")
            await turn_done(pilot, app)
            await pilot.press("ctrl+up")  # the answer
            assert app.transcript.highlighted_item().number == 2
            await pilot.press("f8")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the actions")
            from textual.widgets import OptionList

            options = app.screen.query_one(OptionList)
            ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
            assert "pin" in ids and "unpin" not in ids
            options.highlighted = ids.index("pin")
            await pilot.press("enter")
            await wait_until(pilot, lambda: pinned_items(app) == [2], what="the answer pinned")
            # /unpin alone takes the highlighted message: the answer, still highlighted
            assert app.transcript.highlighted_item().number == 2
            await type_and_send(pilot, "/unpin")
            await wait_until(pilot, lambda: pinned_items(app) == [], what="unpinned")
    assert stored_pins(tmp_path) == frozenset()


async def test_pinned_messages_are_marked_when_the_conversation_opens(tmp_path):
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": "keep this"}),
                       AssistantMessageMutation("kept")])
        memory.set_pinned(1)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: pinned_items(app) == [1], what="the mark")


def test_pinned_message_snapshot(snap_compare, tmp_path):
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content":
                                            "Never book a flight before 9 am."}),
                       AssistantMessageMutation("Understood: trains or later flights only.")])
        memory.set_pinned(1)
        memory.set_pinned(2)
    with thread_server([]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await started(pilot, app)
            await wait_until(pilot, lambda: pinned_items(app) == [1, 2], what="the marks")
            app.action_toggle_sidebar()  # the token figure varies under load
            await pilot.pause()

        assert snap_compare(app, terminal_size=(100, 20), run_before=run_before)
