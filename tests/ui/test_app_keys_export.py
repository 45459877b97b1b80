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
    type_and_send,
    wait_until,
    workers_done,
)


async def started(pilot, app) -> None:
    """Start-up, with room for a loaded machine (2 cores shared by several test runs)."""
    await wait_until(
        pilot, lambda: app.ready and app.header.status == "ready", timeout=60, what="app ready"
    )


def _listed(tmp_path) -> set[str]:
    """The keys `keys list` would show."""
    return {info.key for info in SelfReference(tmp_path / "data").keys(forks=False)}


def _screen(app) -> str:
    return type(app.screen).__name__


async def _highlight(pilot, switcher, row: str) -> None:
    """Move the switcher's highlight to ``row`` with the arrow keys, as a person does.

    Setting ``option_list.highlighted`` from the test raced the switcher: after a
    rename its emptied filter field refilters once more when its ``Changed``
    message arrives, and put the highlight back on the renamed key, which F8
    then tried to delete. Keys wait behind that message.
    """
    options = switcher.option_list
    for _ in range(2 * len(switcher.visible_keys)):
        here = options.highlighted or 0
        target = switcher.visible_keys.index(row)
        if here == target:
            break
        await pilot.press("down" if target > here else "up")
    await wait_until(pilot, lambda: switcher.option_list.highlighted_option is not None
                     and switcher.option_list.highlighted_option.id == row,
                     what=f"{row} highlighted")


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
            await pilot.press("escape")
            # Copying says what it did: a request to the terminal, which may ignore it.
            await pilot.press("ctrl+r")
            await pilot.pause()
            said = list(app._notifications)[-1]
            assert "terminal's clipboard" in said.message and "Copied" not in said.message


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


async def test_ctrl_n_asks_for_a_name_and_the_key_exists_before_its_first_message(tmp_path):
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("ctrl+n")
            await wait_until(pilot, lambda: _screen(app) == "NewKeyPrompt", what="name prompt")
            assert app.screen.query_one(Input).value == "chat-1"
            await pilot.press(*"project-x", "enter")
            await wait_until(pilot, lambda: app.key == "project-x" and app.header.status == "ready")
            await wait_until(
                pilot,
                lambda: "project-x" in _listed(tmp_path),
                what="the new key on disk",
            )
            # The switcher lists it (no message yet) and can rename the key on screen…
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: _screen(app) == "KeySwitcher", what="switcher")
            switcher = app.screen
            assert "key:project-x" in switcher.visible_keys
            await _highlight(pilot, switcher, "key:project-x")
            await pilot.press("f2", *["backspace"] * 9, *"renamed", "enter")
            await wait_until(pilot, lambda: app.key == "renamed", what="renamed and reopened")
            await wait_until(pilot, lambda: "key:renamed" in switcher.visible_keys)
            # …and delete another one, after a y: its folder goes to the trash.
            await _highlight(pilot, switcher, "key:main")
            await pilot.press("f8")
            await wait_until(pilot, lambda: _screen(app) == "ConfirmScreen", what="confirm")
            await pilot.press("y")
            try:
                await wait_until(pilot, lambda: "key:main" not in switcher.visible_keys,
                                 what="main deleted")
            except AssertionError as exc:
                said = switcher.query_one("#error").render()
                raise AssertionError(f"{exc}; the switcher says {str(said)!r}, "
                                     f"screen {_screen(app)}") from None
    assert _listed(tmp_path) == {"renamed"}
    assert len(list((tmp_path / "data" / "trash").iterdir())) == 2  # project-x's old folder, main


async def test_the_header_says_when_the_provider_is_unreachable(tmp_path):
    from tests.ui.helpers import DOWN_URL

    app = make_app(tmp_path, DOWN_URL)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        await wait_until(pilot, lambda: app.header.provider_note, what="the check's verdict")
        assert app.header.provider_note == "provider unreachable"
        assert "provider unreachable" in str(app.header.render())
    async with DemoServer([]) as url:
        fine = make_app(tmp_path, url)
        async with fine.run_test(size=SIZE) as pilot:
            await started(pilot, fine)
            # boot started the check before it opened the key ("ready"): it has run
            # once no check is left, whatever the usage workers are doing meanwhile.
            await workers_done(pilot, fine, "provider-check")
            assert fine.header.provider_note == ""


def _seed_history(tmp_path, turns: int) -> None:
    store = SelfReference(tmp_path / "data")
    try:
        memory = store.open("main")
        for i in range(turns):
            memory.commit(turn(i, f"question {i} " + "words " * 30))
    finally:
        store.close()


async def test_the_meter_counts_exactly_after_a_restart_without_a_turn(tmp_path):
    _seed_history(tmp_path, 3)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            # No message is sent: the exact count must still replace the estimate.
            await wait_until(pilot, lambda: app.agent.tokens.ready, timeout=30, what="encoder")
            _messages, exact = app.agent.preview("main")
            await wait_until(
                pilot, lambda: app.sidebar.meter.tokens == exact, what="the exact count"
            )


async def test_compact_while_scrolled_up_follows_to_the_bottom(tmp_path):
    _seed_history(tmp_path, 30)
    async with DemoServer([Reply(text="Compacted.")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            transcript = app.transcript
            await wait_until(pilot, lambda: transcript.max_scroll_y > 0, what="a long history")
            transcript.scroll_home(animate=False, immediate=True)
            transcript.anchor(False)
            await pilot.pause()
            assert transcript.scroll_y == 0
            await type_and_send(pilot, "/compact")
            await wait_until(pilot, lambda: idle(app) and app.header.status == "ready")
            await pilot.pause()
            assert transcript.scroll_y == transcript.max_scroll_y > 0


async def export_highlighted(pilot, app, path) -> str:
    """ctrl+s on the highlighted item: the dialog proposes ``path``; Enter writes it."""
    await pilot.press("ctrl+s")
    await wait_until(pilot, lambda: _screen(app) == "ExportDialog", what="dialog")
    assert app.screen.query_one(Input).value == str(path)
    await pilot.press("enter")
    await wait_until(pilot, path.exists, what=path.name)
    return path.read_text()


async def test_ctrl_s_writes_what_is_highlighted_a_code_block_or_an_answer(tmp_path, monkeypatch):
    """Highlighted with ctrl+up, written with ctrl+s: the code block itself (named by its
    language), or the answer — not the newest ref somewhere above it."""
    monkeypatch.chdir(tmp_path)
    answer = TWO_REFS + "\n\nRun it:\n\n```sh\npython fib.py\n```\n"
    async with DemoServer([Reply(text=answer)]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "fib")
            await wait_until(pilot, lambda: idle(app) and app.header.status == "ready",
                             what="turn end")
            await pilot.press("ctrl+up")  # the newest: the sh block
            assert app.transcript.highlighted.copy_text == "python fib.py"
            assert await export_highlighted(pilot, app, tmp_path / "code.sh") == "python fib.py\n"
            await pilot.press("ctrl+up", "ctrl+up", "ctrl+up")  # two refs, then the answer
            assert app.transcript.highlighted.kind == "answer"
            written = await export_highlighted(pilot, app, tmp_path / "answer.md")
            assert written == app.transcript.highlighted.copy_text


async def test_an_answer_holding_half_a_surrogate_pair_is_copied_with_its_escape(tmp_path):
    """The copy key on an answer holding half an emoji's pair (a server's JSON escape):
    the clipboard gets the half as its escape. UTF-8 has no bytes for it, and the OSC 52
    request's encoding stopped the app with a traceback."""
    async with DemoServer([Reply(text="cut \ud83d here")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "half")
            await wait_until(pilot, lambda: idle(app) and app.header.status == "ready")
            await pilot.press("ctrl+up", "ctrl+r")
            await wait_until(pilot, lambda: app.clipboard, what="the copy")
            assert app.clipboard == "cut \\ud83d here"
            assert app.is_running
