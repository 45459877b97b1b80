"""The fork panel in the whole app: over the transcript, never over the input; away when done.

The demo model spawns two forks and gathers them; its last answer is held here
(a Stall) so the panel can be looked at while every fork has finished and the
turn still runs. The panel once took 60 of 120 columns beside the chat, hid the
sidebar, left an 18-column input at 80×24, and stayed open after the forks.
"""

from __future__ import annotations

import asyncio
import json

from selfref_tui.demo.script import DEMO_TAG, Events, Reply, Stall, demo_script
from selfref_tui.demo.server import DemoServer
from tests.ui.helpers import (
    SIZE,
    fixed_clock,
    make_app,
    started,
    stored,
    turn_done,
    type_and_send,
    wait_until,
)


class HeldDemo:
    """The demo model, its answer after gathering the forks held until an event is set:
    one event per fork run, in order (:meth:`hold`); runs with none left are not held."""

    def __init__(self, *releases: asyncio.Event) -> None:
        self.waiting = list(releases)

    def hold(self, release: asyncio.Event) -> None:
        self.waiting.append(release)

    def __call__(self, body: dict, index: int):
        step = demo_script(body, index)
        if (self.waiting and isinstance(step, Reply)
                and step.text.startswith(f"{DEMO_TAG} The helpers are done")):
            return Stall(self.waiting.pop(0), text_before="Reading what the helpers said.",
                         text_after=" Both are done.")
        return step


async def _forks_finished(pilot, app) -> None:
    panel = app.fork_panel
    await wait_until(pilot, lambda: panel.all_finished and len(panel.forks) == 2, timeout=30,
                     what="two finished forks")
    await wait_until(pilot, lambda: "all finished · ctrl+t hides" in _title(panel),
                     what="the panel offering to go")


def _title(panel) -> str:
    return str(panel.query_one(".section-title").render())


async def _at(size, tmp_path) -> None:
    release = asyncio.Event()
    async with DemoServer(HeldDemo(release)) as url:
        # Esc Esc is a double press on the app's clock: one that stands still makes it
        # one however long a loaded machine takes between the two keys.
        app = make_app(tmp_path, url, clock=fixed_clock)
        async with app.run_test(size=size) as pilot:
            await started(pilot, app)
            sidebar_shown = app.sidebar.display
            await type_and_send(pilot, "fork two helpers")
            await _forks_finished(pilot, app)
            await pilot.pause()
            panel, box = app.fork_panel, app.chat_input
            assert panel.display and app.header.status != "ready"  # the turn still runs
            # The input keeps its whole width, nothing lies over it, and the sidebar stays.
            assert box.region.width >= 40
            assert box.region.width == app.query_one("#chat").region.width - 2  # its margin
            assert not panel.region.overlaps(box.region)
            assert panel.region.bottom <= box.region.y
            assert app.sidebar.display == sidebar_shown
            assert app.transcript.region.contains_region(panel.region)
            # The turn ends: the panel that opened by itself goes by itself.
            release.set()
            await turn_done(pilot, app, timeout=20)
            await wait_until(pilot, lambda: not panel.display, what="the panel closed")
            assert app.focused is box
            # Opened by hand, Esc puts it away (nothing runs to stop), and only a second
            # pair of Esc presses asks for a message to rewind to.
            await pilot.press("ctrl+t")
            assert panel.display
            await pilot.press("escape")
            assert not panel.display and app.focused is box
            assert app.key in app.forks_closed_in
            await pilot.press("escape")
            await pilot.pause()
            assert type(app.screen).__name__ != "ChoiceList"
            await pilot.press("escape")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the rewind list")


async def test_at_80_columns_the_fork_panel_leaves_the_input_whole_and_goes_when_done(tmp_path):
    await _at((80, 24), tmp_path)


async def test_at_120_columns_the_fork_panel_keeps_the_sidebar_and_the_input(tmp_path):
    await _at(SIZE, tmp_path)


async def test_a_panel_the_person_closed_stays_closed_in_that_conversation(tmp_path):
    release, second, later = asyncio.Event(), asyncio.Event(), asyncio.Event()
    script = HeldDemo(release, second)
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            panel = app.fork_panel
            await type_and_send(pilot, "fork two helpers")
            await wait_until(pilot, lambda: panel.display, what="the panel opened by itself")
            await pilot.press("ctrl+t")  # the person puts it away
            assert not panel.display
            release.set()
            await turn_done(pilot, app, timeout=30)

            await type_and_send(pilot, "fork two helpers again")
            await wait_until(pilot, lambda: len(panel.forks) == 4 and panel.all_finished,
                             timeout=30, what="two more forks")
            # Looked at while the turn still runs (held): a panel that opened by itself
            # would still be open, since it goes by itself only when the turn is over.
            await pilot.pause()
            assert app.header.status != "ready"
            assert not panel.display  # it did not open by itself this time
            second.set()
            await turn_done(pilot, app, timeout=30)
            assert not panel.display
            await pilot.press("ctrl+t")  # ctrl+t still opens it, and it stays
            assert panel.display
            await pilot.press("ctrl+t")

            # In another conversation it opens by itself again.
            await type_and_send(pilot, "/key other")
            await wait_until(pilot, lambda: app.key == "other" and app.ready
                             and app.header.status == "ready", what="the other conversation")
            script.hold(later)
            await type_and_send(pilot, "fork two helpers")
            await wait_until(pilot, lambda: panel.display, what="the panel opened by itself")
            later.set()
            await turn_done(pilot, app, timeout=30)
            await wait_until(pilot, lambda: not panel.display, what="and closed when done")


#: a child's answer that names a tool call and breaks off (not JSON) before the call ends
BREAKS_MID_CALL = Events((
    json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
                    {"index": 0, "id": "call_a", "type": "function",
                     "function": {"name": "read_fd", "arguments": '{"fd": '}}]}}]}),
    '{"choices": [ {"delta": ',
))


def _fork_a_breaks(body: dict, index: int):
    """The demo model, but fork A's answer breaks off while it calls a tool."""
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") == "user" and "Demo fork task A" in str(last.get("content")):
        return BREAKS_MID_CALL
    return demo_script(body, index)


async def test_a_tool_call_a_fork_never_ended_does_not_run_on_in_the_panel(tmp_path):
    """The fork's stream broke while it called a tool: the call never ran, and the fork
    ended with an error. Its line said "running" for good (the transcript's own cards
    are closed when a turn ends; the panel's were not)."""
    async with DemoServer(_fork_a_breaks) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "fork two helpers")
            await turn_done(pilot, app, timeout=30)
            panel = app.fork_panel
            forks = {fork["fork_id"]: fork for fork in panel.forks}
            assert forks["fork_1"]["status"] == "error"
            assert forks["fork_1"]["tools"] == [("read_fd", "cancelled")]
            assert forks["fork_2"]["status"] == "completed"
            # The person opens the panel and looks at that fork.
            await pilot.press("ctrl+t")
            await wait_until(pilot, lambda: panel.display, what="the panel")
            panel.table.focus()
            await pilot.press("home")
            await wait_until(pilot, lambda: panel.chosen == "fork_1", what="fork_1 chosen")

            def tools() -> list[str]:
                return [str(w.render()) for w in panel.transcript.query(".fork-tool")]

            await wait_until(pilot, lambda: tools() == ["⚙ read_fd  ⊘ cancelled"],
                             what="the call shown as ended with its fork")


class HeldForks:
    """The demo model, each fork's answer held (a Stall) until ``release`` is set, so
    the parent waits in ``fork_gather_all``; ``held`` lists the forks' stalls."""

    def __init__(self, release: asyncio.Event) -> None:
        self.release = release
        self.held: list[Stall] = []

    def __call__(self, body: dict, index: int):
        step = demo_script(body, index)
        if isinstance(step, Reply) and "(child agent)" in step.text:
            stall = Stall(self.release, text_before="Working on it", text_after=" done.")
            self.held.append(stall)
            return stall
        return step


async def test_esc_while_the_turn_waits_for_its_forks_puts_the_queued_message_back(tmp_path):
    release = asyncio.Event()
    script = HeldForks(release)
    server = DemoServer(script)
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "fork two helpers")
            await wait_until(pilot, lambda: len(script.held) == 2
                             and all(s.reached.is_set() for s in script.held), timeout=30,
                             what="both forks working")
            await type_and_send(pilot, "and a third one")
            await wait_until(pilot, lambda: app.router.queued == ["and a third one"],
                             what="queued")
            asked = len(server.requests)  # the parent's two steps and the two forks'
            await pilot.press("escape")
            await turn_done(pilot, app, status="stopped", timeout=20)
            await wait_until(pilot, lambda: app.chat_input.text, what="put back")
            assert app.chat_input.text == "and a third one"
            assert not app.transcript.queued_messages()
            assert len(server.requests) == asked  # no turn started with it
        release.set()
    assert not any("third" in str(m.get("content")) for m in stored(tmp_path))
