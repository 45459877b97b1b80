"""Clicking what the model or a server wrote does nothing but what clicking it always does.

Textual runs ``[@click=app.quit]`` in any text it parses as markup; a click
anywhere on a notification or a dialog quoting such text must neither quit
the app nor write a file. The events come through the runtime's own sink
(``app.emit``), exactly as the agent delivers them.
"""

from __future__ import annotations

from selfref_tui.agent import events as ev
from tests.hostile import assert_inert, hostile
from tests.ui.helpers import DOWN_URL, make_app, started, wait_until

SIZE = (100, 30)


async def click_the_text(pilot, widget, columns: int = 16) -> None:
    """Click each cell where the text starts: where markup would have put its action."""
    region = widget.content_region
    for x in range(min(columns, region.width)):
        await pilot.click(offset=(region.x + x, region.y))


async def test_clicking_a_hostile_notification_does_not_quit(tmp_path):
    app = make_app(tmp_path, DOWN_URL)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await started(pilot, app)
        app.emit(ev.Notice(key=app.key, message=hostile("click_markup")))
        await wait_until(pilot, lambda: app.screen.query("Toast"), what="a toast")
        await pilot.pause()
        assert_inert(app.export_screenshot())
        toast = app.screen.query("Toast").last()
        assert "[@click=app.quit]ERR[/]" in str(toast.render())  # shown, not parsed
        await click_the_text(pilot, toast)
        await pilot.pause()
        assert app.is_running and app.return_value is None
        app.clear_notifications()
        await pilot.pause()
        # A turn's error is said once, in the transcript (no toast): shown there, not run.
        app.emit(ev.ErrorEvent(key=app.key, message="[@click=app.quit]ERR[/] \x1b[2J",
                               kind="server"))
        await wait_until(pilot, lambda: app.transcript.items_of("error"), what="the error")
        await wait_until(pilot, lambda: app.transcript.settled, what="drawn")
        assert not app.screen.query("Toast")
        assert_inert(app.export_screenshot())
        assert any("[@click=app.quit]ERR[/]" in line for line in app.transcript.visible_text())
        assert app.is_running and app.return_value is None


async def test_clicking_a_hostile_question_does_nothing(tmp_path):
    app = make_app(tmp_path, DOWN_URL)
    shot = tmp_path / "shot.svg"
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await started(pilot, app)
        app.emit(ev.QuestionAsked(
            key=app.key, question_id="q1",
            prompt=f"[@click=app.screenshot('shot.svg','{tmp_path}')]OVERWRITE[/] \x1b]0;t\x07?",
            choices=("[@click=app.quit]yes[/]", "keep")))
        await wait_until(pilot, lambda: type(app.screen).__name__ == "QuestionScreen",
                         what="question")
        await pilot.pause()
        assert_inert(app.export_screenshot())
        prompt = app.screen.query_one("#prompt")
        assert "[@click=app.screenshot(" in str(prompt.render())
        await click_the_text(pilot, prompt)
        await pilot.pause()
        assert not shot.exists() and app.is_running and app.return_value is None
