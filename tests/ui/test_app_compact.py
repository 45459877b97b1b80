"""/compact in the whole app over real HTTP: once, shown as a divider, no made-up message.

The runtime asks the model itself (a note the transcript does not show): the
person's transcript and the store never hold a "please compact" message they
did not type. A regression once compacted again and again up to the step
limit; the demo model is the one a person tries it with, so it is used here.
"""

from __future__ import annotations

import asyncio

from selfref_tui.demo.script import Reply, Stall, ToolCall, demo_script
from selfref_tui.demo.server import DemoServer
from tests.selfref.helpers import stored_history
from tests.ui.helpers import (
    COMPACT_SUMMARY,
    SIZE,
    idle,
    make_app,
    started,
    turn_done,
    type_and_send,
    wait_until,
)


async def test_compact_with_the_demo_model_compacts_once_and_shows_a_divider(tmp_path):
    server = DemoServer(demo_script)
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app)
            asked, requests = len(app.router.outcomes), len(server.requests)
            await type_and_send(pilot, "/compact")
            await wait_until(
                pilot,
                lambda: len(app.router.outcomes) > asked and idle(app),
                what="the compaction turn",
            )
            assert app.router.outcomes[asked:] == ["done"]
            assert len(app.transcript.items_of("divider")) == 1
            calls = [t.tool_name for t in app.transcript.items_of("tool")]
            assert calls == ["compact"]
            # one request asked for the summary, one continued from it: no loop
            assert len(server.requests) - requests == 2
            users = [m.text for m in app.transcript.items_of("user")]
            assert users == ["hello"]  # nothing shown that the person did not type
            assert app.chat_input.text == ""
    history = stored_history(tmp_path / "data")
    assert sum(1 for m in history if m.get("compaction") is not None) == 1
    typed = [
        m["content"]
        for m in history
        if m["role"] == "user" and not m.get("runtime_note") and m.get("compaction") is None
    ]
    assert typed == ["hello"]


async def test_compact_during_a_final_answer_compacts_right_after_it(tmp_path):
    gate = asyncio.Event()
    script = [
        Stall(gate, text_before="A long", text_after=" answer."),
        Reply(tool_calls=[ToolCall("compact", COMPACT_SUMMARY, id="k")]),
        Reply(text="Compacted."),
    ]
    server = DemoServer(script)
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "write a lot")
            await wait_until(pilot, lambda: app.transcript.current is not None, what="stream")
            await type_and_send(pilot, "/compact")
            await wait_until(
                pilot,
                lambda: any("next step" in n.message for n in app._notifications),
                what="the request acknowledged",
            )
            gate.set()
            await wait_until(
                pilot, lambda: idle(app) and app.transcript.items_of("divider"), what="compaction"
            )
            await turn_done(pilot, app)
            assert app.router.outcomes == ["done", "done"]
            assert len(server.requests) == 3
            assert "person asked you to compact" in server.requests[1]["messages"][-1]["content"]
            assert [m.text for m in app.transcript.items_of("user")] == ["write a lot"]


async def test_compact_with_a_focus_passes_it_to_the_model(tmp_path):
    server = DemoServer(demo_script)
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app)
            asked, requests = len(app.router.outcomes), len(server.requests)
            await type_and_send(pilot, "/compact keep the API decisions")
            await wait_until(pilot, lambda: len(app.router.outcomes) > asked and idle(app),
                             what="the compaction turn")
            note = server.requests[requests]["messages"][-1]["content"]
            assert "The person asked you to compact" in note
            assert note.endswith("The person asked the summary to focus on: keep the API "
                                 "decisions")
            assert len(app.transcript.items_of("divider")) == 1
            assert [m.text for m in app.transcript.items_of("user")] == ["hello"]


async def test_a_model_that_does_not_compact_is_said_once(tmp_path):
    server = DemoServer([Reply(text="Hi."), Reply(text="I would rather not."),
                         Reply(text="Hello.")])
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app)
            asked = len(app.router.outcomes)
            await type_and_send(pilot, "/compact")
            await wait_until(pilot, lambda: len(app.router.outcomes) > asked and idle(app),
                             what="the compaction turn")
            await type_and_send(pilot, "and now?")
            await wait_until(pilot, lambda: len(app.router.outcomes) > asked + 1 and idle(app),
                             what="the next turn")
            said = [n.message for n in app._notifications if "without compacting" in n.message]
            assert said == ["the model answered without compacting (it did not call `compact`) "
                            "— /compact asks again"]
            assert len(server.requests) == 3 and not app.transcript.items_of("divider")
