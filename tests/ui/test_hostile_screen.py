"""The real app against a hostile model over real HTTP: nothing it sends drives the terminal.

The in-package server is scripted with the hostile corpus as answer text, a
ref, fenced code, reasoning, an experience, a tool name and arguments, a fork
task and a fork's answer, and a server error. After each step the whole
rendered screen (``export_screenshot``: every cell the terminal would get) is
checked for control characters, and clicks on hostile titles and
notifications must do nothing but what clicking them always does.
"""

from __future__ import annotations

from rich.cells import cell_len

from selfref_tui.demo.script import HttpError, Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from tests.hostile import CORPUS, assert_inert
from tests.ui.helpers import make_app, started, turn_done, type_and_send, wait_until

SIZE = (140, 60)
HOSTILE = "\n".join(text for _name, text in CORPUS)
ANSWER = (
    f"Look:\n\n{HOSTILE}\n\n<ref id=\"evil\">\n```python\nx = 1  # {CORPUS[0][1]}\n"
    f"{CORPUS[2][1]}\n```\n{HOSTILE}\n</ref>\n\n"
    "[CLICK-FILE](file:///etc/passwd) and [CLICK-ACTION](app.quit)\n\nend"
)
KEY = "sk-live-ABCDEFGHIJKLMNOP0123456789"
TOOL_NAME = "[@click=app.screenshot('shot.svg','.')]SHOT[/]"


def hostile_server() -> DemoServer:
    """The hostile model; a click on its tool's name would write ``shot.svg`` to the cwd."""
    server = DemoServer()
    tool_name = TOOL_NAME

    def script(body: dict, index: int):
        messages = body["messages"]
        last = messages[-1]
        text = last.get("content") or ""
        if last["role"] == "tool":
            called = [c["function"]["name"] for m in messages if m["role"] == "assistant"
                      for c in m.get("tool_calls") or []]
            if called and called[-1] == "fork_spawn":
                return Reply(tool_calls=[ToolCall("fork_gather_all", {})])
            if called and called[-1] == "fork_gather_all":
                return Reply(text="forks done")
            return Reply(text=ANSWER)
        if "CHILD-TASK" in text:
            return Reply(text=f"child answer {HOSTILE}")
        if text == "go":
            return Reply(reasoning=HOSTILE, tool_calls=[
                ToolCall("remember", {"text": f"exp {HOSTILE}"}),
                ToolCall(tool_name, {"payload": HOSTILE}),
            ])
        if text == "fork":
            return Reply(tool_calls=[ToolCall("fork_spawn", {
                "task": f"CHILD-TASK {CORPUS[1][1]} [@click=app.quit]Q[/]",
                "instruction": "one line"})])
        auth = server.headers[-1].get("authorization", "")  # a proxy echoing the header
        return HttpError(400, f"[@click=app.quit]ERR[/] \x1b]52;c;Zm9v\x07 echo {auth}")

    server.script = script
    return server


def screen_rows(app) -> list[str]:
    """Each row of the screen as the terminal gets it (read off Textual's compositor).

    By position on screen rather than by widget, so these tests hold whatever
    widgets draw the transcript.
    """
    return [strip.text for strip in app.screen._compositor.render_strips()]


def find_on_screen(app, needle: str) -> tuple[int, int] | None:
    """Screen cell (x, y) where ``needle`` starts in the transcript, or None."""
    region = app.transcript.region
    strips = app.screen._compositor.render_strips()
    for y in range(region.y, region.bottom):
        row = strips[y].crop(region.x, region.right).text
        index = row.find(needle)
        if index >= 0:
            return region.x + cell_len(row[:index]), y
    return None


async def scroll_to_text(pilot, app, needle: str) -> tuple[int, int]:
    """Page the transcript from the top until ``needle`` is on screen; where it is."""
    transcript = app.transcript
    transcript.scroll_home(animate=False, immediate=True)
    await pilot.pause()
    while (found := find_on_screen(app, needle)) is None:
        if transcript.scroll_y >= transcript.max_scroll_y:
            raise AssertionError(f"{needle!r} is nowhere in the transcript")
        transcript.scroll_page_down(animate=False)
        await pilot.pause()
    return found


def screen_is_inert(app) -> str:
    """Every cell of the screen as the terminal would get it, checked; returns the text."""
    svg = app.export_screenshot()
    assert_inert(svg)
    return svg


async def every_part_inert(pilot, app) -> None:
    """Open every tool call and summary and look at the transcript page by page, top to bottom."""
    transcript = app.transcript
    transcript.set_expanded(True)
    transcript.scroll_home(animate=False, immediate=True)
    await pilot.pause()
    while True:
        screen_is_inert(app)
        if transcript.scroll_y >= transcript.max_scroll_y:
            break
        transcript.scroll_page_down(animate=False)
        await pilot.pause()


async def test_hostile_model_reaches_no_widget_as_control_or_markup(tmp_path, monkeypatch):
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url))
    monkeypatch.chdir(tmp_path)
    server = hostile_server()
    async with server as url:
        app = make_app(tmp_path, url, api_key=KEY)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "go")
            await turn_done(pilot, app)
            await wait_until(pilot, lambda: app.sidebar.experience_list.experiences,
                             what="experience listed")
            screen_is_inert(app)

            # the tool's name is shown as the text it is; clicking it runs nothing
            x, y = await scroll_to_text(pilot, app, "SHOT")
            for dx in range(4):
                await pilot.click(offset=(x + dx, y))
                await pilot.pause()
            assert not (tmp_path / "shot.svg").exists()
            assert find_on_screen(app, "[@click=app.screenshot('shot.svg','.')]SHOT[/]")

            # links in an answer never run an action and open only web pages
            for word in ("CLICK-FILE", "CLICK-ACTION"):
                x, y = await scroll_to_text(pilot, app, word)
                await pilot.click(offset=(x + 2, y))
                await pilot.pause()
            assert opened == [] and app.is_running and app.return_value is None

            # a fork whose task and answer are hostile
            app.chat_input.focus()  # the clicks above took the focus
            await type_and_send(pilot, "fork")
            await turn_done(pilot, app, timeout=20)
            await wait_until(pilot, lambda: app.fork_panel.forks
                             and app.fork_panel.forks[0]["status"] in ("completed", "done"),
                             what="fork finished")
            await pilot.pause()
            if not app.fork_panel.display:  # it went when the forks and the turn were done
                await pilot.press("ctrl+t")
            assert app.fork_panel.display
            screen_is_inert(app)

            # a server error quoting markup, an escape and the request's Authorization header
            app.chat_input.focus()
            await type_and_send(pilot, "fail")
            await turn_done(pilot, app, status="error")
            rows = "\n".join(screen_rows(app))
            assert "[@click=app.quit]ERR[/]" in rows and "␛]52;c;" in rows and KEY not in rows
            # said once, in the transcript: no toast repeats the error
            notes = [n.message for n in app._notifications]
            assert not any("ERR" in n or KEY in n for n in notes)
            screen_is_inert(app)

            await every_part_inert(pilot, app)
            # /context: the next request, every message, as plain text
            await pilot.press(*"/context")
            await pilot.press("enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ContextView",
                             what="context view")
            await pilot.pause()
            text = screen_is_inert(app)
            assert "␛" in text  # the hostile text is there, made visible
    assert len(server.requests) >= 6  # every step went over real HTTP
