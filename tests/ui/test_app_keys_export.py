"""A person's keys, exports and read-only windows, in the whole app over real HTTP."""

from __future__ import annotations

from textual.widgets import Input, Static

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.app import SelfRefApp
from tests.selfref.helpers import turn
from tests.ui.helpers import (
    SIZE,
    TWO_REFS,
    idle,
    make_app,
    started,
    type_and_send,
    wait_until,
)


def _screen(app) -> str:
    return type(app.screen).__name__


async def test_a_failed_export_keeps_the_dialog_and_the_path_then_remembers_the_folder(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder is wanted")
    async with DemoServer([Reply(text=TWO_REFS)]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "fib")
            await wait_until(pilot, lambda: idle(app) and app.header.status == "ready")
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: _screen(app) == "ExportDialog", what="dialog")
            bad = str(blocker / "fib.py")
            app.screen.query_one(Input).value = bad
            await pilot.press("enter")
            await wait_until(
                pilot,
                lambda: _screen(app) == "ExportDialog"
                and str(app.screen.query_one("#error", Static).render()),
                what="the error in the dialog",
            )
            error = str(app.screen.query_one("#error", Static).render())
            assert str(blocker) in error and error.lower().count("could not write") <= 1
            assert app.screen.query_one(Input).value == bad  # what was typed is kept
            assert not [n for n in app._notifications if "Could not" in n.message]
            # A folder written with a trailing slash: created, the ref's name inside.
            app.screen.query_one(Input).value = str(tmp_path / "exports") + "/"
            await pilot.press("enter")
            target = tmp_path / "exports" / "fib_iterative.py"
            await wait_until(pilot, target.exists, what="export written")
            assert target.read_text().startswith("def fib(n):")
            # The next export starts in the folder used last.
            await pilot.press("ctrl+up", "ctrl+up", "ctrl+s")
            await wait_until(pilot, lambda: _screen(app) == "ExportDialog", what="dialog")
            started_at = app.screen.query_one(Input).value
            assert started_at == str(tmp_path / "exports" / "fib_recursive.py")


async def test_read_only_window_shows_a_key_another_process_writes(tmp_path):
    holder = SelfReference(tmp_path / "data")
    holder.open("main").commit(turn(1, "what is up"))
    try:
        async with DemoServer([Reply(text="never asked")]) as url:
            locked = make_app(tmp_path, url)
            async with locked.run_test(size=SIZE) as pilot:
                await wait_until(pilot, lambda: locked.key_error, what="lock error")
                assert "--read-only" in locked.key_error
                assert "open the key read-only" not in locked.key_error
            base = make_app(tmp_path, url)
            app = SelfRefApp(base.config, read_only=True)
            async with app.run_test(size=SIZE) as pilot:
                await started(pilot, app)
                assert "read-only" in str(app.header.render())
                assert [m.text for m in app.transcript.items_of("user")] == ["what is up"]
                await type_and_send(pilot, "hello")
                await pilot.pause()
                assert app.chat_input.text == "hello"  # refused, kept
                assert any("--read-only" in n.message for n in app._notifications)
                assert app.router is not None and not app.router.busy
                app.chat_input.clear()
                await type_and_send(pilot, "/remember x")
                await pilot.pause()
                assert holder.open("main").experiences == []
    finally:
        holder.close()
