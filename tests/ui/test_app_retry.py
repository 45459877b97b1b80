"""A failed message is marked in the transcript and /retry (or F5) sends it once more."""

from __future__ import annotations

from selfref_tui.demo.script import HttpError, Reply
from selfref_tui.demo.server import DemoServer
from tests.hostile import assert_inert
from tests.ui.helpers import make_app, started, stored, turn_done, type_and_send, wait_until

SIZE = (100, 30)


async def test_failed_message_is_marked_and_retried_without_a_copy(tmp_path):
    # markup and escapes in a server's words stay text (a click must not quit the app)
    script = [HttpError(500, "the model crashed [@click=app.quit]ERR[/] \x1b]52;c;eA==\x07"),
              Reply(text="Back again."), Reply(text="Asked once more.")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "are you there")
            await turn_done(pilot, app, status="error")
            (message,) = app.transcript.model.of_kind("user")
            await wait_until(pilot, lambda: message.failed, what="marked failed")
            assert "the model crashed" in message.failed
            await app.transcript.settle()
            await pilot.pause()
            shown = "\n".join(app.transcript.visible_text())
            assert "failed — not sent again" in shown and "[@click=app.quit]ERR[/]" in shown
            assert_inert(app.export_screenshot())
            await pilot.press(*"/retry")
            await pilot.press("enter")
            await turn_done(pilot, app)
            assert [m.text for m in app.transcript.model.of_kind("user")] == ["are you there"]
            assert not message.failed
            # nothing failed now: F5 asks again for the last answer (kept, rewound)
            await pilot.press("f5")
            await wait_until(pilot, lambda: len(app.agent.memory("main").entries()) == 4,
                             what="the message sent again")
            await turn_done(pilot, app)
    working = stored(tmp_path)
    users = [m for m in working if m["role"] == "user"]
    assert [(m["content"], m.get("failed")) for m in users] == [("are you there", None)]
    assert working[-1]["content"] == "Asked once more."


async def test_f5_answers_a_message_a_crash_left_unanswered_without_a_copy(tmp_path):
    """Killed (kill -9) before the answer was stored, the conversation ends with the
    person's message and nothing under it. F5 sent it again (the lone one kept, rewound:
    two copies in the history); it is answered as it stands now, as /retry does."""
    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
    from selfref_tui.selfref.reference import SelfReference

    with SelfReference(tmp_path / "data") as store:
        store.open("main").commit([
            UserMessageMutation({"role": "user", "content": "hi"}),
            AssistantMessageMutation(content="Hello."),
            UserMessageMutation({"role": "user", "content": "write something long"}),
        ])
    async with DemoServer([Reply(text="The long answer, at last.")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("f5")
            await wait_until(pilot, lambda: len(app.agent.memory("main").entries()) >= 4,
                             what="an answer stored")
            await turn_done(pilot, app)
    with SelfReference(tmp_path / "data") as store:
        history = store.open("main", write=False).history
    assert [(m["role"], m["content"], bool(m.get("rewound"))) for m in history
            if m["role"] != "system"] == [
        ("user", "hi", False), ("assistant", "Hello.", False),
        ("user", "write something long", False),
        ("assistant", "The long answer, at last.", False)]
