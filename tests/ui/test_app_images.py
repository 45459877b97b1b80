"""Images in the whole app over real HTTP: /attach, its chip, the block, a reload, the export."""

from __future__ import annotations

from textual.widgets import Input

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.transcript.image import ImageItem
from tests.hostile import assert_inert
from tests.ui.helpers import SIZE, idle, make_app, started, wait_until
from tests.ui.test_transcript_image import png


async def command(pilot, app, text: str) -> None:
    """Type ``text`` at the input's end at once (a long path key by key is slow), send it."""
    app.chat_input.move_cursor(app.chat_input.document.end)
    app.chat_input.insert(text)
    await pilot.press("enter")
    await pilot.pause()


def _said(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_attach_shows_a_chip_sends_the_image_and_shows_it_again_after_a_reload(tmp_path):
    picture = tmp_path / "red square.png"
    picture.write_bytes(png())
    server = DemoServer([Reply(text="A red square over blue.")])
    async with server as server_url:
        app = make_app(tmp_path, server_url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await command(pilot, app, f"/attach {picture}")
            chip = f"[image red square.png {len(png())} B #1]"
            assert app.chat_input.text.strip() == chip
            await pilot.press(*"what is it?", "enter")
            await wait_until(pilot, lambda: idle(app) and app.transcript.items_of("answer"),
                             what="the answer")
            assert app.chat_input.text == "" and app.chat_input.images == {}
            (request,) = server.requests
            parts = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
            assert parts[0] == {"type": "text", "text": "what is it?"}
            assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
            assert sorted(parts[1]) == ["image_url", "type"]  # the file name is not sent
            kinds = [item.kind for item in app.transcript.items]
            assert kinds == ["user", "image", "answer"]
            title = app.transcript.items_of("image")[0].title
            assert "red square.png" in title and "attached" in title and "40×20 px" in title
        # Reloading the key shows the image again, from the store.
        app = make_app(tmp_path, server_url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.transcript.items_of("image"), what="image")
            assert [item.kind for item in app.transcript.items] == ["user", "image", "answer"]
            (image,) = app.transcript.items_of("image")
            assert image.data == png() and image.error == ""
            assert image.name == "red square.png"  # named as it was live
            assert "red square.png" in image.title and "attached" in image.title


async def test_a_chip_taken_away_sends_no_image_and_refusals_keep_the_command(tmp_path):
    picture = tmp_path / "pic.png"
    picture.write_bytes(png())
    (tmp_path / "notes.png").write_text("not an image")
    server = DemoServer([Reply(text="Only text arrived.")])
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            for path, said in ((tmp_path / "missing.png", "No file at"),
                               (tmp_path, "is a folder"),
                               (tmp_path / "notes.png", "is not a PNG, JPEG, WebP or GIF")):
                await command(pilot, app, f"/attach {path}")
                assert any(said in m for m in _said(app)), _said(app)
                assert app.chat_input.text == f"/attach {path}"  # kept, to fix
                assert app.chat_input.images == {}
                app.chat_input.clear()
            await command(pilot, app, f"/attach {picture}")
            await command(pilot, app, f"/attach {picture}")  # two chips; the first stays
            assert app.chat_input.text.count("[image pic.png") == 2
            await pilot.press("backspace")  # the whole last chip goes
            assert app.chat_input.text.count("[image pic.png") == 1
            await pilot.press("backspace")
            assert "[image" not in app.chat_input.text and app.chat_input.attached == ()
            await pilot.press(*"hello", "enter")
            await wait_until(pilot, lambda: idle(app) and app.transcript.items_of("answer"),
                             what="the answer")
            sent = [m for m in server.requests[0]["messages"] if m["role"] == "user"][-1]
            assert sent["content"] == "hello"
            assert not app.transcript.items_of("image")


async def test_a_path_with_control_characters_is_shown_inert(tmp_path):
    name = "x\x1b]52;c;cm0gLXJm\x07\x1b[2J.png"
    (tmp_path / name).write_bytes(png())
    async with DemoServer([Reply(text="ok")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await command(pilot, app, f"/attach {tmp_path / name}")
            assert_inert(app.chat_input.text)
            assert app.chat_input.attached[0].data == png()
            await command(pilot, app, f"/attach {tmp_path / ('no' + name)}")
            assert_inert("\n".join(_said(app)))


async def test_the_export_key_writes_a_highlighted_images_bytes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    picture = tmp_path / "photo.png"
    picture.write_bytes(png())
    async with DemoServer([Reply(text="Nice.")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await command(pilot, app, f"/attach {picture}")
            await pilot.press("enter")
            await wait_until(pilot, lambda: idle(app) and app.transcript.items_of("answer"),
                             what="the answer")
            # The highlight moves over the image block like over refs and code blocks.
            await pilot.press("ctrl+up", "ctrl+up")
            assert isinstance(app.transcript.highlighted, ImageItem)
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ExportDialog",
                             what="dialog")
            field = app.screen.query_one(Input)
            assert field.value == str(tmp_path / "photo.png")  # its name, its type's extension
            field.value = str(tmp_path / "out") + "/"
            await pilot.press("enter")
            target = tmp_path / "out" / "photo.png"
            await wait_until(pilot, target.exists, what="export written")
            assert target.read_bytes() == png()
            # An existing file may be overwritten, never appended to (bytes).
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ExportDialog",
                             what="dialog")
            await pilot.press("enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "OverwritePrompt",
                             what="overwrite prompt")
            await pilot.press("a")
            await pilot.pause()
            assert type(app.screen).__name__ == "OverwritePrompt"
            await pilot.press("o")
            await wait_until(pilot, lambda: any("Wrote image to" in m for m in _said(app)),
                             what="written again")
            assert target.read_bytes() == png()


async def test_esc_puts_a_queued_message_back_with_its_image(tmp_path):
    import asyncio

    from selfref_tui.demo.script import Stall

    picture = tmp_path / "red square.png"
    picture.write_bytes(png())
    release = asyncio.Event()
    server = DemoServer([Stall(release, text_before="A long answer", text_after=" never sent")])
    async with server as server_url:
        app = make_app(tmp_path, server_url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press(*"write a lot", "enter")
            await wait_until(pilot, lambda: app.transcript.current is not None, what="stream")
            await command(pilot, app, f"/attach {picture}")
            await pilot.press(*"what is it?", "enter")
            await wait_until(pilot, lambda: app.router.queued == ["what is it?"], what="queued")
            assert app.transcript.items_of("image")  # shown under the queued message
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.chat_input.images, what="put back")
            (image,) = app.chat_input.attached
            assert image.name == "red square.png" and image.data == png()
            assert app.chat_input.text.startswith("what is it?")
            assert not app.transcript.items_of("image")  # its row left with the message
            assert len(server.requests) == 1
        release.set()
