"""The restore dialog after a rewind, for a file it cannot restore (its earlier content
too large to keep, or outside the allowed directories now): listed, not tickable, and
saying why (real HTTP, real files)."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import SelectionList

from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.checkpoints import MAX_KEPT_BYTES
from selfref_tui.ui.screens.question import GRACE_S, QuestionScreen

from .helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until

OVERWRITES = [Reply(text='<ref id="note">new text</ref>', tool_calls=[
    ToolCall("fd_to_file", {"fd": "ref:note", "file_path": "big.log"}, id="w1")]),
    Reply(text="Written.")]


async def overwrite(pilot, app) -> None:
    """Say yes to the model's overwrite and wait for the turn to end."""
    await wait_until(pilot, lambda: isinstance(app.screen, QuestionScreen),
                     what="the overwrite question")
    await pilot.pause(GRACE_S)  # the person reads the question first
    await pilot.press("left", "enter")
    await turn_done(pilot, app)


async def rewind_to_the_files(pilot, app) -> None:
    """Rewind past the write: the restore dialog lists its file."""
    await pilot.press(*"/rewind 1")
    await pilot.press("enter")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "RestoreFiles",
                     what="the files listed")


async def test_a_file_too_large_to_keep_is_listed_as_one_that_cannot_be_restored(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    big = work / "big.log"
    with open(big, "wb") as f:  # sparse: no disk, and never read
        f.truncate(MAX_KEPT_BYTES + 1)
    async with DemoServer(OVERWRITES) as url:
        app = make_app(tmp_path, url)
        app.config = replace(app.config, agent=replace(app.config.agent, allowed_roots=(work,)))
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "shorten the log")
            await overwrite(pilot, app)
            assert big.read_text() == "new text"
            await rewind_to_the_files(pilot, app)
            [(path, _what, why)] = app.screen.rows
            assert path == str(big)
            assert why.startswith("cannot be restored: it held 32 MiB before the model wrote "
                                  "it, more than the 32 MiB a checkpoint keeps")
            row = app.screen.query_one(SelectionList).get_option_at_index(0)
            assert row.disabled and "cannot be restored" in str(row.prompt)
            app.screen.query_one("#restore").press()
            await wait_until(pilot, lambda: type(app.screen).__name__ != "RestoreFiles",
                             what="the dialog closed")
    assert big.read_text() == "new text"  # nothing to put back, nothing changed


async def test_a_file_outside_the_allowed_directories_now_is_not_offered(tmp_path):
    """The model wrote ``sub/a.txt``; since, ``sub`` became a link out of the allowed
    folder. The file still holds what the model left, but restoring would refuse it:
    the dialog says so instead of offering a tick that comes back refused."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    (work / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    (work / "sub" / "a.txt").write_text("old text")
    writes = [Reply(text='<ref id="note">new text</ref>', tool_calls=[
        ToolCall("fd_to_file", {"fd": "ref:note", "file_path": "sub/a.txt"}, id="w1")]),
        Reply(text="Written.")]
    async with DemoServer(writes) as url:
        app = make_app(tmp_path, url)
        app.config = replace(app.config, agent=replace(app.config.agent, allowed_roots=(work,)))
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "rewrite the note")
            await overwrite(pilot, app)
            (work / "sub" / "a.txt").rename(elsewhere / "a.txt")
            (work / "sub").rmdir()
            (work / "sub").symlink_to(elsewhere)
            await rewind_to_the_files(pilot, app)
            [(path, _what, why)] = app.screen.rows
            assert path == str(work / "sub" / "a.txt")
            assert why.startswith(f"it is outside the allowed directories ({work}), so it "
                                  "cannot be restored from here"), why
            row = app.screen.query_one(SelectionList).get_option_at_index(0)
            assert row.disabled
            app.screen.query_one("#restore").press()
            await wait_until(pilot, lambda: type(app.screen).__name__ != "RestoreFiles",
                             what="the dialog closed")
    assert (elsewhere / "a.txt").read_text() == "new text"
