"""A restart opens the conversation shown last, at its end, over real HTTP."""

from __future__ import annotations

from dataclasses import replace

from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from tests.selfref.helpers import turn
from tests.ui.helpers import SIZE, make_app, started, type_and_send, wait_until


def _seed(tmp_path, key: str, turns: int) -> None:
    with SelfReference(tmp_path / "data") as store:
        memory = store.open(key)
        for i in range(turns):
            memory.commit(turn(i, f"{key} question {i}"))


def _resuming(tmp_path, url):
    """The app as `selfref-tui` without --key starts it."""
    app = make_app(tmp_path, url)
    app.config = replace(app.config, resume=True)
    return app


async def test_a_restart_opens_the_conversation_shown_last_scrolled_to_its_end(tmp_path):
    _seed(tmp_path, "teatime", 40)
    async with DemoServer([]) as url:
        app = _resuming(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            assert app.key == "main"  # nothing shown before: the default
            await type_and_send(pilot, "/key teatime")
            await wait_until(pilot, lambda: app.key == "teatime"
                             and app.header.status == "ready", what="teatime open")
            await pilot.press("ctrl+q")
        again = _resuming(tmp_path, url)
        async with again.run_test(size=SIZE) as pilot:
            assert again.header.key == ""  # not "main" first: it would read as history lost
            await started(pilot, again)
            assert again.key == again.header.key == "teatime"
            transcript = again.transcript
            await wait_until(pilot, lambda: transcript.settled, what="history drawn")
            await pilot.pause()
            assert transcript.max_scroll_y > 0
            assert transcript.scroll_y == transcript.max_scroll_y  # at its end
            assert any("teatime question 39" in line for line in transcript.visible_text())
        # --key (no resume) still opens the key it names
        explicit = make_app(tmp_path, url)
        async with explicit.run_test(size=SIZE) as pilot:
            await started(pilot, explicit)
            assert explicit.key == "main"


async def test_a_renamed_conversation_is_the_one_opened_next(tmp_path):
    _seed(tmp_path, "main", 1)
    async with DemoServer([]) as url:
        app = _resuming(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await app._rename_key("main", "teatime")
            assert app.key == "teatime"
            await pilot.press("ctrl+q")
        again = _resuming(tmp_path, url)
        async with again.run_test(size=SIZE) as pilot:
            await started(pilot, again)
            assert again.key == "teatime"
            assert any("main question 0" in line for line in again.transcript.visible_text())


async def test_a_fifo_as_the_last_key_file_is_told_once_and_the_default_opens(tmp_path):
    """Opened with O_NONBLOCK after an lstat, a FIFO is refused, not waited on: the
    app starts on its default key and says why once (not at every key opened)."""
    import os

    from selfref_tui.selfref.last_used import STATE_NAME

    _seed(tmp_path, "teatime", 1)
    fifo = tmp_path / "data" / STATE_NAME
    os.mkfifo(fifo)
    async with DemoServer([]) as url:
        app = _resuming(tmp_path, url)
        said: list[str] = []  # every notification, kept past its timeout
        shown = app.notify
        app.notify = lambda message, **kw: (said.append(message), shown(message, **kw))[1]
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            assert app.key == "main"

            def told() -> list[str]:
                return [message for message in said if STATE_NAME in message]

            await wait_until(pilot, told, what="the file's problem told")
            assert told() == [f"{fifo} is a FIFO (named pipe), not a regular file: the "
                              "conversation shown last is not remembered (it is not followed, "
                              "opened or replaced) — remove it or move it out of the way"]
            await type_and_send(pilot, "/key teatime")
            await wait_until(pilot, lambda: app.key == "teatime"
                             and app.header.status == "ready", what="teatime open")
            assert len(told()) == 1
            await pilot.press("ctrl+q")
    assert os.path.exists(fifo) and not os.path.isfile(fifo)  # left as it was


async def test_a_tool_call_cut_short_by_a_crash_is_not_running_after_a_restart(tmp_path):
    """Killed while a tool ran (an overwrite question open, say), the log ends with the
    call and no result: reopened, its card says it ended with no result, as the model is
    told, and not "running" for ever."""
    from selfref_tui.context.builder import NO_RESULT_TEXT
    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation

    call = {"id": "c1", "type": "function",
            "function": {"name": "fd_to_file",
                         "arguments": '{"fd": "ref:fib", "file_path": "fib.py"}'}}
    with SelfReference(tmp_path / "data") as store:
        store.open("main").commit([
            UserMessageMutation({"role": "user", "content": "write the code to a file"}),
            AssistantMessageMutation(content="Writing it.", tool_calls=[call]),
        ])
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.transcript.items_of("tool"), what="the card")
            card = app.transcript.items_of("tool")[0]
            assert card.status == "cancelled", card.title
            assert card.result == NO_RESULT_TEXT
            assert "running" not in card.title
