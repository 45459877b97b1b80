"""Notifications: plain text (Textual's own included), an error said once, never over the input.

ctrl+c once showed "Press [b]ctrl+q[/b] to quit the app" (Textual's markup, shown raw
where every notification is plain text); a failed turn said its error three times
(the message's marker, the error block and a toast); at 80 columns toasts lay over
the input for 5 s and hid what was typed.
"""

from __future__ import annotations

from selfref_tui.demo.script import HttpError
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.widgets.chat_input import chip_label
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until


def _toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_ctrl_c_says_how_to_quit_in_plain_text_above_the_input(tmp_path):
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await started(pilot, app)
            await pilot.press(*"half a thought")
            app.set_focus(None)  # ctrl+c with no text widget to copy from
            await pilot.press("ctrl+c")
            await wait_until(pilot, lambda: _toasts(app), what="the hint")
            assert _toasts(app) == ["Press ctrl+q to quit the app."]
            await wait_until(pilot, lambda: app.screen.query("Toast"), what="the toast shown")
            await pilot.pause()
            toast = app.screen.query_one("Toast")
            box = app.chat_input
            assert not toast.region.overlaps(box.region)
            assert toast.region.y < box.region.y
            assert box.text == "half a thought"


def _toast_cells(app, region) -> list[tuple[int, int]]:
    """The cells of ``region`` where a toast is what the screen shows."""
    from textual.widgets._toast import Toast, ToastHolder, ToastRack

    return [(x, y) for y in range(region.y, region.bottom) for x in range(region.x, region.right)
            if isinstance(app.screen.get_widget_at(x, y)[0], (Toast, ToastHolder, ToastRack))]


def _newest_in_sight(app) -> bool:
    toasts = app.screen.query("Toast")
    if not toasts:
        return False
    newest = toasts.last()
    seen = app.screen.region.intersection(newest.region)
    return "Notice 5" in str(newest.render()) and any(
        app.screen.get_widget_at(seen.x + 2, y)[0] is newest for y in range(seen.y, seen.bottom))


async def test_many_toasts_at_80_by_24_stay_clear_of_the_input_and_the_footer(tmp_path):
    """Six notices at once, then a message of many lines (the input at its tallest): the
    toasts, docked under the header, reached down over the input and the footer. The
    oldest make room for the newest, which is always in sight."""
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await started(pilot, app)
            footer = app.screen.query_one("AppFooter")
            for i in range(6):
                app.notify(f"Notice {i}: something happened, and this is what to do next.",
                           timeout=60)
            for grown in (False, True):
                if grown:
                    app.chat_input.insert("\n".join(f"line {i}" for i in range(20)))
                    await wait_until(pilot, lambda: app.chat_input.region.height >= 10,
                                     what="the input grown")
                await wait_until(pilot, lambda: _newest_in_sight(app) and not any(
                    _toast_cells(app, box.region) for box in (app.chat_input, footer)),
                    what="the newest toast in sight, none over the input or the footer")
                await pilot.pause()
                for covered in (app.chat_input, footer):
                    assert _toast_cells(app, covered.region) == [], (grown, covered)
            assert len(app.screen.query("Toast")) < 6  # the oldest made room
            assert _toast_cells(app, app.screen.region)  # and some are shown


async def test_a_failed_turn_says_its_error_once_in_the_transcript(tmp_path):
    async with DemoServer([HttpError(500, "the server fell over")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "are you there?")
            await turn_done(pilot, app, status="error")
            await app.transcript.settle()
            shown = " ".join(line.strip(" ▌") for line in app.transcript.visible_text())
            assert shown.count("the server fell over") == 1, shown
            assert "failed — not sent again; /retry (F5) sends it" in shown
            assert not [t for t in _toasts(app) if "fell over" in t]


def test_a_paste_of_30_lines_is_30_lines():
    assert chip_label("line\n" * 30, 1) == "[pasted 30 lines #1]"
    assert chip_label("line\n" * 29 + "last", 1) == "[pasted 30 lines #1]"
    assert chip_label("one line", 2) == "[pasted 8 characters #2]"


WAITING = ("waiting for the MCP server time to start, so its tools go with this message "
           "(Esc stops)")


async def test_notices_raised_behind_a_dialog_wait_and_show_when_it_closes(tmp_path):
    """The tool-approval dialog at 80x24, and notices raised meanwhile (an MCP server still
    starting): they sat over the dialog's corner, and a second reached its buttons. Now
    nothing covers the dialog; the notices show on the chat screen once it closes."""
    from selfref_tui.agent.mcp.approval import DENY, approval_prompt, parse_approval
    from selfref_tui.ui.screens.approval import ApprovalScreen

    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await started(pilot, app)
            app.notify("said before the dialog", timeout=60)
            await wait_until(pilot, lambda: app.screen.query("Toast"), what="the first toast")
            answers: list[str] = []
            approval = parse_approval(approval_prompt("time", "get_current_time",
                                                      {"timezone": "Europe/Paris"}))
            app.push_screen(ApprovalScreen(approval), answers.append)
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen)
                             and app.screen.query("Button"), what="the dialog")
            dialog = app.screen.query_one("#dialog")
            app.notify(WAITING, timeout=60)
            app.notify("the context window is 8192 tokens", timeout=60)
            await wait_until(pilot, lambda: len(_toasts(app)) == 3, what="the notices taken")
            await pilot.pause()
            await pilot.pause()
            assert not app.screen.query("Toast")
            assert _toast_cells(app, dialog.region) == []
            await pilot.press("escape")
            await wait_until(pilot, lambda: answers == [DENY], what="the dialog closed")
            await wait_until(pilot, lambda: len(app.screen.query("Toast")) == 3,
                             what="the notices shown on the chat screen")
            shown = " ".join(str(toast.render()) for toast in app.screen.query("Toast"))
            assert "waiting for the MCP server time" in shown and "8192" in shown
            await wait_until(pilot, lambda: not _toast_cells(app, app.chat_input.region),
                             what="clear of the input")


def test_a_notice_that_arrives_with_no_screen_left_is_not_raised(tmp_path):
    """A notice handled as the app closes (its screens gone: a save said just before
    ctrl+q) is left to Textual's own handler, not held for a dialog; reading the screen
    on top raised, and the quit ended in a traceback."""
    from textual.notifications import Notification, Notify

    app = make_app(tmp_path, "http://127.0.0.1:9/v1")  # never run: no screen on its stack
    event = Notify(Notification("Instructions saved for this conversation."))
    app._on_notify(event)
    assert not event._no_default_action and app._held == ()
    app._refresh_notifications()  # (the closing app's refresh: nothing to draw on)
